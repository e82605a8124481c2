/**
 * The benchmark suite and its report: {@link io.github.llmratelimiter.benchmarks.report.SuiteRunner}
 * runs {@link io.github.llmratelimiter.benchmarks.report.Suite} through JMH and writes {@code
 * docs/benchmarks.md} with {@link io.github.llmratelimiter.benchmarks.report.MarkdownReport}.
 */
@NullMarked
package io.github.llmratelimiter.benchmarks.report;

import org.jspecify.annotations.NullMarked;

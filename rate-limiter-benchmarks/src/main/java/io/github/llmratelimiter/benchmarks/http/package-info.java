/**
 * The HTTP run: the sample gateway's executable jar in a JVM of its own, with the limiter off and
 * on, under a closed-loop Java client ({@link io.github.llmratelimiter.benchmarks.http.HttpRun}).
 */
@NullMarked
package io.github.llmratelimiter.benchmarks.http;

import org.jspecify.annotations.NullMarked;

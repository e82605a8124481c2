/**
 * The HTTP runs: the sample gateway and the reactive benchmark gateway, each in JVMs of their own
 * with the limiter off and on, under a closed-loop Java client ({@link
 * io.github.llmratelimiter.benchmarks.http.HttpRun}).
 */
@NullMarked
package io.github.llmratelimiter.benchmarks.http;

import org.jspecify.annotations.NullMarked;

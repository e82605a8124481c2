/**
 * JMH benchmarks of the limiter and of its peers, measured in the same run.
 *
 * <p>{@code inprocess} holds the in-process benchmarks (the limiter, Bucket4j, Resilience4j,
 * Guava and a naive baseline); {@code report} runs the suite and writes {@code docs/benchmarks.md}.
 * Redis benchmarks will live in a {@code redis} package beside {@code inprocess} once the Redis
 * store exists; the suite lists them in {@code report.Suite}.
 */
@NullMarked
package io.github.llmratelimiter.benchmarks;

import org.jspecify.annotations.NullMarked;

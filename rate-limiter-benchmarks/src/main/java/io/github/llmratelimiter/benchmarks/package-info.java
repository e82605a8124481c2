/**
 * JMH benchmarks of the limiter and of its peers, measured in the same run.
 *
 * <p>{@code inprocess} holds the in-process benchmarks (the limiter, Bucket4j, Resilience4j,
 * Guava and a naive baseline); {@code redis} the benchmarks on a {@code redis-server} of their own
 * (raw {@code EVALSHA}, the Redis store, Bucket4j-Lettuce, a pipelined run); {@code http} the
 * sample gateway with the limiter on and off; {@code load} the closed-loop load generator of the
 * runs outside JMH; {@code memory} the heap retained per tracked key; {@code report} runs the
 * suite and writes {@code docs/benchmarks.md}.
 */
@NullMarked
package io.github.llmratelimiter.benchmarks;

import org.jspecify.annotations.NullMarked;

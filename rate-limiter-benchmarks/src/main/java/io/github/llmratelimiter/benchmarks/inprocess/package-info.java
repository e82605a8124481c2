/**
 * In-process benchmarks: the limiter's {@code GatewayLimiter} and {@code HierarchicalLimiter}
 * beside Bucket4j, Resilience4j, Guava and a naive baseline.
 *
 * <p>Every benchmark method is named after its case ({@code allowed} or {@code denied}, then
 * {@code OneKey}, {@code OwnKey} or {@code TenThousandKeys}) and checks its own result: an allowed
 * case that is denied, or a denied case that is allowed, throws and fails the run.
 */
@NullMarked
package io.github.llmratelimiter.benchmarks.inprocess;

import org.jspecify.annotations.NullMarked;

/**
 * The composed rate limiter of an LLM gateway: a sliding-window log (requests per window), a token
 * bucket (bursts), model tokens per window, slots for calls in flight, their composition under one
 * per-key lock, hierarchies of budgets, and variants of a budget (a tenant's plan) over its state.
 *
 * <p>Every type here is free of Spring and of any dependency outside the JDK. Time is read from a
 * {@link io.github.llmratelimiter.core.Ticker}, so tests drive it exactly.
 */
@NullMarked
package io.github.llmratelimiter.core;

import org.jspecify.annotations.NullMarked;

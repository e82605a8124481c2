/**
 * The Spring AI front door of the rate limiter: a {@code ChatClient} advisor ({@link
 * io.github.llmratelimiter.springai.RateLimitAdvisor}) that charges each call and stream through the
 * gateway's enforcer (its policies, store, quotas and observers) before the model is called, and
 * settles it with the usage the model reports; and the {@link
 * io.github.llmratelimiter.springai.ChatClientKeyResolver} that finds who pays. It depends on
 * {@code rate-limiter-gateway} and Spring AI's {@code spring-ai-client-chat}, not on Spring Boot.
 */
@NullMarked
package io.github.llmratelimiter.springai;

import org.jspecify.annotations.NullMarked;

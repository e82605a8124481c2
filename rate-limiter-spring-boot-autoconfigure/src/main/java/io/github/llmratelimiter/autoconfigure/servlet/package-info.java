/**
 * The servlet adapter of the gateway (Spring MVC): the route interceptor, key resolution from the
 * request, the body and usage filters, and the RFC 9457 problem responses (429, 401, 400, 413, 503).
 * A request's state lives in one {@link io.github.llmratelimiter.gateway.RateLimitContext}, kept in
 * one request attribute.
 */
@NullMarked
package io.github.llmratelimiter.autoconfigure.servlet;

import org.jspecify.annotations.NullMarked;

/**
 * Spring MVC concern: the route interceptor, key resolution from the request, rate-limit headers
 * and the RFC 9457 problem responses (429, 401, 400, 413, 503).
 */
@NullMarked
package io.github.llmratelimiter.autoconfigure.web;

import org.jspecify.annotations.NullMarked;

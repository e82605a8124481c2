/**
 * The Redis store in a Spring Boot application ({@code ratelimiter.store=redis}): the store built
 * from the application's {@code spring.data.redis.*} connection, its health indicator and its
 * metrics.
 */
@NullMarked
package io.github.llmratelimiter.autoconfigure.redis;

import org.jspecify.annotations.NullMarked;

/**
 * The in-memory store in a Spring Boot application ({@code ratelimiter.store=memory}, the default):
 * its health indicator.
 */
@NullMarked
package io.github.llmratelimiter.autoconfigure.memory;

import org.jspecify.annotations.NullMarked;

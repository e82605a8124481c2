/** The AspectJ aspect that enforces {@code @RateLimited} on Spring bean methods. */
@NullMarked
package io.github.llmratelimiter.autoconfigure.aspect;

import org.jspecify.annotations.NullMarked;

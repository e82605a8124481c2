/** The Actuator endpoint {@code ratelimiter}: configuration and live state, keys masked. */
@NullMarked
package io.github.llmratelimiter.autoconfigure.endpoint;

import org.jspecify.annotations.NullMarked;

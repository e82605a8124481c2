/** Micrometer metrics of the limiter's decisions; no tag carries a key or other per-tenant value. */
@NullMarked
package io.github.llmratelimiter.autoconfigure.metrics;

import org.jspecify.annotations.NullMarked;

/**
 * Spring Boot auto-configuration of the LLM gateway rate limiter: properties under {@code
 * ratelimiter}, resolved policies, the store and the enforcer that the web, aspect, endpoint and
 * metrics concerns share.
 */
@NullMarked
package io.github.llmratelimiter.autoconfigure;

import org.jspecify.annotations.NullMarked;

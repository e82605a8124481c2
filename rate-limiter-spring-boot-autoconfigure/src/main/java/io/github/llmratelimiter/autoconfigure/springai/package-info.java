/**
 * The auto-configuration of the Spring AI advisor: the {@code RateLimitAdvisor} and {@code
 * ChatClientKeyResolver} beans when Spring AI's {@code ChatClient} is on the class path, and their
 * {@code ratelimiter.spring-ai.*} settings.
 */
@NullMarked
package io.github.llmratelimiter.autoconfigure.springai;

import org.jspecify.annotations.NullMarked;

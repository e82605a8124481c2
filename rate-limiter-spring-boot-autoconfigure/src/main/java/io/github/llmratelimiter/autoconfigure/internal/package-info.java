/**
 * The plumbing the auto-configuration's adapters share across their packages: compiled routes, the
 * request support of the servlet and reactive stacks, the reactive stages of a charge, and which
 * handlers carry {@code @RateLimited}. Public only so that the adapters reach it; it is not API and
 * may change in any release.
 */
@NullMarked
package io.github.llmratelimiter.autoconfigure.internal;

import org.jspecify.annotations.NullMarked;

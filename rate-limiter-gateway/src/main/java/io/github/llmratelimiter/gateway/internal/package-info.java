/**
 * The gateway's plumbing that the Spring Boot adapters share: header and body fields, the usage
 * scanner of a response, key ids and masking. Public only so that the adapters in other packages
 * reach it; it is not API and may change in any release.
 */
@NullMarked
package io.github.llmratelimiter.gateway.internal;

import org.jspecify.annotations.NullMarked;

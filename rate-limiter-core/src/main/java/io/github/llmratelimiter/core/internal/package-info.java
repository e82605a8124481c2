/**
 * Helpers that the library's own modules share. Not API: any type here may change or disappear in
 * any release, and applications must not use them.
 */
@NullMarked
package io.github.llmratelimiter.core.internal;

import org.jspecify.annotations.NullMarked;

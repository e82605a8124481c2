/**
 * The servlet front door on Tomcat: the guard that keeps an asynchronous request's processor on its
 * connection when Tomcat handles an async timeout raised for an earlier request.
 */
@NullMarked
package io.github.llmratelimiter.autoconfigure.tomcat;

import org.jspecify.annotations.NullMarked;

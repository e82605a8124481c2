/**
 * The operator's console: a static page ({@code /ratelimiter/console}) served on the management
 * server beside the Actuator endpoint {@code ratelimiter}, off unless {@code
 * ratelimiter.console.enabled=true}. The page reads only what that endpoint and the metrics endpoint
 * expose; the server only hands it their paths and which write operations the endpoint grants.
 */
@NullMarked
package io.github.llmratelimiter.autoconfigure.console;

import org.jspecify.annotations.NullMarked;

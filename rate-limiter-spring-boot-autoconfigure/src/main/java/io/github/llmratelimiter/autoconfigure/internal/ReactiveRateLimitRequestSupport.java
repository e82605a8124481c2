package io.github.llmratelimiter.autoconfigure.internal;

import io.github.llmratelimiter.gateway.RateLimited;
import org.jspecify.annotations.Nullable;
import reactor.util.context.ContextView;

/**
 * Finds the HTTP request a reactive call serves in the context of the subscriber of its {@code Mono}
 * or {@code Flux}: what the {@link RateLimited} aspect charges when a method returns one, on
 * subscription. Provided by the reactive (WebFlux) auto-configuration, whose filter puts the
 * request's exchange in that context; absent in other applications.
 */
public interface ReactiveRateLimitRequestSupport {

  /**
   * Returns the request support bound to the request of a subscriber's context: its {@code
   * current...} methods answer for that request, on whichever thread they are called.
   *
   * @param context the subscriber's context
   * @return the support, or {@code null} when the context carries no request (the call is outside
   *     HTTP)
   */
  @Nullable RateLimitRequestSupport of(ContextView context);
}

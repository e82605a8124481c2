package io.github.llmratelimiter.autoconfigure.servlet;

import io.github.llmratelimiter.gateway.RateLimitEnforcer;
import io.github.llmratelimiter.gateway.RateLimitExceededException;
import io.github.llmratelimiter.gateway.RateLimitOutcome;
import io.github.llmratelimiter.gateway.RateLimitStoreUnavailableException;
import io.github.llmratelimiter.gateway.UpstreamWaits;
import jakarta.servlet.AsyncContext;
import jakarta.servlet.AsyncEvent;
import jakarta.servlet.AsyncListener;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jspecify.annotations.Nullable;

/**
 * Lets a routed call that waits for its upstream hold no request thread: the request goes into the
 * servlet's asynchronous mode while the charge's stage is pending, and is dispatched again through
 * the {@code DispatcherServlet} once the stage completes, where {@link #resumed} hands the
 * interceptor its outcome. An error the container reports on the asynchronous request (a client
 * gone, when the container sees it) cancels the stage at once: the call leaves the room. The
 * asynchronous timeout (the policy's longest wait and {@link #MARGIN}) is reached only when the
 * store never answers: the stage is cancelled and the call answered as the store's failure ({@link
 * RateLimitStoreUnavailableException}, 503 or the policy's store-failure rule); a call whose longest
 * wait passes is answered by the room first, with its upstream's deny.
 */
final class AsyncUpstreamWait {

  /** The request attribute that holds a waited call's result until its dispatch reads it. */
  static final String ATTRIBUTE = AsyncUpstreamWait.class.getName();

  /** What the asynchronous timeout adds to a policy's longest wait: the store's grace and more. */
  static final Duration MARGIN = Duration.ofSeconds(2);

  private final RateLimitEnforcer enforcer;
  private final Map<String, Duration> longest = new ConcurrentHashMap<>();

  AsyncUpstreamWait(RateLimitEnforcer enforcer) {
    this.enforcer = enforcer;
  }

  /**
   * Returns the longest any call of a policy may wait for its upstream, under any plan.
   *
   * @param policy the policy's name, or {@code null} or blank for the default policy
   * @return the longest wait; zero when no call of the policy waits
   */
  Duration longestWait(@Nullable String policy) {
    if (enforcer.waitingRoom() == null) {
      return Duration.ZERO;
    }
    String name = policy == null || policy.isBlank() ? enforcer.policies().defaultPolicy() : policy;
    return longest.computeIfAbsent(name, n -> {
      UpstreamWaits waits = enforcer.upstreamWaits();
      Duration max = waits.maxWaits().getOrDefault(n, waits.defaultMaxWait());
      for (Map<String, Duration> plan : waits.planMaxWaits().values()) {
        Duration wait = plan.get(n);
        if (wait != null && wait.compareTo(max) > 0) {
          max = wait;
        }
      }
      return max;
    });
  }

  /**
   * Starts the request's asynchronous mode for a pending charge and dispatches the request again
   * once the charge completes (or the wait is cancelled).
   *
   * @param request the request as the handler sees it (the filters' wrappers kept)
   * @param response the response as the handler sees it
   * @param charge the pending charge
   * @param policy the call's policy, or {@code null} or blank for the default policy (named by a
   *     timeout's failure)
   * @param longestWait the policy's longest wait
   */
  void suspend(HttpServletRequest request, HttpServletResponse response,
      CompletableFuture<RateLimitOutcome> charge, @Nullable String policy, Duration longestWait) {
    String name = policy == null || policy.isBlank() ? enforcer.policies().defaultPolicy() : policy;
    AsyncContext async = request.startAsync(request, response);
    async.setTimeout(longestWait.plus(MARGIN).toMillis());
    AtomicBoolean resumed = new AtomicBoolean();
    async.addListener(new AsyncListener() {
      @Override
      public void onTimeout(AsyncEvent event) {
        // the room answers at the longest wait: only a store that never answered gets here
        Result result = charge.cancel(false)
            ? new Result(null, new RateLimitStoreUnavailableException(name, MARGIN.toMillis()))
            : Result.of(charge);
        if (resumed.compareAndSet(false, true)) {
          request.setAttribute(ATTRIBUTE, result);
          async.dispatch();
        }
      }

      @Override
      public void onError(AsyncEvent event) {
        charge.cancel(false); // the client is gone: the call leaves the room
        if (resumed.compareAndSet(false, true)) {
          async.complete();
        }
      }

      @Override
      public void onComplete(AsyncEvent event) {
        charge.cancel(false);
      }

      @Override
      public void onStartAsync(AsyncEvent event) {}
    });
    charge.whenComplete((outcome, failure) -> {
      if (charge.isCancelled() || !resumed.compareAndSet(false, true)) {
        return; // the listener answered
      }
      request.setAttribute(ATTRIBUTE, Result.of(charge));
      try {
        async.dispatch();
      } catch (IllegalStateException e) {
        // the request ended meanwhile (its client gone): the listener gave the call back
      }
    });
  }

  /**
   * Takes the result a waited call was dispatched with, once.
   *
   * @param request the dispatched request
   * @return the result, or {@code null} when the request did not wait
   */
  static @Nullable Result resumed(HttpServletRequest request) {
    if (request.getAttribute(ATTRIBUTE) instanceof Result result) {
      request.removeAttribute(ATTRIBUTE);
      return result;
    }
    return null;
  }

  /**
   * A waited call's outcome, or the failure its charge ended with.
   *
   * @param outcome the outcome, allowed or denied; {@code null} with a failure
   * @param failure the failure; {@code null} with an outcome
   */
  record Result(@Nullable RateLimitOutcome outcome, @Nullable RuntimeException failure) {

    static Result of(CompletableFuture<RateLimitOutcome> done) {
      try {
        return new Result(done.join(), null);
      } catch (CompletionException | java.util.concurrent.CancellationException e) {
        Throwable cause = e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
        if (cause instanceof RateLimitExceededException denied) {
          return new Result(denied.outcome(), null);
        }
        return new Result(null, cause instanceof RuntimeException r ? r
            : new IllegalStateException(cause));
      }
    }

    /** The allowed outcome; throws the deny or the failure. */
    RateLimitOutcome admitted() {
      if (failure != null) {
        throw failure;
      }
      assert outcome != null;
      if (outcome.decision().denied()) {
        throw new RateLimitExceededException(outcome);
      }
      return outcome;
    }
  }
}

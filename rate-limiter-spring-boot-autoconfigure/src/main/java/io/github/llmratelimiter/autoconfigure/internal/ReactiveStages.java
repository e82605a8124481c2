package io.github.llmratelimiter.autoconfigure.internal;

import io.github.llmratelimiter.gateway.RateLimitOutcome;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jspecify.annotations.Nullable;
import org.springframework.http.server.reactive.ServerHttpRequest;
import org.springframework.http.server.reactive.ServerHttpRequestDecorator;
import org.springframework.util.ClassUtils;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;
import reactor.netty.Connection;

/**
 * Turns the store's stages into {@link Mono}s for the reactive adapters, so that what follows a
 * charge never runs on the store's own threads. A stage the store completed at once (the in-memory
 * store) goes on on the calling thread, the request's event loop. One a remote store completes later
 * (the Redis store: on its client's I/O thread, or on its timer when a command times out) goes on
 * on the event loop of the request's connection on Reactor Netty (which then writes the response
 * from its own loop), else on Reactor's parallel scheduler: never on the store's threads, which
 * serve every request's store calls.
 */
public final class ReactiveStages {

  private static final boolean REACTOR_NETTY = ClassUtils.isPresent("reactor.netty.Connection",
      ReactiveStages.class.getClassLoader()) && ClassUtils.isPresent(
      "org.springframework.http.server.reactive.ServerHttpRequestDecorator",
      ReactiveStages.class.getClassLoader());

  private ReactiveStages() {}

  /**
   * Returns a stage as a {@link Mono} that signals on the calling thread when the stage is already
   * complete, else on the event loop of the request's Reactor Netty connection, else on {@link
   * Schedulers#parallel()}.
   *
   * @param stage the stage; a {@code null} value completes the Mono empty
   * @param request the HTTP request the stage serves (a WebFlux {@code ServerHttpRequest}), or
   *     {@code null}
   * @param <T> the value's type
   * @return the Mono
   */
  public static <T> Mono<T> resume(CompletionStage<T> stage, @Nullable Object request) {
    CompletableFuture<T> future = stage.toCompletableFuture();
    if (future.isDone()) {
      return Mono.fromCompletionStage(future);
    }
    Executor loop = REACTOR_NETTY ? ReactorNettyLoops.of(request) : null;
    if (loop == null) {
      return Mono.fromCompletionStage(future).publishOn(Schedulers.parallel());
    }
    return Mono.fromCompletionStage(future.whenCompleteAsync((value, failure) -> { }, loop));
  }

  /**
   * Returns a charge's stage as a {@link Mono} like {@link #resume}, and ends the call of a
   * subscriber that cancels before the outcome reaches it (its client went away while the charge
   * was pending): once the charge completes, nobody proceeds with its outcome, so its slots are
   * released and its model tokens refunded, each exactly once.
   *
   * @param stage the charge's stage; cancelling the Mono before the outcome cancels it too, so
   *     that a call waiting for its upstream leaves the wait at once
   * @param request the HTTP request the charge serves (a WebFlux {@code ServerHttpRequest}), or
   *     {@code null}
   * @return the Mono of the outcome
   */
  public static Mono<RateLimitOutcome> charge(
      CompletionStage<RateLimitOutcome> stage, @Nullable Object request) {
    if (stage.toCompletableFuture().isDone()) {
      return resume(stage, request); // nothing pending: a cancel comes before or after the outcome
    }
    return Mono.defer(() -> {
      AtomicBoolean delivered = new AtomicBoolean();
      return resume(stage.thenApply(outcome -> outcome), request) // a cancel stops only this copy
          .doOnNext(outcome -> delivered.set(true))
          .doOnCancel(() -> {
            if (!delivered.get()) {
              // pending: cancelled, the charge gives back an admission that comes later itself
              stage.toCompletableFuture().cancel(false);
              stage.whenComplete((outcome, failure) -> {
                if (outcome != null) {
                  outcome.abandon();
                }
              });
            }
          });
    });
  }

  /** Reactor Netty's side, loaded only when Reactor Netty and WebFlux are on the class path. */
  private static final class ReactorNettyLoops {

    private ReactorNettyLoops() {}

    /** The event loop of the request's connection, or {@code null} when it is not Reactor Netty's. */
    static @Nullable Executor of(@Nullable Object request) {
      if (!(request instanceof ServerHttpRequest http)) {
        return null;
      }
      try {
        return ServerHttpRequestDecorator.getNativeRequest(http) instanceof Connection connection
            ? connection.channel().eventLoop() : null;
      } catch (IllegalArgumentException | IllegalStateException e) {
        return null; // a request of another kind, with no native request (a mock's, in a test)
      }
    }
  }
}

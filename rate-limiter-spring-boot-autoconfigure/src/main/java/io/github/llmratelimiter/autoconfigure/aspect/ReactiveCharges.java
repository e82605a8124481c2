package io.github.llmratelimiter.autoconfigure.aspect;

import io.github.llmratelimiter.autoconfigure.internal.RateLimitRequestSupport;
import io.github.llmratelimiter.autoconfigure.internal.ReactiveRateLimitRequestSupport;
import io.github.llmratelimiter.autoconfigure.internal.ReactiveStages;
import io.github.llmratelimiter.gateway.CallSlots;
import io.github.llmratelimiter.gateway.RateLimitOutcome;
import java.util.concurrent.CompletionStage;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * Defers the charge of a method that returns a {@link Mono} or {@link Flux} to the subscription of
 * what it returned: each subscription charges once, before the publisher is subscribed to; a deny
 * (or a request that cannot be charged) is the error signal, and nothing of the publisher runs (the
 * method that returned it has run: work in its body is not deferred).
 * Only this class of the aspect names Reactor's types: it is loaded only when Reactor is present.
 */
final class ReactiveCharges {

  private ReactiveCharges() {}

  /**
   * Whether a method's declared return type is one this class returns in its place: {@link Mono},
   * {@link Flux}, or a supertype of both but {@code Object}, such as {@link Publisher}.
   */
  static boolean handles(Class<?> returnType) {
    return returnType == Mono.class || returnType == Flux.class
        || (returnType != Object.class && returnType.isAssignableFrom(Mono.class)
            && returnType.isAssignableFrom(Flux.class));
  }

  /**
   * Returns what a method returned, charged on subscription.
   *
   * @param returned the method's publisher, or {@code null}
   * @param reactive finds the request in the subscriber's context, or {@code null} outside WebFlux
   * @param threadBound the request support of the calling thread, for a subscriber whose context
   *     carries no request (Spring MVC subscribes on the request's thread), or {@code null}
   * @param charge charges the call for a request (null outside HTTP) without blocking: {@code null}
   *     when its request was charged already; it may throw what the charge would fail with
   * @return the deferred publisher, of the same kind as the method's
   */
  static @Nullable Object chargedOnSubscription(@Nullable Object returned,
      @Nullable ReactiveRateLimitRequestSupport reactive, @Nullable RateLimitRequestSupport threadBound,
      Function<@Nullable RateLimitRequestSupport, @Nullable CompletionStage<RateLimitOutcome>> charge) {
    if (!(returned instanceof Publisher<?> publisher)) {
      return returned;
    }
    Mono<Charged> charged = Mono.deferContextual(subscriber -> {
      RateLimitRequestSupport inContext = reactive == null ? null : reactive.of(subscriber);
      RateLimitRequestSupport support = inContext != null ? inContext : threadBound;
      boolean inRequest = support != null && support.currentContext() != null;
      CompletionStage<RateLimitOutcome> stage = charge.apply(support);
      return stage == null ? Mono.just(new Charged(null))
          : ReactiveStages.charge(stage, support == null ? null : support.currentRequest())
              .map(outcome -> new Charged(inRequest ? null : outcome.slots()));
    });
    if (publisher instanceof Mono<?> mono) {
      return charged.flatMap(c -> c.slots == null ? mono : mono.doFinally(end -> c.slots.releaseAsync()));
    }
    return charged.flatMapMany(c -> c.slots == null ? Flux.from(publisher)
        : Flux.from(publisher).doFinally(end -> c.slots.releaseAsync()));
  }

  /**
   * What a charge leaves to release when the publisher terminates: the slots of a call outside a
   * request (a request's front door releases its own when the response is over), or none.
   */
  private record Charged(@Nullable CallSlots slots) {}
}

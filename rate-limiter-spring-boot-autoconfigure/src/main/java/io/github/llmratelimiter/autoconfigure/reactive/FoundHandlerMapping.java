package io.github.llmratelimiter.autoconfigure.reactive;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Subscription;
import org.springframework.core.Ordered;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpMethod;
import org.springframework.http.server.RequestPath;
import org.springframework.http.server.reactive.ServerHttpRequest;
import org.springframework.web.method.HandlerMethod;
import org.springframework.web.reactive.HandlerMapping;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.ServerWebExchangeDecorator;
import reactor.core.CoreSubscriber;
import reactor.core.Exceptions;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.util.context.Context;
import reactor.util.context.ContextView;

/**
 * The limiter's look-up of the handler a request goes to, before the dispatcher's, and the first
 * of the dispatcher's mappings, through which it hands a handler method on so that the dispatcher
 * does not look for it a second time.
 *
 * <p>The filter asks the dispatcher's own mappings, in its order, with the exchange's attributes
 * copied: a mapping records what it matched in them (a router function, the pattern it matched and
 * the request it was found with), and asking twice on the same attributes would leave the
 * dispatcher's look-up to meet the first one's. When it finds a handler method, what the mapping
 * recorded (the matching pattern, the URI variables, the producible media types) goes into the
 * exchange's attributes and the handler to the dispatcher, once, while the request's path, method
 * and headers are the ones it was found for: a later filter that rewrites the request has it looked
 * up again. Any other handler (a router function keeps the request it was found with, which the
 * limiter replaces with one that re-exposes the body it read) is looked up again by the dispatcher,
 * on the exchange's own attributes.
 */
final class FoundHandlerMapping implements HandlerMapping, Ordered {

  /** The exchange attribute holding the handler found. */
  private static final String FOUND = FoundHandlerMapping.class.getName() + ".found";

  /** A handler found for a request as it was then. */
  private record Found(HandlerMethod handler, RequestPath path, HttpMethod method,
      HttpHeaders headers) {

    boolean matches(ServerHttpRequest request) {
      return request.getPath() == path && request.getHeaders() == headers
          && method.equals(request.getMethod());
    }
  }

  @Override
  public int getOrder() {
    return Ordered.HIGHEST_PRECEDENCE;
  }

  /**
   * Finds the handler the first of the mappings has for an exchange's request, leaving the
   * exchange's attributes as they were unless it is a handler method, which is then handed to the
   * dispatcher with what its mapping recorded. Each mapping is asked in the Reactor context of the
   * request's subscriber, and those that answer while they are asked (those of annotated
   * controllers and of router functions with plain predicates do) without operators: the answer
   * is then {@link Mono#just}, {@link Mono#empty} or {@link Mono#error}, whose value a caller may
   * take at once ({@link reactor.core.Fuseable.ScalarCallable}). A mapping that answers later is
   * waited for, and the rest are asked after it, as the dispatcher asks them.
   *
   * @param mappings the dispatcher's mappings in its order, this one left out
   * @param exchange the exchange
   * @param context the Reactor context of the request's subscriber
   * @return the handler; empty when none has one, an error when a mapping failed
   */
  static Mono<Object> find(List<HandlerMapping> mappings, ServerWebExchange exchange,
      ContextView context) {
    CopiedAttributes asked = new CopiedAttributes(exchange);
    Context subscriberContext = Context.of(context);
    for (int i = 0; i < mappings.size(); i++) {
      Answer answer = new Answer(subscriberContext);
      try {
        mappings.get(i).getHandler(asked).subscribe(answer);
      } catch (Throwable failed) { // a mapping that throws instead of signalling, as an operator
        Exceptions.throwIfFatal(failed); // would see it
        return Mono.error(failed);
      }
      if (!answer.isDone()) {
        List<HandlerMapping> rest = mappings.subList(i + 1, mappings.size());
        return Mono.fromFuture(answer)
            .switchIfEmpty(Flux.fromIterable(rest).concatMap(mapping -> mapping.getHandler(asked))
                .next())
            .map(handler -> found(handler, exchange, asked));
      }
      Object handler;
      try {
        handler = answer.getNow(null);
      } catch (CompletionException | CancellationException failed) {
        return Mono.error(failed.getCause() == null ? failed : failed.getCause());
      }
      if (handler != null) {
        return Mono.just(found(handler, exchange, asked));
      }
    }
    return Mono.empty();
  }

  /**
   * A mapping's answer: the handler, {@code null} for none, or its failure; subscribed in the
   * request's Reactor context. Cancelled, it cancels the mapping's look-up.
   */
  private static final class Answer extends CompletableFuture<Object>
      implements CoreSubscriber<Object> {

    private final Context context;
    private volatile @Nullable Subscription subscription;

    Answer(Context context) {
      this.context = context;
    }

    @Override
    public Context currentContext() {
      return context;
    }

    @Override
    public void onSubscribe(Subscription s) {
      subscription = s;
      s.request(Long.MAX_VALUE);
    }

    @Override
    public void onNext(Object handler) {
      complete(handler);
    }

    @Override
    public void onError(Throwable failure) {
      completeExceptionally(failure);
    }

    @Override
    public void onComplete() {
      complete(null);
    }

    @Override
    public boolean cancel(boolean mayInterruptIfRunning) {
      boolean cancelled = super.cancel(mayInterruptIfRunning);
      Subscription s = subscription;
      if (cancelled && s != null) {
        s.cancel();
      }
      return cancelled;
    }
  }

  /**
   * Hands a handler method, with what its mapping recorded in the copied attributes, to the
   * dispatcher through the exchange's attributes; returns the handler.
   */
  private static Object found(Object handler, ServerWebExchange exchange, CopiedAttributes asked) {
    if (handler instanceof HandlerMethod method) {
      Map<String, Object> attributes = exchange.getAttributes();
      attributes.keySet().retainAll(asked.attributes.keySet());
      // put one by one: putAll would presize the map for every copied entry, most already there
      asked.attributes.forEach((name, value) -> {
        if (attributes.get(name) != value) {
          attributes.put(name, value);
        }
      });
      ServerHttpRequest request = exchange.getRequest();
      attributes.put(FOUND,
          new Found(method, request.getPath(), request.getMethod(), request.getHeaders()));
    }
    return handler;
  }

  /** An exchange with a copy of another's attributes, which a mapping writes into. */
  private static final class CopiedAttributes extends ServerWebExchangeDecorator {

    private final Map<String, Object> attributes;

    CopiedAttributes(ServerWebExchange exchange) {
      super(exchange);
      Map<String, Object> original = exchange.getAttributes();
      // room for what the mappings record without growing (a look-up runs on one thread at a time)
      this.attributes = new HashMap<>(Math.max(32, 2 * original.size() + 16));
      this.attributes.putAll(original);
    }

    @Override
    public Map<String, Object> getAttributes() {
      return attributes;
    }
  }

  /** The handler found for this request, once; none when it was not found or has changed. */
  @Override
  public Mono<Object> getHandler(ServerWebExchange exchange) {
    @Nullable Object found = exchange.getAttributes().remove(FOUND);
    return found instanceof Found f && f.matches(exchange.getRequest())
        ? Mono.just(f.handler()) : Mono.empty();
  }
}

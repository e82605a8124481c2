package io.github.llmratelimiter.autoconfigure.reactive;

import io.github.llmratelimiter.autoconfigure.internal.RateLimitRoutes;
import io.github.llmratelimiter.autoconfigure.internal.RateLimitRoutes.Route;
import io.github.llmratelimiter.autoconfigure.internal.ReactiveStages;
import io.github.llmratelimiter.gateway.BodyLimits;
import io.github.llmratelimiter.gateway.internal.HttpFields;
import io.github.llmratelimiter.gateway.InvalidRateLimitRequestException;
import io.github.llmratelimiter.gateway.KeySource;
import io.github.llmratelimiter.gateway.RateLimitContext;
import io.github.llmratelimiter.gateway.RateLimitGateway;
import io.github.llmratelimiter.gateway.RateLimited;
import io.github.llmratelimiter.gateway.RequestBody;
import io.github.llmratelimiter.gateway.RateLimitOutcome;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import org.jspecify.annotations.Nullable;
import org.springframework.context.ApplicationContext;
import org.springframework.core.Ordered;
import org.springframework.core.io.buffer.DataBufferLimitException;
import org.springframework.http.HttpMethod;
import org.springframework.http.codec.multipart.FormFieldPart;
import org.springframework.http.server.reactive.ServerHttpRequest;
import org.springframework.web.cors.reactive.CorsUtils;
import org.springframework.web.reactive.DispatcherHandler;
import org.springframework.web.reactive.HandlerMapping;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.WebFilter;
import org.springframework.web.server.WebFilterChain;
import reactor.core.Fuseable;
import reactor.core.publisher.Mono;

/**
 * The reactive front door: the servlet adapter's body filter, route interceptor and usage filter in
 * one {@link WebFilter}, calling the same {@link RateLimitGateway} steps and writing the same
 * headers and problems. For each request it
 *
 * <ol>
 *   <li>finds the route of {@code ratelimiter.web.routes} that covers its path and method, and whether its
 *       controller method carries {@link RateLimited} (which then charges it instead, while the
 *       aspect is active: the more specific declaration wins; without a key of its own it is
 *       charged to the caller the route's key source finds);
 *   <li>for a request so limited, reads its body before the handler and re-exposes the same bytes
 *       ({@link BufferedRequest}): a {@code POST}, {@code PUT} or {@code PATCH} whose body is JSON
 *       with a declared length up to {@code max-body-peek}, or has no declared length and is not a
 *       form, up to {@code max-body}; a form's {@code model} fields come from the exchange's form
 *       data, which the handler then reads as parsed;
 *   <li>checks it ({@link RateLimitGateway#check}: 413 above {@code max-body}, declared or streamed,
 *       or a JSON body above {@code max-body-peek} on a route that reads the model from it; 400 for
 *       invalid completion caps), resolves its key as the route says (its principal, when the route
 *       needs it, resolved without blocking; 401, or 400 for two different credentials) and
 *       charges the route without blocking ({@link RateLimitGateway#chargeAsync}), writing the
 *       rate-limit headers on the response or the gateway's problem instead of calling the handler;
 *   <li>puts the exchange in the Reactor context of the rest of the chain, where the aspect finds
 *       it, and settles the request's model tokens from its response ({@link
 *       UsageTrackingResponse}).
 * </ol>
 *
 * <p>A CORS preflight request is neither charged nor rejected: the application's CORS configuration
 * answers it (it carries no credentials), and the call it asks about is charged.
 *
 * <p>It never blocks: the body is read as it arrives, the store is called through its asynchronous
 * API (what follows a remote store's answer runs off the store's threads: {@link ReactiveStages}),
 * and a settlement completes on its own. It runs at order {@value #ORDER}, after security
 * filters (Spring Security's at -100), so an unauthenticated request is rejected before it is
 * charged.
 */
final class RateLimitWebFilter implements WebFilter, Ordered {

  /** The filter's order: after Spring Security's filter chain (-100). */
  static final int ORDER = 0;

  /** The handler of a request when there is no dispatcher to ask which one will serve it. */
  private static final Object UNKNOWN = new Object();
  /** The handler of a request that no handler will serve. */
  private static final Object NONE = new Object();
  /** The exchange attribute that holds the form the limiter parsed. */
  private static final String FORM = BoundedFormExchange.class.getName();

  private final RateLimitRoutes routes;
  private final RateLimitGateway gateway;
  private final ExchangeRequestSupport support;
  private final ReactiveProblems problems;
  private final @Nullable AnnotatedHandlerLookup annotated;
  private final BodyLimits limits;
  private final BoundedFormExchange.Readers forms;
  private volatile @Nullable List<HandlerMapping> handlerMappings;

  RateLimitWebFilter(RateLimitRoutes routes, RateLimitGateway gateway, ExchangeRequestSupport support,
      ReactiveProblems problems, @Nullable AnnotatedHandlerLookup annotated) {
    this.routes = routes;
    this.gateway = gateway;
    this.support = support;
    this.problems = problems;
    this.annotated = annotated;
    this.limits = gateway.bodyLimits();
    this.forms = BoundedFormExchange.Readers.of(limits.maxBody());
  }

  @Override
  public int getOrder() {
    return ORDER;
  }

  /**
   * A fixed name: the web filter chain names every filter in its checkpoint on every request, and
   * {@link Object#toString()} would format the identity hash each time.
   */
  @Override
  public String toString() {
    return "RateLimitWebFilter";
  }

  @Override
  public Mono<Void> filter(ServerWebExchange exchange, WebFilterChain chain) {
    ServerHttpRequest request = exchange.getRequest();
    if (CorsUtils.isPreFlightRequest(request)) {
      return proceed(exchange, chain); // no credentials: the application's CORS answers it
    }
    Route route = routes.isEmpty() ? null
        : routes.match(request.getPath().pathWithinApplication(), request.getMethod().name());
    boolean byAnnotation = annotated != null && annotated.any();
    if (route == null && !byAnnotation) {
      return proceed(exchange, chain);
    }
    List<HandlerMapping> mappings = handlerMappings(exchange);
    if (mappings.isEmpty()) { // no dispatcher to ask which handler will serve it
      return served(exchange, chain, route, byAnnotation, UNKNOWN);
    }
    return Mono.deferContextual(context -> {
      Mono<Object> handler = FoundHandlerMapping.find(mappings, exchange, context);
      if (handler instanceof Fuseable.ScalarCallable<?> answered) { // found at once: no operators
        Object found;
        try {
          found = answered.call();
        } catch (Exception noHandler) { // no handler of that method or media type
          found = null;
        }
        return served(exchange, chain, route, byAnnotation, found == null ? NONE : found);
      }
      return handler
          .defaultIfEmpty(NONE)
          .onErrorReturn(NONE) // no handler of that method or media type
          .flatMap(found -> served(exchange, chain, route, byAnnotation, found));
    });
  }

  /**
   * Goes on with a request once the handler that will serve it is known: the first the
   * dispatcher's mappings find, asked in its order (a {@code RouterFunction} before annotated
   * controllers, as it does); {@link #NONE} when none will serve it (405, 415, 406, no handler: the
   * dispatcher answers, and a route charges nothing, as the servlet interceptor, which runs after
   * the handler is chosen, charges nothing); {@link #UNKNOWN} without a dispatcher to ask, which a
   * route charges.
   */
  private Mono<Void> served(ServerWebExchange exchange, WebFilterChain chain, @Nullable Route route,
      boolean byAnnotation, Object handler) {
    if (byAnnotation && annotated.annotated(handler)) {
      return limited(exchange, chain, route, true);
    }
    return route == null || handler == NONE ? proceed(exchange, chain)
        : limited(exchange, chain, route, false);
  }

  /** The dispatcher's handler mappings, in its order (looked up once), or none without one. */
  private List<HandlerMapping> handlerMappings(ServerWebExchange exchange) {
    List<HandlerMapping> found = handlerMappings;
    if (found == null) {
      ApplicationContext context = exchange.getApplicationContext();
      DispatcherHandler dispatcher = context == null ? null
          : context.getBeanProvider(DispatcherHandler.class).getIfUnique();
      List<HandlerMapping> mappings = dispatcher == null ? null : dispatcher.getHandlerMappings();
      found = mappings == null ? List.of() : mappings.stream()
          .filter(mapping -> !(mapping instanceof FoundHandlerMapping)).toList();
      handlerMappings = found;
    }
    return found;
  }

  /**
   * A request a route or an annotation limits: read, checked, and charged unless annotated. The
   * exchange is mutated once, with the body it re-exposes and the response that settles it; a
   * charge the store answers at once (the in-memory store) goes on on the same stage, without
   * operators between the body and the handler; a form the limiter parses is cleaned up once the
   * exchange is over.
   */
  private Mono<Void> limited(ServerWebExchange exchange, WebFilterChain chain, @Nullable Route route,
      boolean byAnnotation) {
    RateLimitContext context = ReactiveContexts.get(exchange, gateway);
    context.markLimited();
    if (route != null) {
      context.modelSource(route.modelSource());
    }
    UsageTrackingResponse response = new UsageTrackingResponse(exchange, gateway);
    if (!parsesForm(context)) {
      return read(exchange, context, response)
          .onErrorResume(failure -> rejected(exchange, failure).then(Mono.empty()))
          .flatMap(read -> byAnnotation
              ? admit(exchange, Mono.defer(() -> routeCaller(read, context, route)), chain, response)
              : charge(exchange, read, context, route, chain, response));
    }
    return Mono.usingWhen(Mono.just(exchange), start -> admit(exchange,
        read(start, context, response)
            .flatMap(read -> formModels(read, context))
            .flatMap(read -> byAnnotation ? routeCaller(read, context, route)
                : chargeLater(read, context, route)), chain, response),
        RateLimitWebFilter::cleanupForm, (done, failure) -> cleanupForm(done),
        RateLimitWebFilter::cleanupForm);
  }

  /** Calls the chain with the exchange once admitted, else writes the problem of its rejection. */
  private Mono<Void> admit(ServerWebExchange exchange, Mono<ServerWebExchange> admitted,
      WebFilterChain chain, UsageTrackingResponse response) {
    return admitted
        .onErrorResume(failure -> rejected(exchange, failure).then(Mono.empty()))
        .flatMap(read -> proceed(read, chain, response));
  }

  /** The problem of a rejected request, or the failure when it is not the gateway's. */
  private Mono<Void> rejected(ServerWebExchange exchange, Throwable failure) {
    Mono<Void> rejected = problems.write(exchange, failure);
    return rejected != null ? rejected : Mono.error(failure);
  }

  /** Whether the limiter parses the request's form body for its model. */
  private boolean parsesForm(RateLimitContext context) {
    return HttpFields.isForm(context.contentType()) && context.modelSource().readsBody()
        && context.contentLength() <= limits.maxBody();
  }

  /** Deletes the parts of a form the limiter parsed, once the exchange is over. */
  private static Mono<Void> cleanupForm(ServerWebExchange exchange) {
    return exchange.getAttribute(FORM) instanceof BoundedFormExchange form
        ? form.cleanupMultipart() : Mono.empty();
  }

  /**
   * Reads the body the limiter may read, as the servlet adapter's body filter keeps it, and hands it
   * to the context; a body longer than {@code max-body} is marked too long and not re-exposed (the
   * request is rejected). Returns the exchange with that body and the response that settles the
   * request.
   */
  private Mono<ServerWebExchange> read(ServerWebExchange exchange, RateLimitContext context,
      UsageTrackingResponse response) {
    ServerHttpRequest request = exchange.getRequest();
    HttpMethod method = request.getMethod();
    if (!limits.readBodies()
        || !(HttpMethod.POST.equals(method) || HttpMethod.PUT.equals(method)
            || HttpMethod.PATCH.equals(method))) {
      return Mono.just(exchange.mutate().response(response).build());
    }
    long declared = context.contentLength();
    String type = context.contentType();
    if (declared >= 0 ? declared > limits.maxPeek() || !HttpFields.isJson(type) : HttpFields.isForm(type)) {
      // a declared length above max-body is rejected from the header
      return Mono.just(exchange.mutate().response(response).build());
    }
    return BodyBytes.read(request.getBody(), declared, (int) limits.maxBody())
        .map(read -> {
          byte[] bytes = read.bytes();
          context.body(RequestBody.of(bytes, false));
          return exchange.mutate()
              .request(new BufferedRequest(request, bytes, exchange.getResponse().bufferFactory()))
              .response(response)
              .build();
        })
        .onErrorResume(DataBufferLimitException.class, tooLong -> {
          context.body(RequestBody.of(null, true));
          return Mono.just(exchange.mutate().response(response).build());
        });
  }

  /**
   * Reads the {@code model} fields of a form body, when the model is read from the body: the
   * form is parsed once, from at most {@code max-body} bytes ({@link BoundedFormExchange}), and the
   * handler reads the same fields; a form past {@code max-body} is marked too long (the request is
   * rejected) as soon as it passes it, and one whose declared length does is not read at all; a
   * form that cannot be parsed (a bad escape, a multipart body without its boundary) is a 400.
   */
  private Mono<ServerWebExchange> formModels(ServerWebExchange exchange, RateLimitContext context) {
    String type = context.contentType();
    if (!HttpFields.isForm(type) || !context.modelSource().readsBody()
        || context.contentLength() > limits.maxBody()) {
      return Mono.just(exchange);
    }
    BoundedFormExchange form = new BoundedFormExchange(exchange, forms);
    exchange.getAttributes().put(FORM, form);
    Mono<List<String>> values = type.regionMatches(true, 0, "multipart/", 0, 10)
        ? form.getMultipartData().map(parts -> parts.getOrDefault(HttpFields.MODEL, List.of())
            .stream().filter(FormFieldPart.class::isInstance)
            .map(part -> ((FormFieldPart) part).value()).toList())
        : form.getFormData().map(fields -> fields.getOrDefault(HttpFields.MODEL, List.of()));
    return values
        .onErrorResume(RateLimitWebFilter::tooLong, tooLong -> {
          context.body(RequestBody.of(null, true));
          return Mono.just(List.of());
        })
        .onErrorMap(failure -> !(failure instanceof InvalidRateLimitRequestException),
            unreadable -> new InvalidRateLimitRequestException(
                "The request's form body cannot be read.", unreadable))
        .map(models -> {
          form.getAttributes().put(ReactiveContexts.FORM_MODELS, models);
          return form;
        });
  }

  /** Whether a failure is a body past a size limit, wrapped by a decoder or not. */
  private static boolean tooLong(Throwable failure) {
    for (Throwable t = failure; t != null; t = t.getCause()) {
      if (t instanceof DataBufferLimitException) {
        return true;
      }
    }
    return false;
  }

  /**
   * Checks a request its annotated handler charges, and records the caller its route finds when the
   * route is keyed otherwise than on the API key: the annotation charges that caller.
   */
  private Mono<ServerWebExchange> routeCaller(
      ServerWebExchange exchange, RateLimitContext context, @Nullable Route route) {
    gateway.check(context);
    if (route == null || route.keySource() == KeySource.API_KEY || context.charged()) {
      return Mono.just(exchange);
    }
    return support.resolveKey(exchange, route).map(key -> {
      context.routeCaller(key.apiKey());
      return exchange;
    });
  }

  /**
   * Checks the request and charges its route (none for an annotated handler, which the aspect
   * charges), writing an admitted call's headers, then calls the chain; a charge the store has
   * answered by the time it returns goes on at once.
   */
  private Mono<Void> charge(ServerWebExchange exchange, ServerWebExchange read,
      RateLimitContext context, @Nullable Route route, WebFilterChain chain,
      UsageTrackingResponse response) {
    if (route == null || route.needsPrincipal()) {
      return admit(exchange, chargeLater(read, context, route), chain, response);
    }
    CompletableFuture<RateLimitOutcome> charged;
    try {
      gateway.check(context, route.policy());
      if (context.charged()) {
        return proceed(read, chain, response);
      }
      charged = gateway.chargeAsync(context, route.policy(), support.resolveKeyNow(read, route), 1.0)
          .toCompletableFuture();
    } catch (RuntimeException failure) {
      return rejected(exchange, failure);
    }
    if (!charged.isDone()) {
      return admit(exchange, ReactiveStages.charge(charged, read.getRequest())
          .map(outcome -> headers(read, outcome)), chain, response);
    }
    RateLimitOutcome outcome;
    try {
      outcome = charged.join();
    } catch (CompletionException failure) {
      return rejected(exchange, failure.getCause());
    }
    return proceed(headers(read, outcome), chain, response);
  }

  /** Writes an admitted call's headers on the exchange's response. */
  private static ServerWebExchange headers(ServerWebExchange exchange, RateLimitOutcome outcome) {
    ExchangeRequestSupport.writeHeaders(exchange.getResponse(), outcome);
    return exchange;
  }

  /**
   * Checks the request and charges its route as a stage (none for an annotated handler, which the
   * aspect charges), writing an admitted call's headers.
   */
  private Mono<ServerWebExchange> chargeLater(
      ServerWebExchange exchange, RateLimitContext context, @Nullable Route route) {
    if (route == null) {
      gateway.check(context);
      return Mono.just(exchange);
    }
    gateway.check(context, route.policy());
    if (context.charged()) {
      return Mono.just(exchange);
    }
    return support.resolveKey(exchange, route)
        .flatMap(key -> ReactiveStages.charge(
            gateway.chargeAsync(context, route.policy(), key, 1.0), exchange.getRequest()))
        .map(outcome -> headers(exchange, outcome));
  }

  /**
   * Calls the rest of the chain with the exchange in its Reactor context, and settles the request's
   * model tokens once its response is over.
   */
  private Mono<Void> proceed(ServerWebExchange exchange, WebFilterChain chain) {
    UsageTrackingResponse response = new UsageTrackingResponse(exchange, gateway);
    return proceed(exchange.mutate().response(response).build(), chain, response);
  }

  /**
   * Calls the rest of the chain with an exchange whose response is {@code response}, as {@link
   * #proceed(ServerWebExchange, WebFilterChain)} does.
   */
  private static Mono<Void> proceed(ServerWebExchange tracked, WebFilterChain chain,
      UsageTrackingResponse response) {
    return chain.filter(tracked)
        .doFinally(response::settle)
        .contextWrite(subscriber -> ReactiveContexts.with(subscriber, tracked));
  }
}

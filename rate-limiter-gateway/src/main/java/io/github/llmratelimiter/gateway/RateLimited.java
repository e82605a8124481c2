package io.github.llmratelimiter.gateway;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Limits calls to a method, or to every public method of a class.
 *
 * <p>A plain annotation: an adapter enforces it (in a Spring application, an interceptor on Spring
 * beans, so it works on controller methods and on any bean method, inside or outside an HTTP
 * request). A denied call throws {@link RateLimitExceededException} (carrying the {@link
 * io.github.llmratelimiter.core.Decision}); a web front door turns it into a 429 problem response.
 * A method-level annotation overrides a class-level one. A method that returns a Reactor {@code
 * Mono} or {@code Flux} is charged when what it returned is subscribed to, once per subscription,
 * without blocking; its deny is the error signal (in WebFlux, annotate such methods: a plain
 * return value there is charged outside the request). Such a method itself runs when it is called,
 * before the charge: only what its publisher does waits for an admitted charge. Keep the work in
 * the publisher ({@code Mono.fromCallable(() -> llm.complete(prompt))}, a {@code WebClient} call),
 * not in the method's body ({@code Mono.just(llm.complete(prompt))} calls the model even when the
 * charge is then denied).
 *
 * <p><b>Charged once.</b> An HTTP request is charged at most once: when a handler method (or its
 * class) carries this annotation, the route interceptor leaves the request to the annotation (the
 * more specific declaration wins); and a {@code @RateLimited} method reached during a request that
 * was already charged, by a route or an outer {@code @RateLimited} method, is not charged again.
 *
 * <p>The expressions are SpEL, evaluated against the call: method parameters by name (compile with
 * {@code -parameters}) or as {@code #p0}, {@code #a0}; {@code #args}; {@code #request} (the current
 * {@code HttpServletRequest} in Spring MVC, the {@code ServerHttpRequest} in WebFlux, or null outside
 * HTTP); and {@code @beanName} references. An adapter parses them when the application starts (a
 * syntax error stops it, naming the method). A key expression that gives nothing (null or blank)
 * follows {@code ratelimiter.missing-key}: the anonymous key, or a rejection (a 400 in HTTP). A
 * problem response never shows an expression or the method.
 *
 * <pre>{@code
 * @RateLimited(policy = "chat", model = "#body.model", cost = "#body.n ?: 1")
 * @PostMapping("/v1/chat/completions")
 * ChatResponse chat(@RequestBody ChatRequest body) { ... }
 * }</pre>
 */
@Target({ElementType.METHOD, ElementType.TYPE})
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface RateLimited {

  /**
   * Returns the policy's name; empty means {@code ratelimiter.default-policy}.
   *
   * @return the policy
   */
  String policy() default "";

  /**
   * Returns a SpEL expression for the caller's key; empty means the caller the route that covers
   * the current HTTP request finds (its principal, client address or expression), else the
   * request's API key (required outside HTTP). What it gives is the key as is; nothing (null or
   * blank) follows {@code ratelimiter.missing-key}.
   *
   * @return the key expression
   */
  String key() default "";

  /**
   * Returns a SpEL expression for the model the call names; empty means the model of the current
   * HTTP request, if any, read as the request's route says ({@code
   * ratelimiter.web.routes[n].model-source}), else as {@link ModelSource#BODY_THEN_QUERY}: the JSON
   * body's {@code "model"}, and the {@code model} query parameter only when the body names none.
   *
   * @return the model expression
   */
  String model() default "";

  /**
   * Returns a SpEL expression for the call's cost in bucket tokens (a finite number above 0);
   * empty means 1. The window always counts the call once.
   *
   * @return the cost expression
   */
  String cost() default "";
}

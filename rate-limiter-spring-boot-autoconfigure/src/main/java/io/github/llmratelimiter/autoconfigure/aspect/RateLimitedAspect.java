package io.github.llmratelimiter.autoconfigure.aspect;

import io.github.llmratelimiter.autoconfigure.internal.AnnotationEnforcement;
import io.github.llmratelimiter.autoconfigure.internal.RateLimitRequestSupport;
import io.github.llmratelimiter.autoconfigure.internal.ReactiveRateLimitRequestSupport;
import io.github.llmratelimiter.gateway.CallSlots;
import io.github.llmratelimiter.gateway.InvalidRateLimitRequestException;
import io.github.llmratelimiter.gateway.KeySource;
import io.github.llmratelimiter.gateway.RateLimitContext;
import io.github.llmratelimiter.gateway.RateLimitExceededException;
import io.github.llmratelimiter.gateway.RateLimitGateway;
import io.github.llmratelimiter.gateway.RateLimitKey;
import io.github.llmratelimiter.gateway.RateLimitOutcome;
import io.github.llmratelimiter.gateway.RateLimited;
import java.lang.reflect.Method;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import org.aopalliance.intercept.MethodInterceptor;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.aopalliance.intercept.MethodInvocation;
import org.jspecify.annotations.Nullable;
import org.springframework.aop.support.AopUtils;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.context.expression.BeanFactoryResolver;
import org.springframework.context.expression.MethodBasedEvaluationContext;
import org.springframework.core.DefaultParameterNameDiscoverer;
import org.springframework.core.ParameterNameDiscoverer;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.expression.EvaluationException;
import org.springframework.expression.Expression;
import org.springframework.expression.spel.standard.SpelExpressionParser;
import org.springframework.util.ClassUtils;

/**
 * Enforces {@link RateLimited}: charges the call through the {@link RateLimitGateway}, which throws
 * {@link RateLimitExceededException} on a deny. Inside an HTTP request the call is charged on the
 * request's context, so a request already charged (by a route or an outer annotated method) is not
 * charged again; outside a request nothing is recorded and no model tokens are estimated.
 *
 * <p>A method that returns a {@code Mono} or {@code Flux} (or a {@code Publisher}) is charged when
 * what it returned is subscribed to, once per subscription, without blocking ({@link
 * RateLimitGateway#chargeAsync}); its HTTP request is the one in the subscriber's context (a WebFlux
 * request), else the one the calling thread serves. A deny is the publisher's error signal. Any
 * other method is charged before it runs.
 *
 * <p>A call that takes a slot on a limit on calls in flight holds it until its HTTP response is
 * over (the front door releases it); outside a request, until the method returns or throws, or
 * until what it returned terminates or is cancelled.
 *
 * <p>Without a key expression, a call is charged to the caller its request's route finds (the
 * principal, the client address, the route's expression), else to the request's API key.
 *
 * <p>A key expression that gives nothing (null or blank) follows {@code ratelimiter.missing-key}:
 * the anonymous key, or a 400. A failure to evaluate an expression (a method it calls that throws
 * included), or a cost that is not a
 * positive number, is a 400 whose problem names neither the expression nor the method (both are
 * logged at debug level).
 *
 * <p>A plain Spring AOP interceptor, applied by the {@link RateLimitedPointcut} advisor that the
 * auto-configuration registers: it needs no AspectJ.
 */
final class RateLimitedAspect implements MethodInterceptor, AnnotationEnforcement {

  private static final Log LOG = LogFactory.getLog(RateLimitedAspect.class);
  /** The parser of the annotation's expressions, here and in the start-up check. */
  static final SpelExpressionParser PARSER = new SpelExpressionParser();
  private static final ParameterNameDiscoverer NAMES = new DefaultParameterNameDiscoverer();

  private final RateLimitGateway gateway;
  private final ObjectProvider<RateLimitRequestSupport> requests;
  private final ObjectProvider<ReactiveRateLimitRequestSupport> reactiveRequests;
  private final BeanFactory beanFactory;
  private final boolean reactor;
  private final Map<String, Expression> expressions = new ConcurrentHashMap<>();

  RateLimitedAspect(RateLimitGateway gateway, ObjectProvider<RateLimitRequestSupport> requests,
      ObjectProvider<ReactiveRateLimitRequestSupport> reactiveRequests, BeanFactory beanFactory) {
    this.gateway = gateway;
    this.requests = requests;
    this.reactiveRequests = reactiveRequests;
    this.beanFactory = beanFactory;
    this.reactor = ClassUtils.isPresent("reactor.core.publisher.Mono", getClass().getClassLoader());
  }

  @Override
  public @Nullable Object invoke(MethodInvocation call) throws Throwable {
    Method method = call.getMethod();
    Object bean = call.getThis();
    Class<?> target = bean == null ? method.getDeclaringClass() : AopUtils.getTargetClass(bean);
    Method specific = AopUtils.getMostSpecificMethod(method, target);
    RateLimited annotation = find(specific, target);
    if (annotation == null) {
      return call.proceed();
    }
    Call limited = new Call(annotation, bean, specific, target, call.getArguments());
    if (reactor && ReactiveCharges.handles(specific.getReturnType())) {
      return ReactiveCharges.chargedOnSubscription(call.proceed(), reactiveRequests.getIfAvailable(),
          requests.getIfAvailable(), support -> chargeAsync(limited, support));
    }
    RateLimitRequestSupport support = requests.getIfAvailable();
    Charge charge = plan(limited, support);
    CallSlots slots = null;
    if (charge != null) {
      RateLimitOutcome outcome = gateway.charge(charge.context(), charge.policy(), charge.key(), charge.cost());
      if (charge.context() != null) {
        support.writeHeaders(outcome);
      } else {
        slots = outcome.slots(); // outside a request the call ends when the method returns
      }
    }
    try {
      return call.proceed();
    } finally {
      if (slots != null) {
        slots.release();
      }
    }
  }

  /**
   * Charges a call without blocking; {@code null} when its request was charged already. No Reactor
   * type appears in this class's signatures: it loads without Reactor.
   */
  private @Nullable CompletionStage<RateLimitOutcome> chargeAsync(
      Call call, @Nullable RateLimitRequestSupport support) {
    Charge charge = plan(call, support);
    if (charge == null) {
      return null;
    }
    Consumer<RateLimitOutcome> headers = charge.context() != null ? support.headerWriter() : null;
    CompletableFuture<RateLimitOutcome> source = gateway.chargeAsync(charge.context(),
        charge.policy(), charge.key(), charge.cost()).toCompletableFuture();
    if (headers == null) {
      return source;
    }
    // not a dependent stage: cancelling what this returns must reach the charge (a call waiting
    // for its upstream leaves the wait), and an outcome that comes after a cancel is given back
    CompletableFuture<RateLimitOutcome> result = new CompletableFuture<>();
    source.whenComplete((outcome, failure) -> {
      if (failure != null) {
        result.completeExceptionally(failure);
        return;
      }
      headers.accept(outcome); // on the request's response, whichever thread decided
      if (!result.complete(outcome)) {
        outcome.abandon();
      }
    });
    result.whenComplete((outcome, failure) -> {
      if (result.isCancelled()) {
        source.cancel(false);
      }
    });
    return result;
  }

  /** An annotated call: the annotation that applies, and what its expressions are evaluated on. */
  private record Call(RateLimited annotation, @Nullable Object target, Method method,
      Class<?> targetClass, Object[] args) {}

  /**
   * What a call is charged: on its request's context ({@code null} outside HTTP), the policy, the
   * key and the cost.
   */
  private record Charge(@Nullable RateLimitContext context, String policy, RateLimitKey key,
      double cost) {}

  /**
   * Checks the call's request and evaluates the annotation's expressions into what the call is
   * charged, or {@code null} when its request was charged already.
   */
  private @Nullable Charge plan(Call call, @Nullable RateLimitRequestSupport support) {
    RateLimited annotation = call.annotation();
    RateLimitContext charging = support == null ? null : support.currentContext();
    boolean inRequest = charging != null;
    if (inRequest && charging.charged()) {
      return null;
    }
    if (inRequest) {
      gateway.check(charging, annotation.policy());
    }
    MethodBasedEvaluationContext context = new MethodBasedEvaluationContext(
        call.target(), call.method(), call.args(), NAMES);
    context.setBeanResolver(new BeanFactoryResolver(beanFactory));
    context.setVariable("args", call.args());
    context.setVariable("request", inRequest ? support.currentRequest() : null);
    String where = call.targetClass().getSimpleName() + "." + call.method().getName() + "()";
    String model = annotation.model().isEmpty() ? null : string(annotation.model(), context, where, "model");
    RateLimitKey key;
    if (annotation.key().isEmpty()) {
      if (!inRequest) {
        throw new IllegalStateException("@RateLimited on " + where
            + " is called outside an HTTP request: set key = \"<SpEL>\" to name the caller");
      }
      String routeCaller = charging.routeCaller(); // a route keyed otherwise than on the API key
      String apiKey = routeCaller != null ? routeCaller
          : gateway.apiKey(support.currentCredential());
      key = RateLimitKey.of(apiKey, model != null ? model : support.currentModel());
    } else {
      String caller = gateway.callerKey(KeySource.EXPRESSION, string(annotation.key(), context, where, "key"));
      key = RateLimitKey.of(caller, model != null ? model : inRequest ? support.currentModel() : null);
    }
    double cost = annotation.cost().isEmpty() ? 1.0 : cost(annotation.cost(), context, where);
    return new Charge(charging, annotation.policy(), key, cost);
  }

  static @Nullable RateLimited find(Method method, Class<?> target) {
    RateLimited onMethod = AnnotatedElementUtils.findMergedAnnotation(method, RateLimited.class);
    return onMethod != null ? onMethod : AnnotatedElementUtils.findMergedAnnotation(target, RateLimited.class);
  }

  private @Nullable Object evaluate(String expression, MethodBasedEvaluationContext context,
      String where, String attribute) {
    try {
      return expressions.computeIfAbsent(expression, PARSER::parseExpression).getValue(context);
    } catch (InvalidRateLimitRequestException e) {
      throw e;
    } catch (RuntimeException e) { // or thrown as is by a method the expression calls
      if (LOG.isDebugEnabled()) {
        LOG.debug("The " + attribute + " expression of @RateLimited on " + where
            + " cannot be evaluated: "
            + (e instanceof EvaluationException ? e.getMessage() : e.getClass().getName()));
      }
      throw new InvalidRateLimitRequestException(
          "The request's rate-limit " + attribute + " cannot be read from it.", e);
    }
  }

  private @Nullable String string(String expression, MethodBasedEvaluationContext context,
      String where, String attribute) {
    Object value = evaluate(expression, context, where, attribute);
    return value == null ? null : value.toString();
  }

  private double cost(String expression, MethodBasedEvaluationContext context, String where) {
    Object value = evaluate(expression, context, where, "cost");
    double cost;
    if (value instanceof Number n) {
      cost = n.doubleValue();
    } else {
      try {
        cost = value == null ? Double.NaN : Double.parseDouble(value.toString());
      } catch (NumberFormatException e) {
        cost = Double.NaN;
      }
    }
    if (!(cost > 0) || Double.isInfinite(cost)) {
      if (LOG.isDebugEnabled()) {
        LOG.debug("The cost expression of @RateLimited on " + where + " gave " + value);
      }
      throw new InvalidRateLimitRequestException(
          "The request's rate-limit cost must be a finite number > 0.", null);
    }
    return cost;
  }
}

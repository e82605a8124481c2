package io.github.llmratelimiter.autoconfigure.internal;

import io.github.llmratelimiter.autoconfigure.InvalidRateLimitPropertyException;
import io.github.llmratelimiter.autoconfigure.RateLimiterWebProperties;
import io.github.llmratelimiter.autoconfigure.RouteKeyRequest;
import io.github.llmratelimiter.gateway.BodyLimits;
import io.github.llmratelimiter.gateway.InvalidRateLimitRequestException;
import io.github.llmratelimiter.gateway.KeySource;
import io.github.llmratelimiter.gateway.ModelSource;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import org.springframework.expression.BeanResolver;
import org.springframework.expression.EvaluationException;
import org.springframework.expression.Expression;
import org.springframework.expression.ParseException;
import org.springframework.expression.spel.SpelCompilerMode;
import org.springframework.expression.spel.SpelParserConfiguration;
import org.springframework.expression.spel.standard.SpelExpressionParser;
import org.springframework.expression.spel.support.StandardEvaluationContext;
import org.springframework.http.server.PathContainer;
import org.springframework.web.util.pattern.PathPattern;
import org.springframework.web.util.pattern.PathPatternParser;
import org.springframework.web.util.pattern.PatternParseException;

/**
 * The routes of {@code ratelimiter.web.routes}, compiled once at start-up and matched the same way
 * by every web front door (the servlet interceptor, the reactive filter): the first route whose
 * include patterns match a request's path within the application, whose exclude patterns do not,
 * and whose methods include the request's, applies; a route without methods covers every method
 * but {@code OPTIONS}, which the framework answers itself (discovery, CORS) and which a route
 * charges only when it names it. Each route knows who a request is
 * charged to ({@link KeySource}): its key expression is parsed here, so a syntax error stops
 * start-up naming the property.
 */
public final class RateLimitRoutes {

  private static final Log LOG = LogFactory.getLog(RateLimitRoutes.class);
  /**
   * Key expressions run on every request: compiled to bytecode once they have run (those SpEL can
   * compile), interpreted otherwise.
   */
  private static final SpelExpressionParser PARSER = new SpelExpressionParser(
      new SpelParserConfiguration(SpelCompilerMode.MIXED, RateLimitRoutes.class.getClassLoader()));
  /** The method a route covers only when it names it. */
  private static final String OPTIONS = "OPTIONS";
  private static final Set<String> METHODS =
      Set.of("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE");

  private final List<Route> routes;

  private RateLimitRoutes(List<Route> routes) {
    this.routes = List.copyOf(routes);
  }

  /**
   * Compiles the configured routes.
   *
   * @param configured the routes as bound from {@code ratelimiter.web.routes}
   * @param limits how bodies are read: a route's model source defaults to theirs, and may read the
   *     body only while bodies are read
   * @param beans resolves the {@code @bean} references of key expressions, or {@code null} for none
   * @return the routes
   * @throws InvalidRateLimitPropertyException naming the first invalid route property
   */
  public static RateLimitRoutes of(List<RateLimiterWebProperties.Route> configured, BodyLimits limits,
      @Nullable BeanResolver beans) {
    List<Route> routes = new ArrayList<>();
    for (int i = 0; i < configured.size(); i++) {
      RateLimiterWebProperties.Route r = configured.get(i);
      String path = "ratelimiter.web.routes[" + i + "]";
      if (r.getInclude().isEmpty()) {
        throw new InvalidRateLimitPropertyException(
            path + ".include", null, "at least one path pattern, for example /v1/**");
      }
      Expression expression = keyExpression(path, r);
      routes.add(new Route(
          patterns(path + ".include", r.getInclude()), patterns(path + ".exclude", r.getExclude()),
          methods(path + ".methods", r.getMethods()), r.getPolicy(),
          modelSource(path + ".model-source", r.getModelSource(), limits),
          expression != null ? KeySource.EXPRESSION : r.getKey() != null ? r.getKey() : KeySource.API_KEY,
          expression, beans, path + ".key-expression"));
    }
    return new RateLimitRoutes(routes);
  }

  /**
   * Returns whether no route is configured.
   *
   * @return whether there is none
   */
  public boolean isEmpty() {
    return routes.isEmpty();
  }

  /**
   * Returns the route that applies to a request.
   *
   * @param path the request's path within the application
   * @param method the request's HTTP method
   * @return the first matching route, or {@code null} when none matches
   */
  public @Nullable Route match(PathContainer path, String method) {
    for (Route r : routes) {
      if (r.matches(path, method)) {
        return r;
      }
    }
    return null;
  }

  /** The route's parsed key expression, or null when it keys on a built-in source. */
  private static @Nullable Expression keyExpression(String path, RateLimiterWebProperties.Route r) {
    String text = r.getKeyExpression();
    if (r.getKey() == KeySource.EXPRESSION) {
      throw new InvalidRateLimitPropertyException(path + ".key", "expression",
          "api-key, principal or client-ip (set key-expression for an expression)");
    }
    if (text == null) {
      return null;
    }
    if (r.getKey() != null) {
      throw new InvalidRateLimitPropertyException(path + ".key-expression", text,
          "unset while " + path + ".key is set: a route is keyed by one or the other");
    }
    if (text.isBlank()) {
      throw new InvalidRateLimitPropertyException(path + ".key-expression", text,
          "a SpEL expression, for example header('X-Tenant')");
    }
    try {
      return PARSER.parseExpression(text);
    } catch (ParseException e) {
      throw new InvalidRateLimitPropertyException(path + ".key-expression", text,
          "a SpEL expression, for example header('X-Tenant') (" + e.getMessage() + ")");
    }
  }

  private static Set<String> methods(String path, List<String> configured) {
    Set<String> methods = new LinkedHashSet<>();
    for (int j = 0; j < configured.size(); j++) {
      String m = configured.get(j) == null ? "" : configured.get(j).trim().toUpperCase(Locale.ROOT);
      if (!METHODS.contains(m)) {
        throw new InvalidRateLimitPropertyException(path + "[" + j + "]", configured.get(j),
            "an HTTP method, one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS, TRACE");
      }
      methods.add(m);
    }
    return methods;
  }

  /**
   * A route's model source, validated: the default when unset; one that reads the body only while
   * bodies are read.
   */
  private static ModelSource modelSource(
      String property, @Nullable ModelSource configured, BodyLimits limits) {
    if (configured == null) {
      return limits.defaultModelSource();
    }
    if (!limits.readBodies() && configured.readsBody()) {
      throw new InvalidRateLimitPropertyException(property,
          configured.name().toLowerCase(Locale.ROOT).replace('_', '-'),
          "query or none while ratelimiter.web.model-from-body is false (the body is not read)");
    }
    return configured;
  }

  private static List<PathPattern> patterns(String path, List<String> patterns) {
    List<PathPattern> parsed = new ArrayList<>();
    for (int j = 0; j < patterns.size(); j++) {
      try {
        parsed.add(PathPatternParser.defaultInstance.parse(patterns.get(j)));
      } catch (PatternParseException e) {
        throw new InvalidRateLimitPropertyException(path + "[" + j + "]", patterns.get(j),
            "a Spring path pattern, for example /v1/** (" + e.getMessage() + ")");
      }
    }
    return parsed;
  }

  /** A compiled route. */
  public static final class Route {

    private final List<PathPattern> include;
    private final List<PathPattern> exclude;
    private final Set<String> methods;
    private final @Nullable String policy;
    private final ModelSource modelSource;
    private final KeySource keySource;
    private final @Nullable Expression keyExpression;
    private final @Nullable BeanResolver beans;
    private final String expressionProperty;

    private Route(List<PathPattern> include, List<PathPattern> exclude, Set<String> methods,
        @Nullable String policy, ModelSource modelSource, KeySource keySource,
        @Nullable Expression keyExpression, @Nullable BeanResolver beans, String expressionProperty) {
      this.include = List.copyOf(include);
      this.exclude = List.copyOf(exclude);
      this.methods = Set.copyOf(methods);
      this.policy = policy;
      this.modelSource = modelSource;
      this.keySource = keySource;
      this.keyExpression = keyExpression;
      this.beans = beans;
      this.expressionProperty = expressionProperty;
    }

    /**
     * Returns the policy the route charges.
     *
     * @return the policy, or {@code null} for the default policy
     */
    public @Nullable String policy() {
      return policy;
    }

    /**
     * Returns where the route reads a request's model.
     *
     * @return the source
     */
    public ModelSource modelSource() {
      return modelSource;
    }

    /**
     * Returns where the route finds who a request is charged to.
     *
     * @return the source; {@link KeySource#API_KEY} is the application's key resolver's
     */
    public KeySource keySource() {
      return keySource;
    }

    /**
     * Returns whether finding the caller needs the request's principal: a front door whose
     * principal is resolved asynchronously resolves it first only then.
     *
     * @return whether the route keys on the principal or on an expression
     */
    public boolean needsPrincipal() {
      return keySource == KeySource.PRINCIPAL || keySource == KeySource.EXPRESSION;
    }

    /**
     * Returns whether the route covers a request.
     *
     * @param path the request's path within the application
     * @param method the request's HTTP method
     * @return whether its method is one of the route's (or the route names none), an include
     *     pattern matches its path and no exclude pattern does
     */
    public boolean matches(PathContainer path, String method) {
      if (methods.isEmpty() ? OPTIONS.equals(method) : !methods.contains(method)) {
        return false; // the framework answers an OPTIONS request unless a route names it
      }
      for (PathPattern p : exclude) {
        if (p.matches(path)) {
          return false;
        }
      }
      for (PathPattern p : include) {
        if (p.matches(path)) {
          return true;
        }
      }
      return false;
    }

    /**
     * Returns what the route's source finds of the caller, for a source other than the API key:
     * the principal's name, the client's address, or what the key expression gives.
     *
     * @param request the native request ({@code #request} in the expression)
     * @param view the request as the expression sees it
     * @return the value, or {@code null} when the source finds none
     * @throws InvalidRateLimitRequestException if the expression cannot be evaluated on the request,
     *     or a method it calls throws (a 400 that names neither the expression nor anything
     *     internal; the failure is logged at debug level with the property)
     * @throws IllegalStateException if the route keys on the API key
     */
    public @Nullable String keyValue(Object request, RouteKeyRequest view) {
      switch (keySource) {
        case PRINCIPAL:
          return view.getPrincipal();
        case CLIENT_IP:
          return view.getClientIp();
        case EXPRESSION:
          return evaluate(request, view);
        default:
          throw new IllegalStateException("a route keyed on the API key uses the key resolver");
      }
    }

    private @Nullable String evaluate(Object request, RouteKeyRequest view) {
      StandardEvaluationContext context = new StandardEvaluationContext(view);
      context.setVariable("request", request);
      if (beans != null) {
        context.setBeanResolver(beans);
      }
      try {
        Object value = keyExpression.getValue(context);
        return value == null ? null : value.toString();
      } catch (InvalidRateLimitRequestException e) {
        throw e; // the request's own fault, already a 400 (two different values of a header)
      } catch (RuntimeException e) { // or thrown as is by a method the expression calls
        if (LOG.isDebugEnabled()) {
          LOG.debug(expressionProperty + " cannot be evaluated on " + view + ": "
              + (e instanceof EvaluationException ? e.getMessage() : e.getClass().getName()));
        }
        throw new InvalidRateLimitRequestException(
            "The request's rate-limit key cannot be read from it.", e);
      }
    }
  }
}

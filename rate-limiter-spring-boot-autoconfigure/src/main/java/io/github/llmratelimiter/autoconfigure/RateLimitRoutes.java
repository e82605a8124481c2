package io.github.llmratelimiter.autoconfigure;

import io.github.llmratelimiter.gateway.BodyLimits;
import io.github.llmratelimiter.gateway.InvalidRateLimitPropertyException;
import io.github.llmratelimiter.gateway.ModelSource;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.jspecify.annotations.Nullable;
import org.springframework.http.server.PathContainer;
import org.springframework.web.util.pattern.PathPattern;
import org.springframework.web.util.pattern.PathPatternParser;
import org.springframework.web.util.pattern.PatternParseException;

/**
 * The routes of {@code ratelimiter.web.routes}, compiled once and matched the same way by every web
 * front door (the servlet interceptor, the reactive filter): the first route whose include patterns
 * match a request's path within the application, and whose exclude patterns do not, applies.
 */
public final class RateLimitRoutes {

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
   * @return the routes
   * @throws InvalidRateLimitPropertyException naming the first invalid route property
   */
  public static RateLimitRoutes of(List<RateLimiterProperties.Route> configured, BodyLimits limits) {
    List<Route> routes = new ArrayList<>();
    for (int i = 0; i < configured.size(); i++) {
      RateLimiterProperties.Route r = configured.get(i);
      String path = "ratelimiter.web.routes[" + i + "]";
      if (r.getInclude().isEmpty()) {
        throw new InvalidRateLimitPropertyException(
            path + ".include", null, "at least one path pattern, for example /v1/**");
      }
      routes.add(new Route(
          patterns(path + ".include", r.getInclude()), patterns(path + ".exclude", r.getExclude()),
          r.getPolicy(), modelSource(path + ".model-source", r.getModelSource(), limits)));
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
   * Returns the route that applies to a path.
   *
   * @param path the request's path within the application
   * @return the first matching route, or {@code null} when none matches
   */
  public @Nullable Route match(PathContainer path) {
    for (Route r : routes) {
      if (r.matches(path)) {
        return r;
      }
    }
    return null;
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

  /**
   * A compiled route.
   *
   * @param include the patterns of the paths it covers
   * @param exclude the patterns of the paths it leaves out, although included
   * @param policy the policy it charges, or {@code null} for the default policy
   * @param modelSource where it reads a request's model
   */
  public record Route(List<PathPattern> include, List<PathPattern> exclude, @Nullable String policy,
      ModelSource modelSource) {

    /**
     * Validates the route and copies its patterns.
     *
     * @throws IllegalArgumentException if the patterns or the source are null
     */
    public Route {
      if (include == null || exclude == null || modelSource == null) {
        throw new IllegalArgumentException("include, exclude and modelSource must not be null");
      }
      include = List.copyOf(include);
      exclude = List.copyOf(exclude);
    }

    /**
     * Returns whether the route covers a path.
     *
     * @param path the request's path within the application
     * @return whether an include pattern matches it and no exclude pattern does
     */
    public boolean matches(PathContainer path) {
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
  }
}

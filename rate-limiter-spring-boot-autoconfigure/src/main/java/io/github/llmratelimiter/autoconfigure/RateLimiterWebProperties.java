package io.github.llmratelimiter.autoconfigure;

import io.github.llmratelimiter.gateway.KeySource;
import io.github.llmratelimiter.gateway.ModelSource;
import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.util.unit.DataSize;

/**
 * Configuration of the web front doors (Spring MVC and WebFlux), under the prefix {@code
 * ratelimiter.web}: the routes they limit, how much of a request body they read, and their problem
 * responses.
 */
@ConfigurationProperties("ratelimiter.web")
public class RateLimiterWebProperties {

  /**
   * Whether the web front door (the Spring MVC interceptor and filters, or the WebFlux filter) and
   * its problem responses are enabled.
   */
  private boolean enabled = true;

  /** Routes the web front door limits; the first route whose patterns match a request applies. */
  private List<Route> routes = new ArrayList<>();

  /**
   * Whether the limiter reads request bodies: a JSON body's "model" field and its model-token
   * estimate, and the size of a body sent without a Content-Length. With false, a route's
   * model-source defaults to "query" and may not be "body" or "body-then-query".
   */
  private boolean modelFromBody = true;

  /**
   * The largest request body a limited request may carry; a larger one gets a 413 problem and is
   * not charged, whether its Content-Length declares it (any method) or a POST, PUT or PATCH body
   * (those the limiter reads) streams past the limit. 4MB holds a
   * text prompt that fills a context window of about a million tokens (about 4 bytes a token);
   * larger bodies are mostly inline images or audio, for which raise it. A body sent without a
   * Content-Length is buffered up to this size before the call is charged.
   */
  private DataSize maxBody = DataSize.ofMegabytes(4);

  /**
   * The largest JSON request body the limiter parses for its "model" field, its model-token
   * estimate and its checks (max_tokens, n); unset means max-body, and it may not exceed max-body.
   * On a route whose model-source reads the body, a larger JSON body gets a 413 problem: its
   * budget cannot be known.
   */
  private @Nullable DataSize maxBodyPeek;

  /** The "type" URI of the 429 problem response. */
  private String problemType = "urn:llmratelimiter:problem:rate-limited";

  /**
   * Whether, on Tomcat, the servlet front door keeps an asynchronous request (a streamed response)
   * on its connection when Tomcat handles an async timeout raised for the request before it there:
   * Tomcat (11.0.22 to 11.0.29 at least) otherwise loses the request's dispatch, and its response
   * never ends. The front door makes that likelier, since a request waits for the store's answer
   * before its handler starts async.
   */
  private boolean tomcatAsyncTimeoutGuard = true;

  public boolean isEnabled() {
    return enabled;
  }

  public void setEnabled(boolean enabled) {
    this.enabled = enabled;
  }

  public List<Route> getRoutes() {
    return routes;
  }

  public void setRoutes(List<Route> routes) {
    this.routes = routes;
  }

  public boolean isModelFromBody() {
    return modelFromBody;
  }

  public void setModelFromBody(boolean modelFromBody) {
    this.modelFromBody = modelFromBody;
  }

  public DataSize getMaxBody() {
    return maxBody;
  }

  public void setMaxBody(DataSize maxBody) {
    this.maxBody = maxBody;
  }

  public @Nullable DataSize getMaxBodyPeek() {
    return maxBodyPeek;
  }

  public void setMaxBodyPeek(@Nullable DataSize maxBodyPeek) {
    this.maxBodyPeek = maxBodyPeek;
  }

  public String getProblemType() {
    return problemType;
  }

  public void setProblemType(String problemType) {
    this.problemType = problemType;
  }

  public boolean isTomcatAsyncTimeoutGuard() {
    return tomcatAsyncTimeoutGuard;
  }

  public void setTomcatAsyncTimeoutGuard(boolean tomcatAsyncTimeoutGuard) {
    this.tomcatAsyncTimeoutGuard = tomcatAsyncTimeoutGuard;
  }

  /**
   * One route of the web front door: path patterns (and HTTP methods), the policy that limits
   * them, and who a request is charged to.
   */
  public static class Route {

    /** Path patterns the route covers (Spring PathPattern syntax, for example "/v1/**"). */
    private List<String> include = new ArrayList<>();

    /**
     * HTTP methods the route covers, for example POST; empty covers every method but OPTIONS
     * (which the framework answers itself; name it to charge it). A request of another method is
     * matched against the next routes.
     */
    private List<String> methods = new ArrayList<>();

    /**
     * Who a request is charged to: "api-key" (the API key it carries; the default), "principal"
     * (the authenticated user's name, as "principal:<name>") or "client-ip" (the connection's
     * remote address, as "ip:<address>", an IPv6 client as its /64 network, rewritten from
     * X-Forwarded-For or Forwarded only when server.forward-headers-strategy is native or
     * framework). A request without one follows missing-key.
     */
    private @Nullable KeySource key;

    /**
     * A SpEL expression for who a request is charged to, instead of "key": evaluated on the
     * request (header('X-Tenant'), method, path, clientIp, principal), with #request the native
     * request (HttpServletRequest, or ServerHttpRequest in WebFlux) and @bean references. Parsed at
     * start-up; a request for which it gives null or blank follows missing-key.
     */
    private @Nullable String keyExpression;

    /** Path patterns excluded from the route even when an include pattern matches. */
    private List<String> exclude = new ArrayList<>();

    /** The policy applied to the route; the default policy when unset. */
    private @Nullable String policy;

    /**
     * Where the route's model is read: "body-then-query" (the JSON body's "model", or a form
     * body's model field; the "model" query parameter only when the body names none), "body"
     * (the body only), "query" (the query string only) or "none" (no model). Unset means
     * body-then-query, or query when model-from-body is false. Choose the source the handler
     * reads the model from: the budget charged is then the budget of the model served.
     */
    private @Nullable ModelSource modelSource;

    public List<String> getInclude() {
      return include;
    }

    public void setInclude(List<String> include) {
      this.include = include;
    }

    public List<String> getExclude() {
      return exclude;
    }

    public void setExclude(List<String> exclude) {
      this.exclude = exclude;
    }

    public @Nullable String getPolicy() {
      return policy;
    }

    public void setPolicy(@Nullable String policy) {
      this.policy = policy;
    }

    public @Nullable ModelSource getModelSource() {
      return modelSource;
    }

    public void setModelSource(@Nullable ModelSource modelSource) {
      this.modelSource = modelSource;
    }

    public List<String> getMethods() {
      return methods;
    }

    public void setMethods(List<String> methods) {
      this.methods = methods;
    }

    public @Nullable KeySource getKey() {
      return key;
    }

    public void setKey(@Nullable KeySource key) {
      this.key = key;
    }

    public @Nullable String getKeyExpression() {
      return keyExpression;
    }

    public void setKeyExpression(@Nullable String keyExpression) {
      this.keyExpression = keyExpression;
    }
  }
}

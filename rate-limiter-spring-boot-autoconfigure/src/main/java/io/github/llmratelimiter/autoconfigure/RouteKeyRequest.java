package io.github.llmratelimiter.autoconfigure;

import io.github.llmratelimiter.gateway.InvalidRateLimitRequestException;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * A request as a route's key expression sees it ({@code ratelimiter.web.routes[n].key-expression}):
 * the root object of the expression, the same on every web stack, so that one expression runs on
 * Spring MVC and WebFlux alike. The native request is the variable {@code #request}.
 *
 * <pre>{@code
 * key-expression: "header('X-Tenant')"
 * key-expression: "principal ?: clientIp"
 * key-expression: "@tenants.of(header('X-Tenant'))"
 * }</pre>
 */
public final class RouteKeyRequest {

  private final String method;
  private final String path;
  private final @Nullable String clientIp;
  private final @Nullable String principal;
  private final Function<String, @Nullable String> headers;

  /**
   * Creates the view of one request.
   *
   * @param method the request's HTTP method
   * @param path the request's path within the application
   * @param clientIp the client's address ({@link io.github.llmratelimiter.gateway.internal.HttpFields#clientAddress}), or {@code null}
   * @param principal the authenticated principal's name, or {@code null}
   * @param headers the value of a header by name, or {@code null} ({@link #oneValue} for a header
   *     sent more than once)
   * @throws IllegalArgumentException if the method, path or headers are null
   */
  public RouteKeyRequest(String method, String path, @Nullable String clientIp,
      @Nullable String principal, Function<String, @Nullable String> headers) {
    if (method == null || path == null || headers == null) {
      throw new IllegalArgumentException("method, path and headers must not be null");
    }
    this.method = method;
    this.path = path;
    this.clientIp = clientIp;
    this.principal = principal;
    this.headers = headers;
  }

  /**
   * Returns the request's HTTP method ({@code method} in an expression).
   *
   * @return the method, for example {@code POST}
   */
  public String getMethod() {
    return method;
  }

  /**
   * Returns the request's path within the application ({@code path}).
   *
   * @return the path
   */
  public String getPath() {
    return path;
  }

  /**
   * Returns the client's address ({@code clientIp}): the connection's remote address, rewritten
   * from forwarded headers only by the server's own support ({@code
   * server.forward-headers-strategy}); an IPv6 client is its /64 network, as {@link
   * io.github.llmratelimiter.gateway.internal.HttpFields#clientAddress} names it.
   *
   * @return the address, or {@code null} when the server knows none
   */
  public @Nullable String getClientIp() {
    return clientIp;
  }

  /**
   * Returns the name of the request's authenticated principal ({@code principal}).
   *
   * @return the name, or {@code null} when the request is not authenticated
   */
  public @Nullable String getPrincipal() {
    return principal;
  }

  /**
   * Returns the value of a request header ({@code header('X-Tenant')}); a header sent more than
   * once with different values is rejected, so that the key never differs from what the
   * application reads.
   *
   * @param name the header's name, in any case
   * @return its value, or {@code null} when the request has none
   * @throws InvalidRateLimitRequestException if the request sends it with different values (a 400)
   */
  public @Nullable String header(String name) {
    return headers.apply(name);
  }

  /**
   * Returns the one value of a header the request may send more than once: its value when every
   * copy is the same.
   *
   * @param values the header's values, in order, or {@code null} when it is absent
   * @return the value, or {@code null} when there is none
   * @throws InvalidRateLimitRequestException if two values differ
   */
  public static @Nullable String oneValue(@Nullable Iterable<String> values) {
    String one = null;
    if (values != null) {
      for (String v : values) {
        if (one == null) {
          one = v;
        } else if (!one.equals(v)) {
          throw new InvalidRateLimitRequestException("The request carries a header its rate limit "
              + "is counted by more than once, with different values.", null);
        }
      }
    }
    return one;
  }

  @Override
  public String toString() {
    return "RouteKeyRequest[" + method + " " + path + "]";
  }
}

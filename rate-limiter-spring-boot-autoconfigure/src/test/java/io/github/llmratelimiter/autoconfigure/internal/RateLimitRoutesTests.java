package io.github.llmratelimiter.autoconfigure.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.llmratelimiter.autoconfigure.RateLimiterWebProperties;
import io.github.llmratelimiter.autoconfigure.RouteKeyRequest;
import io.github.llmratelimiter.gateway.BodyLimits;
import io.github.llmratelimiter.gateway.InvalidRateLimitRequestException;
import io.github.llmratelimiter.gateway.KeySource;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.support.StaticListableBeanFactory;
import org.springframework.context.expression.BeanFactoryResolver;
import org.springframework.http.server.PathContainer;

/**
 * The routes without a server: matching by path and method, and key expressions evaluated many
 * times over (past the point where SpEL compiles them) on requests that differ, nulls included.
 */
class RateLimitRoutesTests {

  /** Gives a tenant's key from the native request and a header. */
  public static final class Tenants {
    /**
     * Returns a tenant's key.
     *
     * @param request the native request
     * @param tenant the tenant, or null
     * @return the key, or null without a tenant
     */
    public String of(Object request, String tenant) {
      return tenant == null ? null : request + "/" + tenant;
    }
  }

  private static RateLimitRoutes routes(String... expressions) {
    List<RateLimiterWebProperties.Route> configured = new ArrayList<>();
    for (String e : expressions) {
      RateLimiterWebProperties.Route r = new RateLimiterWebProperties.Route();
      r.setInclude(List.of("/r" + configured.size()));
      r.setKeyExpression(e);
      configured.add(r);
    }
    StaticListableBeanFactory beans = new StaticListableBeanFactory(Map.of("tenants", new Tenants()));
    return RateLimitRoutes.of(configured, BodyLimits.defaults(), new BeanFactoryResolver(beans));
  }

  private static RateLimitRoutes.Route route(RateLimitRoutes routes, int i) {
    return routes.match(PathContainer.parsePath("/r" + i), "POST");
  }

  private static RouteKeyRequest request(int i) {
    Map<String, String> headers = i % 3 == 0 ? Map.of() : Map.of("X-Tenant", "t" + i);
    return new RouteKeyRequest("POST", "/r", i % 2 == 0 ? "10.0.0." + (i % 250) : null,
        i % 5 == 0 ? null : "user" + i, headers::get);
  }

  @Test
  void keyExpressionsGiveTheSameAnswerOnEveryOfAThousandCalls() {
    RateLimitRoutes routes = routes("header('X-Tenant')", "principal ?: clientIp",
        "@tenants.of(#request, header('X-Tenant'))", "method + ':' + path");
    for (int i = 0; i < 1_000; i++) {
      RouteKeyRequest view = request(i);
      Object nativeRequest = "native-" + i;
      assertThat(route(routes, 0).keyValue(nativeRequest, view)).isEqualTo(view.header("X-Tenant"));
      assertThat(route(routes, 1).keyValue(nativeRequest, view))
          .isEqualTo(view.getPrincipal() != null ? view.getPrincipal() : view.getClientIp());
      assertThat(route(routes, 2).keyValue(nativeRequest, view))
          .isEqualTo(i % 3 == 0 ? null : "native-" + i + "/t" + i);
      assertThat(route(routes, 3).keyValue(nativeRequest, view)).isEqualTo("POST:/r");
    }
  }

  @Test
  void anExpressionThatFailsOnARequestIsA400ThatNamesNothingOfIt() {
    RateLimitRoutes routes = routes("header('X-Tenant').toUpperCase()");
    for (int i = 1; i < 300; i++) { // many calls (SpEL may compile it meanwhile), some with a null
      RouteKeyRequest view = request(i % 3 == 0 ? i + 1 : i);
      assertThat(route(routes, 0).keyValue("r", view)).isEqualTo(view.header("X-Tenant").toUpperCase());
    }
    assertThatThrownBy(() -> route(routes, 0).keyValue("r", request(3)))
        .isInstanceOf(InvalidRateLimitRequestException.class)
        .hasMessage("The request's rate-limit key cannot be read from it.");
  }

  @Test
  void aRouteMatchesItsMethodsOnlyAndBuiltInSourcesReadTheView() {
    List<RateLimiterWebProperties.Route> configured = new ArrayList<>();
    for (KeySource source : new KeySource[] {KeySource.PRINCIPAL, KeySource.CLIENT_IP}) {
      RateLimiterWebProperties.Route r = new RateLimiterWebProperties.Route();
      r.setInclude(List.of("/v1/**"));
      r.setMethods(List.of(source == KeySource.PRINCIPAL ? "post" : "GET"));
      r.setKey(source);
      configured.add(r);
    }
    RateLimitRoutes routes = RateLimitRoutes.of(configured, BodyLimits.defaults(), null);
    PathContainer path = PathContainer.parsePath("/v1/chat");
    RouteKeyRequest view = request(4);
    assertThat(routes.match(path, "POST").keySource()).isEqualTo(KeySource.PRINCIPAL);
    assertThat(routes.match(path, "POST").keyValue("r", view)).isEqualTo("user4");
    assertThat(routes.match(path, "GET").keySource()).isEqualTo(KeySource.CLIENT_IP);
    assertThat(routes.match(path, "GET").keyValue("r", view)).isEqualTo("10.0.0.4");
    assertThat(routes.match(path, "DELETE")).isNull();
    assertThat(routes.match(path, "post")).isNull(); // HTTP methods are case-sensitive
    assertThat(routes.match(PathContainer.parsePath("/v2/chat"), "POST")).isNull();
  }

  @Test
  void aRouteWithoutMethodsCoversEveryMethodButOptionsWhichARouteChargesOnlyWhenItNamesIt() {
    RateLimiterWebProperties.Route any = new RateLimiterWebProperties.Route();
    any.setInclude(List.of("/v1/chat"));
    any.setPolicy("any");
    RateLimiterWebProperties.Route options = new RateLimiterWebProperties.Route();
    options.setInclude(List.of("/v1/**"));
    options.setMethods(List.of("OPTIONS"));
    options.setPolicy("options");
    PathContainer chat = PathContainer.parsePath("/v1/chat");
    RateLimitRoutes both = RateLimitRoutes.of(List.of(any, options), BodyLimits.defaults(), null);
    for (String method : List.of("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "TRACE")) {
      assertThat(both.match(chat, method).policy()).as(method).isEqualTo("any");
    }
    assertThat(both.match(chat, "OPTIONS").policy()).isEqualTo("options"); // the next route names it
    RateLimitRoutes withoutMethods = RateLimitRoutes.of(List.of(any), BodyLimits.defaults(), null);
    assertThat(withoutMethods.match(chat, "OPTIONS")).isNull();
    assertThat(withoutMethods.match(chat, "POST").policy()).isEqualTo("any");
  }
}

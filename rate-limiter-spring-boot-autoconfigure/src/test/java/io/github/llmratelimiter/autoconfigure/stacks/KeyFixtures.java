package io.github.llmratelimiter.autoconfigure.stacks;

import jakarta.servlet.Filter;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletRequestWrapper;
import java.security.Principal;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.Ordered;
import org.springframework.http.server.reactive.ServerHttpRequest;
import org.springframework.web.server.WebFilter;
import org.springframework.util.ClassUtils;
import reactor.core.publisher.Mono;

/**
 * What the key scenarios need of each stack: an authentication stand-in that makes the {@value
 * #USER_HEADER} header's value the request's principal (a servlet filter on Spring MVC, a web
 * filter on WebFlux; each stack ignores the other's, and the servlet one exists only where the
 * servlet API does), and a bean that key expressions call with the native request.
 */
@Configuration(proxyBeanMethods = false)
public class KeyFixtures {

  /** The header whose value the stand-in authenticates as the principal. */
  public static final String USER_HEADER = "X-Test-User";

  /** The servlet stand-in, only where the servlet API is (WebFlux-only builds have none). */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "jakarta.servlet.Filter")
  static class ServletAuthentication {

    @Bean
    Filter testAuthenticationFilter() {
      return (request, response, chain) -> {
        HttpServletRequest http = (HttpServletRequest) request;
        String user = http.getHeader(USER_HEADER);
        chain.doFilter(user == null ? request : new HttpServletRequestWrapper(http) {
          @Override
          public Principal getUserPrincipal() {
            return () -> user;
          }
        }, response);
      };
    }
  }

  @Bean
  WebFilter testAuthenticationWebFilter() {
    return new OrderedAuthentication();
  }

  @Bean
  TenantKeys tenantKeys() {
    return new TenantKeys();
  }

  /** The reactive stand-in, ahead of the limiter's filter. */
  static final class OrderedAuthentication implements WebFilter, Ordered {

    @Override
    public Mono<Void> filter(
        org.springframework.web.server.ServerWebExchange exchange,
        org.springframework.web.server.WebFilterChain chain) {
      String user = exchange.getRequest().getHeaders().getFirst(USER_HEADER);
      return chain.filter(user == null ? exchange
          : exchange.mutate().principal(Mono.just((Principal) () -> user)).build());
    }

    @Override
    public int getOrder() {
      return -100;
    }
  }

  /** A bean that key expressions call: it names the tenant and the kind of native request it got. */
  public static final class TenantKeys {

    /**
     * Returns a tenant's key, naming the stack whose native request the expression passed.
     *
     * @param request {@code #request}
     * @param tenant the tenant, or {@code null}
     * @return {@code tenant:<tenant>@servlet} or {@code @reactive}; {@code null} without a tenant
     */
    public String of(Object request, String tenant) {
      if (tenant == null) {
        return null;
      }
      String stack = request instanceof ServerHttpRequest ? "reactive"
          : ClassUtils.getAllInterfacesAsSet(request).stream()
              .anyMatch(i -> i.getName().equals("jakarta.servlet.http.HttpServletRequest"))
              ? "servlet" : request.getClass().getName();
      return "tenant:" + tenant + "@" + stack;
    }

    /**
     * Returns a known tenant as it is, and fails on any other, as an application's lookup does.
     *
     * @param tenant the tenant
     * @return the tenant, when it starts with {@code known-}
     * @throws IllegalArgumentException for an unknown tenant (a {@code NullPointerException} for none)
     */
    public String known(String tenant) {
      if (!tenant.startsWith("known-")) {
        throw new IllegalArgumentException("unknown tenant " + tenant);
      }
      return tenant;
    }
  }
}

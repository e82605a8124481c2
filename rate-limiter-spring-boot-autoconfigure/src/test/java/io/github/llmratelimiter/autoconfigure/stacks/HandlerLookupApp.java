package io.github.llmratelimiter.autoconfigure.stacks;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.webflux.autoconfigure.WebFluxRegistrations;
import org.springframework.context.annotation.Bean;
import org.springframework.core.Ordered;
import org.springframework.http.server.reactive.ServerHttpRequest;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.method.HandlerMethod;
import org.springframework.web.reactive.function.server.RouterFunction;
import org.springframework.web.reactive.function.server.RouterFunctions;
import org.springframework.web.reactive.function.server.ServerResponse;
import org.springframework.web.reactive.result.method.annotation.RequestMappingHandlerMapping;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.WebFilter;
import reactor.core.publisher.Mono;
import reactor.util.context.Context;

/**
 * A WebFlux application whose annotated controllers' mapping counts its lookups (and answers
 * later, on another thread, when the request has the header {@code X-Later}, and whether it ran in
 * the Reactor context a filter before the limiter's wrote): a controller that
 * answers with its path variable and the body it read, a router function that does the same, and
 * a filter after the limiter's that rewrites {@code /echo/NAME} to {@code /echo/renamed-NAME} when
 * the request has the header {@code X-Rename}.
 */
@SpringBootConfiguration
@EnableAutoConfiguration
public class HandlerLookupApp {

  /**
   * The properties: one route over every path of the application, and no static resources (whose
   * handler would take every path no controller has).
   */
  static final String[] PROPERTIES = {
      "spring.web.resources.add-mappings=false",
      "ratelimiter.policies.chat.rpm.limit=100",
      "ratelimiter.web.routes[0].include=/**",
      "ratelimiter.web.routes[0].policy=chat"};

  /** The annotated controllers' handler lookups since start-up. */
  static final AtomicInteger LOOKUPS = new AtomicInteger();

  /** The key a filter before the limiter's puts in the request's Reactor context. */
  static final String CONTEXT_KEY = "handler-lookup-test";

  /** The lookups that found {@link #CONTEXT_KEY} in their Reactor context. */
  static final AtomicInteger LOOKUPS_IN_CONTEXT = new AtomicInteger();

  /** The controller. */
  @RestController
  public static class Controller {

    /**
     * Answers with the path variable and the body.
     *
     * @param name the path variable
     * @param body the request body
     * @return {@code NAME:BODY}
     */
    @PostMapping("/echo/{name}")
    public Mono<String> echo(@PathVariable String name, @RequestBody String body) {
      return Mono.just(name + ":" + body);
    }
  }

  @Bean
  WebFluxRegistrations countingMappings() {
    return new WebFluxRegistrations() {
      @Override
      public RequestMappingHandlerMapping getRequestMappingHandlerMapping() {
        return new RequestMappingHandlerMapping() {
          @Override
          public Mono<HandlerMethod> getHandlerInternal(ServerWebExchange exchange) {
            return Mono.deferContextual(context -> {
              if (context.hasKey(CONTEXT_KEY)) {
                LOOKUPS_IN_CONTEXT.incrementAndGet();
              }
              return lookUp(exchange);
            });
          }

          private Mono<HandlerMethod> lookUp(ServerWebExchange exchange) {
            LOOKUPS.incrementAndGet();
            Mono<HandlerMethod> found = super.getHandlerInternal(exchange);
            // a mapping that answers later: after it was asked, on another thread
            return exchange.getRequest().getHeaders().containsHeader("X-Later")
                ? found.delaySubscription(Duration.ofMillis(5)) : found;
          }
        };
      }
    };
  }

  @Bean
  RouterFunction<ServerResponse> function() {
    return RouterFunctions.route()
        .POST("/function/{name}", request -> request.bodyToMono(String.class)
            .flatMap(body -> ServerResponse.ok()
                .bodyValue(request.pathVariable("name") + ":" + body)))
        .build();
  }

  /** A filter before the limiter's that puts {@link #CONTEXT_KEY} in the Reactor context. */
  @Bean
  WebFilter contextWriting() {
    return ordered(-10, (exchange, chain) ->
        chain.filter(exchange).contextWrite(Context.of(CONTEXT_KEY, "yes")));
  }

  /** A filter after the limiter's that moves {@code /echo/NAME} to {@code /echo/renamed-NAME}. */
  @Bean
  WebFilter rewriting() {
    return ordered(10, (exchange, chain) -> {
      String path = exchange.getRequest().getPath().value();
      if (!exchange.getRequest().getHeaders().containsHeader("X-Rename")) {
        return chain.filter(exchange);
      }
      ServerHttpRequest moved = exchange.getRequest().mutate()
          .path("/echo/renamed-" + path.substring("/echo/".length())).build();
      return chain.filter(exchange.mutate().request(moved).build());
    });
  }

  /** A web filter at an order relative to the limiter's (0). */
  private static WebFilter ordered(int order, WebFilter filter) {
    class At implements WebFilter, Ordered {
      @Override
      public Mono<Void> filter(ServerWebExchange exchange,
          org.springframework.web.server.WebFilterChain chain) {
        return filter.filter(exchange, chain);
      }

      @Override
      public int getOrder() {
        return order;
      }
    }
    return new At();
  }
}

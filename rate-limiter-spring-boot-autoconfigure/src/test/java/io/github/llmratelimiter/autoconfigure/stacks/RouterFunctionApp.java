package io.github.llmratelimiter.autoconfigure.stacks;

import io.github.llmratelimiter.gateway.RateLimited;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication.Type;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;
import reactor.core.publisher.Mono;

/**
 * An application that serves {@code /both} twice: from a {@code RouterFunction} and from a {@code
 * @RateLimited} controller method. The dispatcher picks the function (both stacks ask their router
 * functions first); a route covers the path as well.
 */
@SpringBootConfiguration
@EnableAutoConfiguration
public class RouterFunctionApp {

  /** The properties: one route over {@code /both}, and the annotation's own policy. */
  static final String[] PROPERTIES = {
      "ratelimiter.policies.routed.rpm.limit=1",
      "ratelimiter.policies.annotated.rpm.limit=2",
      "ratelimiter.web.routes[0].include=/both",
      "ratelimiter.web.routes[0].policy=routed"};

  /** The annotated controller (a member component: registered with the configuration). */
  @RestController
  public static class Controller {

    /**
     * Answers from the controller.
     *
     * @return "controller"
     */
    @RateLimited(policy = "annotated")
    @GetMapping("/both")
    public Mono<String> both() {
      return Mono.just("controller");
    }
  }

  /** The router function of a WebFlux application. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnWebApplication(type = Type.REACTIVE)
  static class ReactiveFunctions {

    @Bean
    org.springframework.web.reactive.function.server.RouterFunction<
        org.springframework.web.reactive.function.server.ServerResponse> both() {
      return org.springframework.web.reactive.function.server.RouterFunctions.route()
          .GET("/both", request -> org.springframework.web.reactive.function.server.ServerResponse
              .ok().bodyValue("function"))
          .build();
    }
  }

  /** The router function of a Spring MVC application. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnWebApplication(type = Type.SERVLET)
  static class ServletFunctions {

    @Bean
    org.springframework.web.servlet.function.RouterFunction<
        org.springframework.web.servlet.function.ServerResponse> both() {
      return org.springframework.web.servlet.function.RouterFunctions.route()
          .GET("/both", request -> org.springframework.web.servlet.function.ServerResponse
              .ok().body("function"))
          .build();
    }
  }
}

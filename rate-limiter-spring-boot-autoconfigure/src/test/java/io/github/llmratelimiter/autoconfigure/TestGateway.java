package io.github.llmratelimiter.autoconfigure;

import io.github.llmratelimiter.gateway.RateLimited;
import java.util.Map;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.http.converter.autoconfigure.HttpMessageConvertersAutoConfiguration;
import org.springframework.boot.jackson.autoconfigure.JacksonAutoConfiguration;
import org.springframework.boot.webmvc.autoconfigure.WebMvcAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.stereotype.Service;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/** A small gateway the web tests run: routed, annotated and mixed handlers, on a manual ticker. */
@Configuration(proxyBeanMethods = false)
public class TestGateway {

  /** The auto-configurations a Spring MVC application with AspectJ has, plus ours. */
  public static final AutoConfigurations MVC = AutoConfigurations.of(
      JacksonAutoConfiguration.class, HttpMessageConvertersAutoConfiguration.class,
      WebMvcAutoConfiguration.class, AopAutoConfiguration.class,
      RateLimiterAutoConfiguration.class,
      io.github.llmratelimiter.autoconfigure.servlet.RateLimiterServletAutoConfiguration.class,
      io.github.llmratelimiter.autoconfigure.aspect.RateLimiterAspectAutoConfiguration.class);

  @Bean
  ManualTicker ticker() {
    return new ManualTicker();
  }

  /** The handlers (a member component: registered with the configuration). */
  @RestController
  public static class Controllers {

    @GetMapping("/v1/routed")
    public String routed() {
      return "routed";
    }

    @PostMapping({"/v1/chat", "/v1/chat-plain"})
    public Map<String, Object> chat(@RequestBody Map<String, Object> body) {
      return Map.of("echo", body.getOrDefault("model", "none"));
    }

    @RateLimited(policy = "annotated")
    @GetMapping("/annotated")
    public String annotated() {
      return "annotated";
    }

    @RateLimited(policy = "routed")
    @GetMapping("/v1/both")
    public String both() {
      return "both";
    }

    @RateLimited(policy = "annotated", cost = "#tokens")
    @GetMapping("/cost")
    public String cost(@RequestParam("tokens") double tokens) {
      return "cost " + tokens;
    }
  }

  /** A non-web bean limited by the annotation, with a SpEL key and cost. */
  @Service
  public static class Tokens {

    @RateLimited(policy = "annotated", key = "#tenant", cost = "#tokens")
    public String spend(String tenant, double tokens) {
      return tenant + " spent " + tokens;
    }
  }
}

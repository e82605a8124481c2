package io.github.llmratelimiter.autoconfigure.stacks;

import io.github.llmratelimiter.gateway.RateLimited;
import java.util.Map;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * An application with one {@code @RateLimited} handler that returns a plain value (not a {@code
 * Mono} or {@code Flux}): Spring MVC charges it before it runs; WebFlux refuses to start with it.
 */
@SpringBootConfiguration
@EnableAutoConfiguration
public class PlainValueApp {

  /** The handler (a member component: registered with the configuration). */
  @RestController
  public static class Models {

    /**
     * Lists the models.
     *
     * @return the list, as a plain value
     */
    @RateLimited(policy = "annotated")
    @GetMapping("/models")
    public Map<String, Object> models() {
      return Map.of("object", "list");
    }
  }
}

package io.github.llmratelimiter.webflux;

import io.github.llmratelimiter.autoconfigure.reactive.ReactiveModelTokens;
import io.github.llmratelimiter.gateway.RateLimited;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;
import reactor.core.publisher.Mono;

/**
 * A WebFlux gateway configured with properties alone: a chat route limited per API key and model
 * ({@code chat}, 3 a minute), a model-token route ({@code llm}, 100 model tokens a minute) whose
 * handler settles its tokens itself, and a handler limited by {@code @RateLimited} ({@code
 * embeddings}, 2 a minute), with every auto-configuration of the class path.
 */
@SpringBootConfiguration
@EnableAutoConfiguration
class ChatGateway {

  /** The window limit of the chat route. */
  static final int LIMIT = 3;

  /** The handlers. */
  @RestController
  static class Handlers {

    @PostMapping("/v1/chat/completions")
    Mono<Map<String, Object>> chat(@RequestBody Map<String, Object> body) {
      return Mono.just(Map.of("model", body.getOrDefault("model", "none")));
    }

    /**
     * Settles its model tokens itself, with the usage its "upstream" reported, before answering a
     * body whose own usage (50) the limiter must then not read.
     */
    @PostMapping("/llm/self-settled")
    Mono<Map<String, Object>> selfSettled(@RequestBody Map<String, Object> body,
        @RequestParam("usage") long usage) {
      return ReactiveModelTokens.current()
          .flatMap(tokens -> Mono.fromCompletionStage(tokens.reconcileAsync(usage)))
          .thenReturn(Map.of("usage", Map.of("total_tokens", 50)));
    }

    @RateLimited(policy = "embeddings")
    @GetMapping("/embeddings")
    Mono<String> embeddings() {
      return Mono.just("embedded");
    }
  }

  /** Starts the gateway on a random port, with extra {@code --name=value}s. */
  static ConfigurableApplicationContext start(String... extra) {
    List<String> args = new ArrayList<>(List.of("--server.port=0", "--spring.main.banner-mode=off",
        "--ratelimiter.policies.chat.scope=api-key-and-model",
        "--ratelimiter.policies.chat.rpm.limit=" + LIMIT,
        "--ratelimiter.policies.embeddings.rpm.limit=2",
        "--ratelimiter.web.routes[0].include=/v1/chat/**",
        "--ratelimiter.web.routes[0].policy=chat",
        "--ratelimiter.policies.llm.tpm.limit=100",
        "--ratelimiter.web.routes[1].include=/llm/**",
        "--ratelimiter.web.routes[1].policy=llm",
        "--management.endpoints.web.exposure.include=ratelimiter"));
    args.addAll(List.of(extra));
    return new SpringApplicationBuilder(ChatGateway.class).run(args.toArray(String[]::new));
  }

  /** The port the gateway listens on. */
  static int port(ConfigurableApplicationContext app) {
    return Integer.parseInt(app.getEnvironment().getProperty("local.server.port"));
  }
}

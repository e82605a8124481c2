package io.github.llmratelimiter.webflux.bench;

import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import tools.jackson.databind.json.JsonMapper;

/**
 * The reactive twin of the sample gateway, for the HTTP run of the benchmarks ({@code bench/run}
 * starts it from this module's test class path): WebFlux on Netty, {@code POST
 * /v1/chat/completions} answering an OpenAI-shaped completion with its {@code usage}, limited by
 * the sample gateway's policies (reserve-then-commit, a per-key level above a per key-and-model
 * level with a bucket and model tokens, the route {@code /v1/chat/**}); a request with {@code
 * "stream": true} is answered as OpenAI streams, one {@code data:} event per word, a last chunk
 * with the {@code usage} and {@code data: [DONE]}. The benchmark's arguments raise the limits, or
 * turn the limiter off.
 */
@SpringBootConfiguration
@EnableAutoConfiguration
public class BenchGateway {

  /** The properties of the sample gateway's {@code application.yml} that limit the chat route. */
  static final Map<String, Object> SAMPLE_POLICIES = Map.ofEntries(
      Map.entry("ratelimiter.composition", "reserve-commit"),
      Map.entry("ratelimiter.rpm.limit", "20"),
      Map.entry("ratelimiter.tpm.default-completion-tokens", "64"),
      Map.entry("ratelimiter.policies.per-key.rpm.limit", "10"),
      Map.entry("ratelimiter.policies.chat.parent", "per-key"),
      Map.entry("ratelimiter.policies.chat.scope", "api-key-and-model"),
      Map.entry("ratelimiter.policies.chat.rpm.limit", "5"),
      Map.entry("ratelimiter.policies.chat.burst.capacity", "5"),
      Map.entry("ratelimiter.policies.chat.burst.refill-per-second", "1"),
      Map.entry("ratelimiter.policies.chat.tpm.limit", "500"),
      Map.entry("ratelimiter.policies.chat.models.gpt-4o.rpm.limit", "3"),
      Map.entry("ratelimiter.policies.models.rpm.limit", "30"),
      Map.entry("ratelimiter.web.routes[0].include", "/v1/chat/**"),
      Map.entry("ratelimiter.web.routes[0].policy", "chat"),
      Map.entry("management.endpoints.web.exposure.include", "health"),
      // Spring Data Redis is on this module's class path, but the gateway uses the in-memory store
      Map.entry("management.health.redis.enabled", "false"));

  /** Creates the configuration (Spring does). */
  public BenchGateway() {}

  /** The chat handler. */
  @RestController
  static class Chat {

    private static final JsonMapper JSON = JsonMapper.builder().build();

    /** Echoes the last message, counting words as tokens, as the sample's echo model does. */
    @PostMapping("/v1/chat/completions")
    Mono<ResponseEntity<?>> complete(@RequestBody Map<String, Object> request) {
      Object model = Objects.requireNonNullElse(request.get("model"), "none");
      String last = "";
      int prompt = 0;
      if (request.get("messages") instanceof List<?> messages) {
        for (Object m : messages) {
          if (m instanceof Map<?, ?> message && message.get("content") instanceof String text) {
            prompt += words(text);
            last = text;
          }
        }
      }
      String content = "Echo from " + model + ": " + last.strip();
      int completion = words(content);
      String id = "chatcmpl-" + UUID.randomUUID().toString().replace("-", "");
      Map<String, Object> usage = Map.of("prompt_tokens", prompt, "completion_tokens", completion,
          "total_tokens", prompt + completion);
      if (Boolean.TRUE.equals(request.get("stream"))) {
        return Mono.just(ResponseEntity.ok().contentType(MediaType.TEXT_EVENT_STREAM)
            .body(stream(id, model, content, usage)));
      }
      Map<String, Object> message = new LinkedHashMap<>();
      message.put("role", "assistant");
      message.put("content", content);
      Map<String, Object> choice = new LinkedHashMap<>();
      choice.put("index", 0);
      choice.put("message", message);
      choice.put("finish_reason", "stop");
      Map<String, Object> body = new LinkedHashMap<>();
      body.put("id", id);
      body.put("object", "chat.completion");
      body.put("created", Instant.now().getEpochSecond());
      body.put("model", model);
      body.put("choices", List.of(choice));
      body.put("usage", usage);
      return Mono.just(ResponseEntity.ok().contentType(MediaType.APPLICATION_JSON).body(body));
    }

    /** The events of a streamed reply: a chunk per word, the usage chunk, then {@code [DONE]}. */
    private static Flux<String> stream(String id, Object model, String content,
        Map<String, Object> usage) {
      String[] words = content.split(" ");
      List<String> events = new java.util.ArrayList<>();
      for (int i = 0; i < words.length; i++) {
        events.add(JSON.writeValueAsString(Map.of("id", id, "object", "chat.completion.chunk",
            "model", model, "choices", List.of(Map.of("index", 0,
                "delta", Map.of("content", i == 0 ? words[i] : " " + words[i]))))));
      }
      events.add(JSON.writeValueAsString(Map.of("id", id, "object", "chat.completion.chunk",
          "model", model, "choices", List.of(), "usage", usage)));
      events.add("[DONE]");
      return Flux.fromIterable(events);
    }

    private static int words(String text) {
      String t = text.strip();
      return t.isEmpty() ? 0 : t.split("\\s+").length;
    }
  }

  /**
   * Starts the gateway.
   *
   * @param args application arguments ({@code --server.port=...}, limits, {@code
   *     --ratelimiter.enabled=false})
   */
  public static void main(String[] args) {
    new SpringApplicationBuilder(BenchGateway.class).properties(SAMPLE_POLICIES).run(args);
  }
}

package io.github.llmratelimiter.webflux.bench;

import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.codec.ServerSentEvent;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.server.ResponseStatusException;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import tools.jackson.databind.json.JsonMapper;

/**
 * The reactive twin of the sample gateway, for the HTTP run of the benchmarks ({@code bench/run}
 * starts it from this module's test class path): WebFlux on Netty, {@code POST
 * /v1/chat/completions} answering an OpenAI-shaped completion with its {@code usage}, limited by
 * the sample gateway's policies (reserve-then-commit, a per-key level above a per key-and-model
 * level with a bucket and model tokens, the route {@code /v1/chat/**}). A request that accepts
 * {@code text/event-stream} and sets {@code "stream": true} is answered as a stream of server-sent
 * events, one chunk per word, as the sample's stand-in model streams (without its pacing). The
 * benchmark's arguments raise the limits, or turn the limiter off.
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

    private final JsonMapper json;

    Chat(JsonMapper json) {
      this.json = json;
    }

    /** Echoes the last message, counting words as tokens, as the sample's echo model does. */
    @PostMapping("/v1/chat/completions")
    Mono<Map<String, Object>> complete(@RequestBody Map<String, Object> request) {
      Reply reply = reply(request);
      Map<String, Object> message = new LinkedHashMap<>();
      message.put("role", "assistant");
      message.put("content", reply.content());
      Map<String, Object> choice = new LinkedHashMap<>();
      choice.put("index", 0);
      choice.put("message", message);
      choice.put("finish_reason", "stop");
      Map<String, Object> body = head(reply, "chat.completion");
      body.put("choices", List.of(choice));
      body.put("usage", reply.usage());
      return Mono.just(body);
    }

    /**
     * Streams the echo as the sample's stand-in model does: one chunk per word, a chunk with the
     * finish reason, a last chunk with the usage when {@code stream_options.include_usage} is set,
     * then {@code [DONE]}.
     */
    @PostMapping(path = "/v1/chat/completions", produces = MediaType.TEXT_EVENT_STREAM_VALUE)
    Flux<ServerSentEvent<String>> stream(@RequestBody Map<String, Object> request) {
      if (!Boolean.TRUE.equals(request.get("stream"))) {
        throw new ResponseStatusException(HttpStatus.BAD_REQUEST,
            "an event stream is sent only for \"stream\": true");
      }
      Reply reply = reply(request);
      String[] words = reply.content().split(" ");
      List<Map<String, Object>> chunks = new ArrayList<>();
      for (int i = 0; i < words.length; i++) {
        Map<String, Object> delta = new LinkedHashMap<>();
        if (i == 0) {
          delta.put("role", "assistant");
        }
        delta.put("content", i == 0 ? words[i] : " " + words[i]);
        chunks.add(chunk(reply, delta, null));
      }
      chunks.add(chunk(reply, Map.of(), "stop"));
      if (request.get("stream_options") instanceof Map<?, ?> options
          && Boolean.TRUE.equals(options.get("include_usage"))) {
        Map<String, Object> last = head(reply, "chat.completion.chunk");
        last.put("choices", List.of());
        last.put("usage", reply.usage());
        chunks.add(last);
      }
      return Flux.fromIterable(chunks)
          .map(c -> ServerSentEvent.builder(json.writeValueAsString(c)).build())
          .concatWithValues(ServerSentEvent.builder("[DONE]").build());
    }

    private static Map<String, Object> chunk(Reply reply, Map<String, Object> delta,
        String finishReason) {
      Map<String, Object> choice = new LinkedHashMap<>();
      choice.put("index", 0);
      choice.put("delta", delta);
      choice.put("finish_reason", finishReason);
      Map<String, Object> body = head(reply, "chat.completion.chunk");
      body.put("choices", List.of(choice));
      return body;
    }

    private static Map<String, Object> head(Reply reply, String object) {
      Map<String, Object> body = new LinkedHashMap<>();
      body.put("id", reply.id());
      body.put("object", object);
      body.put("created", reply.created());
      body.put("model", reply.model());
      return body;
    }

    /** The echo of a request's last message, with its usage in words. */
    private static Reply reply(Map<String, Object> request) {
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
      return new Reply("chatcmpl-" + UUID.randomUUID().toString().replace("-", ""),
          Instant.now().getEpochSecond(), model, content, prompt, words(content));
    }

    /** One answer: its id, creation second, model, text and usage. */
    private record Reply(String id, long created, Object model, String content, int prompt,
        int completion) {

      Map<String, Object> usage() {
        return Map.of("prompt_tokens", prompt, "completion_tokens", completion,
            "total_tokens", prompt + completion);
      }
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

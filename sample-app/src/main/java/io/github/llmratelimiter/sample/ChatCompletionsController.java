package io.github.llmratelimiter.sample;

import io.github.llmratelimiter.autoconfigure.servlet.ModelTokens;
import io.github.llmratelimiter.gateway.ModelTokenReservation;
import io.github.llmratelimiter.gateway.RateLimitGateway;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.servlet.mvc.method.annotation.StreamingResponseBody;
import tools.jackson.databind.json.JsonMapper;

/**
 * {@code POST /v1/chat/completions} in the OpenAI shape, plain or streamed. It carries no
 * annotation: the route {@code /v1/chat/**} in {@code application.yml} limits it, with the model
 * read from the request body. The limiter reserves the request's estimated model tokens (TPM)
 * before this runs and settles them from the {@code usage} this writes (the JSON body's, or the
 * stream's usage chunk when {@code stream_options.include_usage} is set, else the estimate). A
 * streamed reply comes one chunk per {@code gateway.stand-in.chunk-delay}, and the call holds its
 * slot of the chat policy's {@code concurrency.limit} until the stream ends.
 */
@RestController
class ChatCompletionsController {

  /** The upstream ({@code ratelimiter.upstreams}) the stand-in model's account is configured as. */
  static final String UPSTREAM = "stand-in";

  private final ChatModel model;
  private final GatewayProperties gateway;
  private final JsonMapper json;
  /** The limiter, or null when it is turned off ({@code ratelimiter.enabled=false}). */
  private final @Nullable RateLimitGateway limiter;

  ChatCompletionsController(ChatModel model, GatewayProperties gateway, JsonMapper json,
      ObjectProvider<RateLimitGateway> limiter) {
    this.limiter = limiter.getIfAvailable();
    this.model = model;
    this.gateway = gateway;
    this.json = json;
  }

  @PostMapping(path = "/v1/chat/completions", consumes = MediaType.APPLICATION_JSON_VALUE)
  ResponseEntity<StreamingResponseBody> complete(@RequestBody ChatCompletionRequest request) {
    validate(request);
    ChatModel.Reply reply;
    try {
      reply = model.complete(request);
      // what the provider's headers say corrects the upstream for every caller and instance
      // (this reply does not pass them on to the client, so the front door cannot read them)
      report(200, reply.providerHeaders());
    } catch (ProviderRateLimitException e) {
      // The provider refused: all that its 429 says (its retry time, and the limits and counts
      // of its x-ratelimit-* headers, which OpenAiErrorHandler does not pass on to the client)
      // corrects the upstream for every caller and instance; the front door then reads the
      // response's Retry-After too, which closes it no later than this.
      report(429, e.headers());
      // The provider refused the call: it used nothing, so the model tokens reserved for it go back.
      ModelTokens.current().ifPresent(ModelTokenReservation::refund);
      throw e;
    } catch (RuntimeException e) {
      // The upstream call failed: give back the model tokens the limiter reserved for it. (The
      // usage filter would refund the error response anyway; this shows the explicit handle.)
      // The request's RPM slot stays charged.
      ModelTokens.current().ifPresent(ModelTokenReservation::refund);
      throw e instanceof UpstreamFailureException failure ? failure : new UpstreamFailureException(e);
    }
    String id = "chatcmpl-" + UUID.randomUUID().toString().replace("-", "");
    long created = Instant.now().getEpochSecond();
    if (!request.streaming()) {
      byte[] body = json.writeValueAsBytes(completion(id, created, request.model(), reply));
      return ResponseEntity.ok().contentType(MediaType.APPLICATION_JSON).body(out -> out.write(body));
    }
    StreamingResponseBody body = out -> stream(out, id, created, request, reply);
    return ResponseEntity.ok().contentType(MediaType.TEXT_EVENT_STREAM).body(body);
  }

  /**
   * Tells the limiter what the provider's response said of its account's limits, when the account
   * is configured as an upstream (the "upstream" profile).
   */
  private void report(int status, Map<String, String> headers) {
    RateLimitGateway limiter = this.limiter;
    if (limiter == null || limiter.enforcer().upstreamRoutes().upstream(UPSTREAM).isEmpty()) {
      return;
    }
    limiter.report(UPSTREAM, status, name -> {
      String value = headers.get(name);
      return value == null ? null : List.of(value);
    });
  }

  private void validate(ChatCompletionRequest request) {
    if (request.model() == null || request.model().isBlank()) {
      throw new InvalidOpenAiRequestException("you must provide a model parameter", "model", null);
    }
    if (!gateway.models().contains(request.model())) {
      throw new InvalidOpenAiRequestException(404, "The model '" + shortened(request.model())
          + "' does not exist; this gateway serves " + gateway.models(), "model", "model_not_found");
    }
    if (request.messages() == null || request.messages().isEmpty()) {
      throw new InvalidOpenAiRequestException("messages must not be empty", "messages", null);
    }
    for (int i = 0; i < request.messages().size(); i++) {
      if (request.messages().get(i) == null) {
        throw new InvalidOpenAiRequestException(
            "messages[" + i + "] must be an object, but was null", "messages", null);
      }
    }
  }

  /** A name as an error message repeats it: at most 64 characters, so an answer stays small. */
  private static String shortened(String name) {
    return name.length() <= 64 ? name : name.substring(0, 64) + "…";
  }

  private static Map<String, Object> completion(String id, long created, String model, ChatModel.Reply reply) {
    Map<String, Object> message = new LinkedHashMap<>();
    message.put("role", "assistant");
    message.put("content", reply.content());
    message.put("refusal", null);
    Map<String, Object> choice = new LinkedHashMap<>();
    choice.put("index", 0);
    choice.put("message", message);
    choice.put("logprobs", null);
    choice.put("finish_reason", reply.finishReason());
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("id", id);
    body.put("object", "chat.completion");
    body.put("created", created);
    body.put("model", model);
    body.put("choices", List.of(choice));
    body.put("usage", usage(reply));
    return body;
  }

  private static Map<String, Object> usage(ChatModel.Reply reply) {
    return Map.of("prompt_tokens", reply.promptTokens(), "completion_tokens", reply.completionTokens(),
        "total_tokens", reply.promptTokens() + reply.completionTokens());
  }

  /** One chunk per word, a final chunk with the finish reason, usage if asked, then [DONE]. */
  private void stream(OutputStream out, String id, long created, ChatCompletionRequest request,
      ChatModel.Reply reply) throws IOException {
    String[] words = reply.content().split(" ");
    List<Map<String, Object>> chunks = new ArrayList<>();
    for (int i = 0; i < words.length; i++) {
      Map<String, Object> delta = new LinkedHashMap<>();
      if (i == 0) {
        delta.put("role", "assistant");
      }
      delta.put("content", i == 0 ? words[i] : " " + words[i]);
      chunks.add(chunk(id, created, request.model(), delta, null));
    }
    chunks.add(chunk(id, created, request.model(), Map.of(), reply.finishReason()));
    if (request.includeUsage()) {
      Map<String, Object> last = new LinkedHashMap<>(chunk(id, created, request.model(), null, null));
      last.put("choices", List.of());
      last.put("usage", usage(reply));
      chunks.add(last);
    }
    for (Map<String, Object> c : chunks) {
      pace();
      out.write(("data: " + json.writeValueAsString(c) + "\n\n").getBytes(StandardCharsets.UTF_8));
      out.flush();
    }
    out.write("data: [DONE]\n\n".getBytes(StandardCharsets.UTF_8));
    out.flush();
  }

  /**
   * Waits {@code gateway.stand-in.chunk-delay} before a chunk, as a model that writes its reply
   * over time (this runs on the request's streaming thread, not on a server's I/O thread).
   */
  private void pace() throws IOException {
    long nanos = gateway.standIn().chunkDelay().toNanos();
    if (nanos > 0) {
      try {
        Thread.sleep(nanos / 1_000_000, (int) (nanos % 1_000_000));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IOException("the stream was interrupted", e);
      }
    }
  }

  private static Map<String, Object> chunk(
      String id, long created, String model, Map<String, Object> delta, String finishReason) {
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("id", id);
    body.put("object", "chat.completion.chunk");
    body.put("created", created);
    body.put("model", model);
    if (delta != null) {
      Map<String, Object> choice = new LinkedHashMap<>();
      choice.put("index", 0);
      choice.put("delta", delta);
      choice.put("logprobs", null);
      choice.put("finish_reason", finishReason);
      body.put("choices", List.of(choice));
    }
    return body;
  }
}

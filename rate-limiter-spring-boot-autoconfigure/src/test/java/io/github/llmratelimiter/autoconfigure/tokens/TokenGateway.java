package io.github.llmratelimiter.autoconfigure.tokens;

import io.github.llmratelimiter.autoconfigure.ManualTicker;
import io.github.llmratelimiter.autoconfigure.Reconciliations;
import io.github.llmratelimiter.autoconfigure.servlet.ModelTokens;
import io.github.llmratelimiter.gateway.ModelTokenReservation;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.servlet.mvc.method.annotation.StreamingResponseBody;

/**
 * A stand-in LLM gateway for the model-token tests: the test says, in query parameters, what usage
 * the "upstream" reports and how it fails. Every reconciliation is queued for the tests to await.
 */
@Configuration(proxyBeanMethods = false)
public class TokenGateway {

  /** The properties the model-token tests share: policy "llm" on /llm/**, 100 model tokens a minute. */
  public static final String[] PROPERTIES = {
      "ratelimiter.policies.llm.rpm.limit=100000",
      "ratelimiter.policies.llm.tpm.limit=100",
      "ratelimiter.web.routes[0].include=/llm/**",
      "ratelimiter.web.routes[0].policy=llm"};

  /**
   * A body the default estimator counts as 20 model tokens: 3 per request, 4 for the message,
   * ceil(12 bytes of "user" + "abcdefgh" / 4) = 3, and max_tokens 10.
   */
  public static final String BODY_OF_20 =
      "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"abcdefgh\"}],\"max_tokens\":10}";

  @Bean
  ManualTicker ticker() {
    return new ManualTicker();
  }

  @Bean
  Reconciliations reconciliations() {
    return new Reconciliations();
  }

  @Bean
  StreamGate streamGate() {
    return new StreamGate();
  }

  /** Lets a test hold a stream after its first chunk until the client has gone. */
  public static final class StreamGate {
    /** Counted down when the held stream has flushed its first chunk. */
    public final CountDownLatch firstChunkSent = new CountDownLatch(1);
    /** Counted down by the test once the client closed its connection. */
    public final CountDownLatch clientGone = new CountDownLatch(1);
    /** The reservation the held stream saw, for the test to check. */
    public volatile ModelTokenReservation reservation;
  }

  /** The handlers. */
  @RestController
  public static class Llm {

    private final StreamGate gate;

    Llm(StreamGate gate) {
      this.gate = gate;
    }

    @PostMapping(path = {"/llm/chat", "/bulk/chat"}, consumes = MediaType.APPLICATION_JSON_VALUE)
    public ResponseEntity<Map<String, Object>> chat(@RequestBody Map<String, Object> body,
        @RequestParam(defaultValue = "-1") long usage, @RequestParam(defaultValue = "") String fail,
        @RequestParam(defaultValue = "-1") long settle) {
      if ("throw".equals(fail)) {
        throw new IllegalStateException("upstream timed out");
      }
      if ("status".equals(fail)) {
        return ResponseEntity.status(HttpStatus.BAD_GATEWAY)
            .body(Map.of("error", Map.of("message", "upstream failed")));
      }
      if (settle >= 0) {
        ModelTokens.current().orElseThrow().reconcile(settle);
      }
      Map<String, Object> reply = new LinkedHashMap<>();
      reply.put("object", "chat.completion");
      if (usage >= 0) {
        reply.put("usage", Map.of("prompt_tokens", usage / 2, "completion_tokens", usage - usage / 2,
            "total_tokens", usage));
      }
      return ResponseEntity.ok(reply);
    }

    /**
     * An SSE stream of three chunks, then a usage chunk when {@code usage >= 0}, then {@code
     * [DONE]}. {@code hold}: after the first chunk, wait for the test's signal that the client has
     * gone, then keep writing until the write fails. {@code fail}: throw before the first byte.
     */
    @PostMapping(path = "/llm/stream", consumes = MediaType.APPLICATION_JSON_VALUE)
    public ResponseEntity<StreamingResponseBody> stream(@RequestBody Map<String, Object> body,
        @RequestParam(defaultValue = "-1") long usage, @RequestParam(defaultValue = "false") boolean hold,
        @RequestParam(defaultValue = "false") boolean fail, HttpServletResponse response) {
      gate.reservation = ModelTokens.current().orElse(null);
      // Spring 7 makes flush() of this stream a no-op (spring.http.response.flush.enabled):
      // flushing the servlet response sends each event as it is written
      Flusher flush = response::flushBuffer;
      StreamingResponseBody out = os -> {
        if (fail) {
          throw new IllegalStateException("upstream refused the stream");
        }
        event(os, flush, "{\"choices\":[{\"delta\":{\"content\":\"a\"}}]}");
        if (hold) {
          gate.firstChunkSent.countDown();
          try {
            if (!gate.clientGone.await(10, TimeUnit.SECONDS)) {
              throw new IllegalStateException("the test never closed the connection");
            }
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException(e);
          }
          for (int i = 0; i < 100_000; i++) { // fails once the peer has reset the connection
            event(os, flush, "{\"choices\":[{\"delta\":{\"content\":\"" + "x".repeat(1000) + "\"}}]}");
          }
        }
        event(os, flush, "{\"choices\":[{\"delta\":{\"content\":\"b\"}}]}");
        event(os, flush, "{\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":null}");
        if (usage >= 0) {
          event(os, flush, "{\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":"
              + (usage - 1) + ",\"total_tokens\":" + usage + "}}");
        }
        os.write("data: [DONE]\n\n".getBytes(StandardCharsets.UTF_8));
        flush.flush();
      };
      return ResponseEntity.ok().contentType(MediaType.TEXT_EVENT_STREAM).body(out);
    }

    private static void event(OutputStream os, Flusher flush, String json) throws IOException {
      os.write(("data: " + json + "\n\n").getBytes(StandardCharsets.UTF_8));
      flush.flush();
    }

    /** Sends what was written. */
    @FunctionalInterface
    private interface Flusher {
      void flush() throws IOException;
    }
  }
}

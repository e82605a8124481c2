package io.github.llmratelimiter.gateway.scg;

import java.time.Duration;
import org.awaitility.Awaitility;
import static org.assertj.core.api.Assertions.assertThat;

import com.jayway.jsonpath.JsonPath;
import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.springframework.test.context.TestPropertySource;

/**
 * Calls in flight through Spring Cloud Gateway Server MVC: a proxied stream holds its key's slot
 * until it ends or its client disconnects, a completed call releases its slot, and a call while the
 * slot is held gets the {@code CONCURRENCY_LIMIT} 429 without reaching the upstream.
 */
@TestPropertySource(properties = "ratelimiter.policies.chat.concurrency.limit=1")
class GatewayCallsInFlightTests extends GatewayTestSupport {

  private static final String STREAM = "\"stream\":true";

  /** Waits until the key holds no slot (released once the proxied response is over). */
  private void awaitReleased(String key) throws Exception {
    Awaitility.await("the slot is released").atMost(SETTLE).pollInterval(Duration.ofMillis(10))
        .until(() -> chatBudget(key, "gpt-4o-mini", "inFlight") == 0);
  }

  @Test
  void aStreamHoldsItsSlotUntilItEndsAndAConcurrentCallIsRefused() throws Exception {
    String key = key("sk-scg-slots-0000000001");
    OpenAiUpstream.StreamGate gate = UPSTREAM.holdNextStream(key);
    HttpResponse<InputStream> r = chatStream(key, chatBody("gpt-4o-mini", "stream me", STREAM));
    try (BufferedReader body = new BufferedReader(new InputStreamReader(r.body(), StandardCharsets.UTF_8))) {
      assertThat(r.statusCode()).isEqualTo(200);
      assertThat(nextEvent(body)).isNotNull();
      assertThat(chatBudget(key, "gpt-4o-mini", "inFlight")).isEqualTo(1);
      HttpResponse<String> refused = chat(key, chatBody("gpt-4o-mini", "me too", ""));
      assertThat(refused.statusCode()).isEqualTo(429);
      assertThat(JsonPath.<String>read(refused.body(), "$.reason")).isEqualTo("CONCURRENCY_LIMIT");
      // the first slot's lease (600 s) ends 600 s after it was taken, a moment ago on a busy machine
      assertThat(Long.parseLong(refused.headers().firstValue("Retry-After").orElseThrow()))
          .isBetween(590L, 600L);
      gate.release();
      while (nextEvent(body) != null) {
        // drain the stream to its end
      }
    } finally {
      gate.release();
    }
    awaitReleased(key);
    assertThat(chat(key, chatBody("gpt-4o-mini", "after", "")).statusCode()).isEqualTo(200);
    assertThat(UPSTREAM.receivedFor(key)).hasSize(2); // the refused call never reached it
  }

  @Test
  void aClientDisconnectingMidStreamReleasesTheSlot() throws Exception {
    String key = key("sk-scg-slots-0000000002");
    OpenAiUpstream.StreamGate gate = UPSTREAM.holdNextStream(key);
    HttpResponse<InputStream> r = chatStream(key, chatBody("gpt-4o-mini", "stream me", STREAM));
    try {
      BufferedReader body = new BufferedReader(new InputStreamReader(r.body(), StandardCharsets.UTF_8));
      assertThat(nextEvent(body)).isNotNull();
      assertThat(chatBudget(key, "gpt-4o-mini", "inFlight")).isEqualTo(1);
      r.body().close(); // the client goes away mid-stream
    } finally {
      gate.release(); // the upstream goes on: the gateway's next writes fail, and the call ends
    }
    awaitReleased(key);
    assertThat(chat(key, chatBody("gpt-4o-mini", "after", "")).statusCode()).isEqualTo(200);
  }

  @Test
  void eachCompletedCallReleasesItsSlot() throws Exception {
    String key = key("sk-scg-slots-0000000003");
    for (int i = 0; i < 3; i++) {
      assertThat(chat(key, chatBody("gpt-4o-mini", "call " + i, "")).statusCode()).isEqualTo(200);
      awaitReleased(key);
    }
  }
}

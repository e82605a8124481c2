package io.github.llmratelimiter.gateway.scg;

import static org.assertj.core.api.Assertions.assertThat;

import com.jayway.jsonpath.JsonPath;
import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A streamed completion passes through the limited route chunk by chunk: the client reads the first
 * chunk while the upstream still holds the rest back, and the stream ends with {@code data:
 * [DONE]}.
 */
class GatewayStreamingTests extends GatewayTestSupport {

  @Test
  void streamPassesThroughChunkByChunkAndEndsWithDone() throws Exception {
    String key = key("sk-scg-stream-0000000001");
    OpenAiUpstream.StreamGate gate = UPSTREAM.holdNextStream(key);
    HttpResponse<InputStream> r = chatStream(key, chatBody("gpt-4o-mini", "stream me",
        "\"stream\":true,\"stream_options\":{\"include_usage\":true}"));
    List<String> events = new ArrayList<>();
    try (BufferedReader body = new BufferedReader(new InputStreamReader(r.body(), StandardCharsets.UTF_8))) {
      assertThat(r.statusCode()).isEqualTo(200);
      assertThat(r.headers().firstValue("Content-Type").orElseThrow()).startsWith("text/event-stream");
      assertThat(header(r, "x-ratelimit-remaining-requests")).isEqualTo(RPM - 1);
      assertThat(r.headers().firstValue("RateLimit").orElseThrow()).startsWith("\"chat\";r=" + (RPM - 1));

      String first = nextEvent(body);
      // the upstream has written one chunk and waits: the gateway did not buffer the stream
      assertThat(gate.restSent())
          .as("the client read the first chunk only after the upstream sent the rest (buffered)")
          .isFalse();
      assertThat(first).isNotNull();
      assertThat(JsonPath.<String>read(first, "$.choices[0].delta.content")).isEqualTo("Hello");
      gate.release();
      events.add(first);
      for (String e = nextEvent(body); e != null; e = nextEvent(body)) {
        events.add(e);
      }
    } finally {
      gate.release();
    }
    assertThat(gate.timedOut()).isFalse();
    assertThat(events).last().isEqualTo("[DONE]");
    StringBuilder text = new StringBuilder();
    for (String e : events.subList(0, events.size() - 2)) {
      List<String> contents = JsonPath.read(e, "$.choices[*].delta.content");
      contents.forEach(text::append);
    }
    assertThat(text).hasToString(OpenAiUpstream.REPLY);
    String usage = events.get(events.size() - 2);
    assertThat(JsonPath.<Integer>read(usage, "$.usage.total_tokens").longValue())
        .isEqualTo(OpenAiUpstream.totalTokens(2));
    assertThat(UPSTREAM.receivedFor(key)).hasSize(1);
  }
}

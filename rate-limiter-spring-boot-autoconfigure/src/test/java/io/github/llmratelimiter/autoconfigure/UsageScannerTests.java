package io.github.llmratelimiter.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.gateway.internal.UsageScanner;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The response scanner finds the usage however the body is cut into writes. */
class UsageScannerTests {

  private static final String JSON = "{\"id\":\"x\",\"choices\":[{\"message\":{\"content\":"
      + "\"the \\\"usage\\\" word\"}}],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":8,"
      + "\"total_tokens\":13}}";

  private static final String SSE = "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n"
      + "data: {\"choices\":[],\"usage\":{\"total_tokens\":7}}\r\n\r\n"
      + ": a comment with \"usage\"\n"
      + "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":2,\"completion_tokens\":9}}\n\n"
      + "data: [DONE]\n\n";

  /** Feeds the body in writes of {@code chunk} bytes. */
  private static UsageScanner scan(String contentType, String body, int chunk) {
    UsageScanner scanner = new UsageScanner(Json.READER);
    byte[] b = body.getBytes(StandardCharsets.UTF_8);
    for (int off = 0; off < b.length; off += chunk) {
      scanner.accept(off == 0 ? contentType : null, b, off, Math.min(chunk, b.length - off));
    }
    return scanner;
  }

  @ParameterizedTest
  @ValueSource(ints = {1, 2, 7, 64, 100_000})
  void aJsonBodyCutIntoAnyWritesReportsItsUsage(int chunk) {
    assertThat(scan("application/json", JSON, chunk).usage()).isEqualTo(13L);
  }

  @ParameterizedTest
  @ValueSource(ints = {1, 3, 16, 100_000})
  void theLastUsageOfAnEventStreamWinsHoweverItsLinesAreCut(int chunk) {
    assertThat(scan("text/event-stream;charset=UTF-8", SSE, chunk).usage()).isEqualTo(11L);
  }

  @Test
  void anEventLineLongerThanTheCaptureLimitIsSkippedAndTheNextOnesAreRead() {
    String huge = "data: {\"pad\":\"" + "x".repeat(UsageScanner.MAX_CAPTURED_BYTES)
        + "\",\"usage\":{\"total_tokens\":99}}\n\n";
    assertThat(scan("text/event-stream", huge, 4096).usage()).isNull();
    assertThat(scan("text/event-stream", huge + SSE, 4096).usage()).isEqualTo(11L);
  }

  @Test
  void aJsonBodyLongerThanTheCaptureLimitReportsNoUsage() {
    String huge = "{\"pad\":\"" + "x".repeat(UsageScanner.MAX_CAPTURED_BYTES)
        + "\",\"usage\":{\"total_tokens\":99}}";
    assertThat(scan("application/json", huge, 8192).usage()).isNull();
  }

  @Test
  void aBodyThatIsNeitherJsonNorAnEventStreamIsNotRead() {
    assertThat(scan("text/plain", JSON, 16).usage()).isNull();
    assertThat(scan(null, JSON, 16).usage()).isNull();
  }

  @Test
  void anEmptyOrMalformedBodyReportsNoUsage() {
    assertThat(new UsageScanner(Json.READER).usage()).isNull();
    assertThat(scan("application/json", JSON.substring(0, JSON.length() - 1), 5).usage()).isNull();
  }
}

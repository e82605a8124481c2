package io.github.llmratelimiter.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.gateway.ModelUsage;
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

  private static final String CHAT_CACHED = "{\"usage\":{\"prompt_tokens\":1200,"
      + "\"completion_tokens\":300,\"total_tokens\":1500,\"prompt_tokens_details\":"
      + "{\"cached_tokens\":1024,\"audio_tokens\":0},\"completion_tokens_details\":"
      + "{\"reasoning_tokens\":100}}}";

  private static final String RESPONSES_CACHED = "{\"id\":\"resp_1\",\"usage\":{\"input_tokens\":"
      + "900,\"input_tokens_details\":{\"cached_tokens\":512},\"output_tokens\":50,"
      + "\"output_tokens_details\":{\"reasoning_tokens\":0},\"total_tokens\":950}}";

  private static final String RESPONSES_STREAM = "event: response.created\n"
      + "data: {\"type\":\"response.created\",\"response\":{\"usage\":null}}\n\n"
      + "event: response.completed\n"
      + "data: {\"type\":\"response.completed\",\"response\":{\"id\":\"r\",\"usage\":"
      + "{\"input_tokens\":40,\"input_tokens_details\":{\"cached_tokens\":32},"
      + "\"output_tokens\":7,\"total_tokens\":47}}}\n\n";

  private static final String CHAT_STREAM = "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n"
      + "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":20,\"completion_tokens\":3,"
      + "\"total_tokens\":23,\"prompt_tokens_details\":{\"cached_tokens\":16}}}\n\n"
      + "data: [DONE]\n\n";

  @ParameterizedTest
  @ValueSource(ints = {1, 5, 100_000})
  void aChatCompletionReportsItsCachedPromptTokens(int chunk) {
    assertThat(scan("application/json", CHAT_CACHED, chunk).modelUsage())
        .isEqualTo(new ModelUsage(1500, 1200, 300, 1024, true));
  }

  @ParameterizedTest
  @ValueSource(ints = {1, 5, 100_000})
  void aResponsesApiBodyReportsItsCachedInputTokens(int chunk) {
    assertThat(scan("application/json", RESPONSES_CACHED, chunk).modelUsage())
        .isEqualTo(new ModelUsage(950, 900, 50, 512, true));
  }

  @ParameterizedTest
  @ValueSource(ints = {1, 7, 100_000})
  void streamsReportTheirItemizedUsage(int chunk) {
    assertThat(scan("text/event-stream", CHAT_STREAM, chunk).modelUsage())
        .isEqualTo(new ModelUsage(23, 20, 3, 16, true));
    assertThat(scan("text/event-stream", RESPONSES_STREAM, chunk).modelUsage())
        .isEqualTo(new ModelUsage(47, 40, 7, 32, true));
  }

  @Test
  void theParsedObjectAndTheStreamingReaderAgree() {
    for (String body : new String[] {CHAT_CACHED, RESPONSES_CACHED, JSON,
        "{\"usage\":{\"total_tokens\":9}}",
        "{\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":4,"
            + "\"prompt_tokens_details\":{\"cached_tokens\":99}}}"}) {
      byte[] b = body.getBytes(StandardCharsets.UTF_8);
      assertThat(Json.READER.modelUsage(b, 0, b.length))
          .isEqualTo(UsageScanner.modelUsage(Json.READER.parseObject(b, 0, b.length)));
    }
    byte[] total = "{\"usage\":{\"total_tokens\":9}}".getBytes(StandardCharsets.UTF_8);
    assertThat(Json.READER.modelUsage(total, 0, total.length)).isEqualTo(ModelUsage.ofTotal(9));
    byte[] over = ("{\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":4,"
        + "\"prompt_tokens_details\":{\"cached_tokens\":99}}}").getBytes(StandardCharsets.UTF_8);
    assertThat(Json.READER.modelUsage(over, 0, over.length))
        .isEqualTo(new ModelUsage(7, 3, 4, 3, true));
  }
}

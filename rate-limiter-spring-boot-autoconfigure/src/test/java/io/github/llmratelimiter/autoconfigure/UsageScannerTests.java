package io.github.llmratelimiter.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.gateway.ModelUsage;
import io.github.llmratelimiter.gateway.internal.UsageScanner;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
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
  void anEventStreamCutAnywhereIntoThreeWritesReportsItsLastUsage() {
    byte[] b = SSE.getBytes(StandardCharsets.UTF_8);
    for (int i = 0; i <= b.length; i++) {
      for (int j = i; j <= b.length; j++) {
        UsageScanner scanner = new UsageScanner(Json.READER);
        scanner.accept("text/event-stream", b, 0, i);
        scanner.accept(null, b, i, j - i);
        scanner.accept(null, b, j, b.length - j);
        assertThat(scanner.usage()).as("cut at %d and %d", i, j).isEqualTo(11L);
      }
    }
  }

  @Test
  void aUsageOnlyTheSeamOfTwoWritesSpellsIsRead() {
    String stream = "data: {\"choices\":[],\"usage\":{\"total_tokens\":7}}\n\ndata: [DONE]\n\n";
    byte[] b = stream.getBytes(StandardCharsets.UTF_8);
    int usage = stream.indexOf("\"usage\"");
    for (int cut = usage + 1; cut < usage + 7; cut++) {
      UsageScanner scanner = new UsageScanner(Json.READER);
      scanner.accept("text/event-stream", b, 0, cut);
      scanner.accept(null, b, cut, b.length - cut);
      assertThat(scanner.usage()).as("cut at %d", cut).isEqualTo(7L);
    }
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

  /**
   * Well-formed bodies whose usage the scanner may read from their end: each must report what a
   * full read of the whole body reports, as a JSON body and as an event-stream line.
   */
  @Test
  void readingTheEndOfAWellFormedBodyGivesWhatReadingItWholeGives() {
    List<String> bodies = new ArrayList<>(List.of(
        "{\"id\":\"c\",\"choices\":[],\"usage\":{\"prompt_tokens\":19,\"completion_tokens\":10,"
            + "\"total_tokens\":29,\"prompt_tokens_details\":{\"cached_tokens\":8,\"audio_tokens\":0},"
            + "\"completion_tokens_details\":{\"reasoning_tokens\":0}},\"service_tier\":\"default\","
            + "\"system_fingerprint\":\"fp_\\\"x\\\\\"}",
        "{\"usage\":{\"total_tokens\":13},\"usage\":null,\"response\":{\"usage\":{\"total_tokens\":4}}}",
        "{\"response\":{\"usage\":{\"total_tokens\":4}},\"usage\":null}",
        "{\"\\u0072esponse\":{\"usage\":{\"total_tokens\":4}},\"usage\":null}",
        "{\"response\":{\"usage\":{\"total_tokens\":4}},\"usage\":{}}",
        "{\"usage\":{\"total_tokens\":13},\"us\\u0061ge\":null}",
        "{\"usage\":{\"total_tokens\":{\"a\":1},\"prompt_tokens\":3,\"completion_tokens\":4,"
            + "\"prompt_tokens_details\":5,\"input_tokens_details\":{\"cached_tokens\":null}}}",
        "{\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":4,\"prompt_tokens_details\":"
            + "{\"cached_tokens\":99}},\"n\":-1.5e3,\"t\":true,\"f\":false,\"z\":null}",
        "{\"a\":\"b\\\"usage\":{\"total_tokens\":13}}",
        " { \"usage\" : { \"input_tokens\" : 2 , \"output_tokens\" : 3 } } "));
    // OpenAI-shaped bodies: the usage's counts drawn at random, in a random order, some of them
    // null or absent, with scalar members after it or not
    Random draws = new Random(26);
    String[] counts = {"total_tokens", "prompt_tokens", "completion_tokens", "input_tokens",
        "output_tokens"};
    for (int n = 0; n < 500; n++) {
      List<String> members = new ArrayList<>();
      for (String count : counts) {
        int draw = draws.nextInt(4);
        if (draw > 0) {
          members.add("\"" + count + "\":" + (draw == 1 ? "null" : draws.nextInt(5000)));
        }
      }
      if (draws.nextBoolean()) {
        members.add("\"" + (draws.nextBoolean() ? "prompt" : "input") + "_tokens_details\":"
            + "{\"audio_tokens\":0,\"cached_tokens\":" + draws.nextInt(5000) + "}");
      }
      java.util.Collections.shuffle(members, draws);
      String usage = draws.nextInt(5) == 0 ? "null" : "{" + String.join(",", members) + "}";
      String after = switch (draws.nextInt(3)) {
        case 0 -> "";
        case 1 -> ",\"service_tier\":\"default\",\"system_fingerprint\":null";
        default -> ",\"response\":{\"usage\":{\"total_tokens\":" + draws.nextInt(9) + "}}";
      };
      bodies.add("{\"id\":\"chatcmpl-" + n + "\",\"choices\":[{\"message\":{\"content\":"
          + "\"\\\"usage\\\":{\\\"total_tokens\\\":1}}\"}}],\"usage\":" + usage + after + "}");
    }
    for (String body : bodies) {
      byte[] b = body.getBytes(StandardCharsets.UTF_8);
      ModelUsage whole = Json.READER.modelUsage(b, 0, b.length);
      assertThat(scan("application/json", body, 100_000).modelUsage()).as(body).isEqualTo(whole);
      if (whole != null) {
        assertThat(scan("text/event-stream", "data: " + body + "\n\n", 100_000).modelUsage())
            .as(body).isEqualTo(whole);
      }
    }
  }
}

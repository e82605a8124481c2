package io.github.llmratelimiter.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.gateway.internal.UsageScanner;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The streaming reader of JSON bodies reads what Spring Boot's (Jackson data-binding) parser reads:
 * the same map for a request body, the same usage for a response, the same failures.
 */
class JsonTests {

  private static final String[] BODIES = {
      "{\"model\":\"gpt-4o\",\"messages\":[{\"role\":\"user\",\"content\":\"Hello!\"}]}",
      "  {\"model\":\"a\",\"model\":\"b\"}\n",
      "{\"n\":3000000000,\"d\":1.5,\"i\":7,\"big\":12345678901234567890,\"e\":1e400,\"neg\":-2}",
      "{\"a\":[1,{\"b\":null},true,false,[],{}],\"s\":\"\\u00e9\\ud83d\\ude00\\n\\\"\"}",
      "{}",
      "{} x", "{}}", "[1]", "\"s\"", "12", "null", "{\"a\":NaN}", "{\"a\":'x'}", "{\"a\":1,}",
      "{\"a\":", "{} {}", "{\"a\":1}garbage", "{\"a\":[1,]}", "{\"a\":{\"b\":}}",
      "{\"a\":[\"\\x\"]}", "{\"a\":{\"b\":1]}", "{\"a\":[\"\t\"]}",
      "{\"usage\":{\"total_tokens\":13,\"prompt_tokens\":5,\"completion_tokens\":8}}",
      "{\"choices\":[{\"message\":{\"content\":\"\\\"usage\\\":{\\\"total_tokens\\\":99}\"}}],"
          + "\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":8}}",
      "{\"usage\":{\"input_tokens\":5,\"output_tokens\":8.9}}",
      "{\"usage\":{\"total_tokens\":-1,\"prompt_tokens\":5,\"completion_tokens\":8}}",
      "{\"usage\":{\"total_tokens\":\"13\",\"input_tokens\":1,\"output_tokens\":2}}",
      "{\"usage\":{\"total_tokens\":13,\"total_tokens\":[1]}}",
      "{\"usage\":{\"total_tokens\":13},\"usage\":null,\"response\":{\"usage\":{\"total_tokens\":4}}}",
      "{\"usage\":7,\"response\":{\"usage\":{\"total_tokens\":4}}}",
      "{\"response\":{\"usage\":{\"input_tokens\":2,\"output_tokens\":3}}}",
      "{\"response\":{\"usage\":{\"input_tokens\":2,\"output_tokens\":3}},\"response\":1}",
      "{\"response\":{\"usage\":[1]},\"usage\":{}}",
      "{\"usage\":{\"total_tokens\":12345678901234567890}}",
      "{\"usage\":{\"total_tokens\":1e300}}",
      "{\"usage\":{\"total_tokens\":13}",
  };

  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static Map<String, Object> boot(String body) {
    try {
      return Json.Fallback.PARSER.parseMap(body);
    } catch (RuntimeException e) {
      return null;
    }
  }

  @Test
  void jacksonIsOnTheTestClassPathSoTheStreamingReaderIsTheOneUsed() {
    assertThat(Json.STREAMING).isTrue();
  }

  @Test
  void requestBodiesParseToWhatDataBindingBuilds() {
    for (String body : BODIES) {
      Map<String, Object> expected = boot(body);
      Map<String, Object> actual = JacksonStreamingJson.parseObject(utf8(body), 0, utf8(body).length);
      assertThat(actual).as(body).isEqualTo(expected);
      if (expected != null) {
        expected.forEach((k, v) -> {
          if (v == null) {
            assertThat(actual).as(body).containsEntry(k, null);
          } else {
            assertThat(actual.get(k)).as(body + " " + k).isEqualTo(v).hasSameClassAs(v);
          }
        });
      }
    }
  }

  @Test
  void membersParseToWhatDataBindingBuildsWithNestedValuesLeftEmpty() {
    for (String body : BODIES) {
      Map<String, Object> expected = boot(body);
      if (expected != null) {
        expected = new java.util.LinkedHashMap<>(expected);
        expected.replaceAll((k, v) -> v instanceof Map ? Map.of() : v instanceof List ? List.of() : v);
      }
      assertThat(Json.READER.parseMembers(utf8(body), 0, utf8(body).length)).as(body)
          .isEqualTo(expected);
    }
  }

  @Test
  void responsesReportTheUsageTheParsedObjectReports() {
    for (String body : BODIES) {
      Map<String, Object> map = boot(body);
      Long expected = map == null ? null : UsageScanner.usage(map);
      assertThat(JacksonStreamingJson.usage(utf8(body), 0, utf8(body).length)).as(body)
          .isEqualTo(expected);
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"{\"usage\":{\"total_tokens\":13}}", "{\"model\":\"x\"}"})
  void aSliceOfALargerArrayIsReadAlone(String body) {
    byte[] framed = utf8("data: " + body + "\n\n");
    assertThat(JacksonStreamingJson.usage(framed, 6, utf8(body).length))
        .isEqualTo(UsageScanner.usage(boot(body)));
    assertThat(JacksonStreamingJson.parseObject(framed, 6, utf8(body).length)).isEqualTo(boot(body));
  }
}

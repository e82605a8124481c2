package io.github.llmratelimiter.gateway.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.gateway.ModelUsage;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The end of an OpenAI-shaped object settles its usage, or says it does not. */
class UsageTailTests {

  private static ModelUsage read(String json) {
    byte[] b = ("xx" + json + "yy").getBytes(StandardCharsets.UTF_8);
    return UsageTail.read(b, 2, b.length - 4);
  }

  @Test
  void aChatCompletionIsReadFromItsEndWithTheMembersAfterItsUsage() {
    String body = "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion\",\"created\":1,"
        + "\"model\":\"gpt-4o\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\","
        + "\"content\":\"a \\\"quoted\\\" {word}\"},\"finish_reason\":\"stop\"}],"
        + "\"usage\":{\"prompt_tokens\":19,\"completion_tokens\":10,\"total_tokens\":29,"
        + "\"prompt_tokens_details\":{\"cached_tokens\":8,\"audio_tokens\":0},"
        + "\"completion_tokens_details\":{\"reasoning_tokens\":0,\"audio_tokens\":null}},"
        + "\"service_tier\":\"default\",\"system_fingerprint\":\"fp_\\\"x\\\\\",\"n\":-1.5e3,"
        + "\"t\":true,\"f\":false,\"z\":null}\r\n";
    assertThat(read(body)).isEqualTo(new ModelUsage(29, 19, 10, 8, true));
  }

  @Test
  void responsesApiCountsAndTotalsAloneAreRead() {
    assertThat(read("{\"usage\":{\"input_tokens\":900,\"input_tokens_details\":{\"cached_tokens\":"
        + "512},\"output_tokens\":50,\"total_tokens\":950}}"))
        .isEqualTo(new ModelUsage(950, 900, 50, 512, true));
    assertThat(read(" { \"usage\" : { \"total_tokens\" : 7 } } ")).isEqualTo(ModelUsage.ofTotal(7));
    assertThat(read("{\"a\":1,\"usage\":{}}")).isNull();
    // a count that is null or an object counts as absent, as does a details object given a count
    assertThat(read("{\"usage\":{\"total_tokens\":{\"x\":1},\"prompt_tokens\":3,"
        + "\"completion_tokens\":null}}")).isNull();
    assertThat(read("{\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":4,"
        + "\"prompt_tokens_details\":5}}")).isEqualTo(new ModelUsage(7, 3, 4, 0, true));
    // the last of duplicate names wins
    assertThat(read("{\"usage\":{\"total_tokens\":3,\"total_tokens\":4}}"))
        .isEqualTo(ModelUsage.ofTotal(4));
  }

  @Test
  void aNullUsageReportsNoneUnlessAResponseMemberMayHoldOne() {
    assertThat(read("{\"choices\":[{\"delta\":{\"content\":\"hi\"}}],\"usage\":null}")).isNull();
    assertThat(read("{\"usage\":{\"total_tokens\":3},\"usage\":null}")).isNull();
    assertThat(read("{\"response\":{\"usage\":{\"total_tokens\":4}},\"usage\":null}"))
        .isSameAs(UsageTail.UNKNOWN);
    assertThat(read("{\"\\u0072esponse\":{\"usage\":{\"total_tokens\":4}},\"usage\":null}"))
        .isSameAs(UsageTail.UNKNOWN);
  }

  @ParameterizedTest
  @ValueSource(strings = {
      "{\"usage\":{\"total_tokens\":13},\"usage\":7}", // a later usage of another kind
      "{\"usage\":{\"total_tokens\":13},\"x\":{\"usage\":1}}", // a later object
      "{\"usage\":{\"total_tokens\":13},\"x\":[1]}", // a later array
      "{\"usage\":{\"total_tokens\":13},\"us\\u0061ge\":1}", // a later name with an escape
      "{\"usage\":{\"tot\\u0061l_tokens\":13}}", // an escape in the usage
      "{\"usage\":{\"total_tokens\":1.0}}", // not a plain integer
      "{\"usage\":{\"total_tokens\":-1}}",
      "{\"usage\":{\"total_tokens\":012}}",
      "{\"usage\":{\"total_tokens\":1234567890123456789}}", // past 18 digits
      "{\"usage\":{\"total_tokens\":\"13\"}}",
      "{\"usage\":{\"d\":{\"e\":{}}}}", // nested past the details objects
      "{\"usage\":{\"total_tokens\":13}} x", // trailing content
      "{\"usage\":{\"total_tokens\":13}", // cut short
      "{\"usage\":{\"total_tokens\":13}}}",
      "{\"a\":\"b\\\"usage\":{\"total_tokens\":13}}", // a name that only ends in usage
      "{\"usage\":7}", "{\"x\":{\"total_tokens\":13}}", "", "{}", "[1]"})
  void anEndThatDoesNotSettleTheUsageIsLeftToAFullRead(String json) {
    assertThat(read(json)).isSameAs(UsageTail.UNKNOWN);
  }

  @Test
  void whatComesBeforeTheUsageIsNotRead() {
    assertThat(read("{\"a\":tru,\"usage\":{\"total_tokens\":13}}"))
        .isEqualTo(ModelUsage.ofTotal(13));
  }
}

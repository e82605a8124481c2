package io.github.llmratelimiter.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The default estimator's documented rule, number by number. */
class DefaultModelTokenEstimatorTests {

  /** The defaults: 4 bytes a token, 4 per message, 3 per request, 256 completion tokens. */
  private final DefaultModelTokenEstimator estimator = new DefaultModelTokenEstimator(4, 4, 3, 256);

  private static Map<String, Object> user(String text) {
    return Map.of("role", "user", "content", text);
  }

  @Test
  void englishPromptIsBytesOverFourPlusFramingPlusMaxTokens() {
    // "system" + "Be brief." = 15 bytes -> 4; "user" + "What is a token?" = 20 bytes -> 5
    Map<String, Object> body = Map.of("model", "gpt-4o", "max_tokens", 100, "messages", List.of(
        Map.of("role", "system", "content", "Be brief."), user("What is a token?")));
    assertThat(estimator.estimate(body)).isEqualTo(3 + (4 + 4) + (4 + 5) + 100);
  }

  @Test
  void theLargestCompletionCapCountsForEveryChoice() {
    // a handler may honour any of the caps: a small max_completion_tokens beside a large
    // max_tokens must not shrink the estimate
    Map<String, Object> body = Map.of("messages", List.of(user("abcdefgh")),
        "max_completion_tokens", 50, "max_tokens", 999, "n", 3);
    assertThat(estimator.estimate(body)).isEqualTo(3 + 4 + 3 + 999 * 3);
    assertThat(estimator.estimate(Map.of("messages", List.of(user("abcdefgh")),
        "max_completion_tokens", 50, "max_output_tokens", 70))).isEqualTo(3 + 4 + 3 + 70);
  }

  @Test
  void withoutACapTheDefaultCompletionIsAssumed() {
    assertThat(estimator.estimate(Map.of("messages", List.of(user("abcdefgh"))))).isEqualTo(3 + 4 + 3 + 256);
  }

  @Test
  void nonAsciiTextCountsItsUtf8BytesSoItIsEstimatedHigher() {
    // 4 CJK characters are 12 UTF-8 bytes; with "user" 16 bytes -> 4 tokens (characters/4 would say 2)
    assertThat(estimator.estimate(Map.of("messages", List.of(user("你好世界")), "max_tokens", 0)))
        .isEqualTo(3 + 4 + 4);
  }

  @Test
  void contentPartsToolCallsAndOtherPromptFieldsCount() {
    Map<String, Object> parts = Map.of("role", "user", "content",
        List.of(Map.of("type", "text", "text", "abcd"), Map.of("type", "text", "text", "efgh")));
    // "user" + "text" + "abcd" + "text" + "efgh" = 20 bytes -> 5; "input" of 9 bytes -> 3
    assertThat(estimator.estimate(Map.of("messages", List.of(parts), "max_tokens", 0)))
        .isEqualTo(3 + 4 + 5);
    assertThat(estimator.estimate(Map.of("input", "123456789", "max_output_tokens", 7)))
        .isEqualTo(3 + 3 + 7);
    // a pre-tokenized prompt: one token per number
    assertThat(estimator.estimate(Map.of("prompt", List.of(1, 2, 3), "max_tokens", 0))).isEqualTo(3 + 3);
  }

  @Test
  void oneBytePerTokenBoundsByteLevelTokenizers() {
    DefaultModelTokenEstimator bound = new DefaultModelTokenEstimator(1, 4, 3, 0);
    assertThat(bound.estimate(Map.of("messages", List.of(user("hello world"))))).isEqualTo(3 + 4 + 15);
  }

  @Test
  void anUnreadBodyCountsEveryByteAsPrompt() {
    assertThat(estimator.estimateUnread(1000)).isEqualTo(250 + 3 + 256);
    assertThat(estimator.estimateUnread(-1)).isEqualTo(3 + 256);
  }

  @Test
  void hugeCapsSaturateInsteadOfOverflowing() {
    assertThat(estimator.estimate(Map.of("max_tokens", Long.MAX_VALUE, "n", 2))).isEqualTo(Long.MAX_VALUE);
  }

  @Test
  void bytesPerTokenBelowOneIsRejectedNamingIt() {
    assertThatThrownBy(() -> new DefaultModelTokenEstimator(0, 4, 3, 256))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("bytesPerToken").hasMessageContaining("0");
  }

  @Test
  void utf8LengthIsTheLengthOfTheEncodedBytes() {
    for (String s : new String[] {"", "abc", "modèle", "€uro", "日本語", "😀 emoji", "a\ud83d", "\ude00b",
        "\ud83d\ud83d\ude00", "x".repeat(1000) + "é"}) {
      assertThat(DefaultModelTokenEstimator.utf8Length(s)).as(s)
          .isEqualTo(s.getBytes(java.nio.charset.StandardCharsets.UTF_8).length);
    }
  }
}

package io.github.llmratelimiter.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import org.junit.jupiter.api.Test;

/** API key + model keys neither collide nor leak the API key. */
class CompositeKeyTests {

  @Test
  void differentPairsNeverEncodeTheSame() {
    assertThat(new CompositeKey("a:b", "c").value()).isNotEqualTo(new CompositeKey("a", "b:c").value());
    assertThat(new CompositeKey("sk-1", "gpt-4o").value()).isEqualTo(new CompositeKey("sk-1", "gpt-4o").value());
  }

  @Test
  void toStringMasksTheApiKey() {
    assertThat(new CompositeKey("sk-secret-1234", "gpt-4o").toString())
        .doesNotContain("secret").contains("****1234").contains("gpt-4o");
  }

  @Test
  void partsMustNotBeBlank() {
    assertThatIllegalArgumentException().isThrownBy(() -> new CompositeKey("", "m"))
        .withMessageContaining("apiKey");
    assertThatIllegalArgumentException().isThrownBy(() -> new CompositeKey("k", null))
        .withMessageContaining("model");
  }

  @Test
  void separatesBudgetsPerModel() {
    GatewayLimiter limiter = GatewayLimiter.builder().requestsPerMinute(1).ticker(new ManualTicker()).build();
    assertThat(limiter.allow(new CompositeKey("sk-1", "gpt-4o").value()).allowed()).isTrue();
    assertThat(limiter.allow(new CompositeKey("sk-1", "gpt-4o-mini").value()).allowed()).isTrue();
    assertThat(limiter.allow(new CompositeKey("sk-1", "gpt-4o").value()).allowed()).isFalse();
  }
}

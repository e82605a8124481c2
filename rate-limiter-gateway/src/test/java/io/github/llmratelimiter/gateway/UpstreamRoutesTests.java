package io.github.llmratelimiter.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.llmratelimiter.core.Upstream;
import io.github.llmratelimiter.core.WindowLimit;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Which upstream a call goes to: a model glob before a policy, the longest glob first. */
class UpstreamRoutesTests {

  private static final Upstream OPENAI = new Upstream("openai", WindowLimit.perMinute(10), null, null);
  private static final Upstream MINI = new Upstream("mini", WindowLimit.perMinute(10), null, null);
  private static final Upstream AZURE = new Upstream("azure", WindowLimit.perMinute(10), null, null);

  private final UpstreamRoutes routes = UpstreamRoutes.builder()
      .upstream(OPENAI, List.of("gpt-4o*", "o1"), List.of("chat"))
      .upstream(MINI, List.of("gpt-4o-mini*"), List.of())
      .upstream(AZURE, List.of(), List.of("batch"))
      .build();

  @Test
  void aModelMatchWinsOverAPolicyMatch() {
    assertThat(routes.route("batch", "gpt-4o")).isEqualTo(OPENAI);
    assertThat(routes.route("batch", "claude-3")).isEqualTo(AZURE);
    assertThat(routes.route("batch", null)).isEqualTo(AZURE);
  }

  @Test
  void theLongestMatchingGlobWins() {
    assertThat(routes.route("other", "gpt-4o-mini-2024")).isEqualTo(MINI);
    assertThat(routes.route("other", "gpt-4o-2024")).isEqualTo(OPENAI);
  }

  @Test
  void aCallThatMatchesNothingHasNoUpstream() {
    assertThat(routes.route("other", "o1-preview")).as("o1 is not a glob").isNull();
    assertThat(routes.route("other", "o1")).isEqualTo(OPENAI);
    assertThat(routes.route("other", null)).isNull();
    assertThat(routes.route("other", "GPT-4O")).as("globs are case-sensitive").isNull();
    assertThat(UpstreamRoutes.NONE.route("chat", "gpt-4o")).isNull();
    assertThat(UpstreamRoutes.NONE.isEmpty()).isTrue();
  }

  @Test
  void globsMatchAnyRunOfCharactersAtAStar() {
    assertThat(UpstreamRoutes.matches("*", "")).isTrue();
    assertThat(UpstreamRoutes.matches("a*b*c", "aXbYYc")).isTrue();
    assertThat(UpstreamRoutes.matches("a*b*c", "aXbYY")).isFalse();
    assertThat(UpstreamRoutes.matches("*-mini", "gpt-4o-mini")).isTrue();
    assertThat(UpstreamRoutes.matches("gpt-?", "gpt-4")).as("? is itself").isFalse();
    assertThat(UpstreamRoutes.matches("a**", "abc")).isTrue();
  }

  @Test
  void upstreamsAreFoundByName() {
    assertThat(routes.upstream("azure")).hasValue(AZURE);
    assertThat(routes.upstream("nope")).isEmpty();
    assertThat(routes.upstreams()).containsOnlyKeys("openai", "mini", "azure");
  }

  @Test
  void aGlobOrAPolicyBelongsToOneUpstream() {
    assertThatThrownBy(() -> UpstreamRoutes.builder().upstream(OPENAI, List.of("gpt-4o*"), List.of())
        .upstream(MINI, List.of("gpt-4o*"), List.of()))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'gpt-4o*'")
        .hasMessageContaining("'openai'").hasMessageContaining("'mini'");
    assertThatThrownBy(() -> UpstreamRoutes.builder().upstream(OPENAI, List.of(), List.of("chat"))
        .upstream(MINI, List.of(), List.of("chat")))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("policy 'chat'");
    assertThatThrownBy(() -> UpstreamRoutes.builder().upstream(OPENAI, List.of(" "), List.of()))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("blank");
    assertThatThrownBy(() -> UpstreamRoutes.builder().upstream(OPENAI, List.of(), List.of())
        .upstream(OPENAI, List.of(), List.of()))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("twice");
  }
}

package io.github.llmratelimiter.sample;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Instant;
import java.time.InstantSource;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The stand-in provider's own limits and headers, on a driven clock. */
class StandInProviderTests {

  private final AtomicLong now = new AtomicLong(1_000_000);
  private final InstantSource clock = () -> Instant.ofEpochMilli(now.get());

  @Test
  void countsRequestsAndTokensAndAnswersWithOpenAisHeaders() {
    StandInProvider provider = new StandInProvider(3, 100, clock);
    Map<String, String> first = provider.admit(30);
    assertThat(first).containsEntry("x-ratelimit-limit-requests", "3")
        .containsEntry("x-ratelimit-remaining-requests", "2")
        .containsEntry("x-ratelimit-reset-requests", "1m0s")
        .containsEntry("x-ratelimit-limit-tokens", "100")
        .containsEntry("x-ratelimit-remaining-tokens", "70")
        .containsEntry("x-ratelimit-reset-tokens", "1m0s");
    now.addAndGet(12_500);
    Map<String, String> second = provider.admit(30);
    assertThat(second).containsEntry("x-ratelimit-remaining-requests", "1")
        .containsEntry("x-ratelimit-reset-requests", "47.5s")
        .containsEntry("x-ratelimit-remaining-tokens", "40");
  }

  @Test
  void refusesAboveTheRequestLimitWithTheExactRetry() {
    StandInProvider provider = new StandInProvider(2, 0, clock);
    provider.admit(1);
    now.addAndGet(10_000);
    provider.admit(1);
    now.addAndGet(5_000);
    assertThatThrownBy(() -> provider.admit(1))
        .isInstanceOfSatisfying(ProviderRateLimitException.class, e -> {
          assertThat(e.limit()).isEqualTo("requests");
          assertThat(e.headers()).containsEntry("retry-after-ms", "45000")
              .containsEntry("retry-after", "45")
              .containsEntry("x-ratelimit-remaining-requests", "0")
              .doesNotContainKey("x-ratelimit-limit-tokens");
        });
    now.addAndGet(45_000);
    assertThat(provider.admit(1)).containsEntry("x-ratelimit-remaining-requests", "0");
  }

  @Test
  void refusesAboveTheTokenLimitUntilEnoughTokensLeaveTheWindow() {
    StandInProvider provider = new StandInProvider(0, 100, clock);
    provider.admit(60);
    now.addAndGet(1_000);
    provider.admit(30);
    now.addAndGet(1_000);
    assertThatThrownBy(() -> provider.admit(20))
        .isInstanceOfSatisfying(ProviderRateLimitException.class, e -> {
          assertThat(e.limit()).isEqualTo("tokens");
          assertThat(e.headers()).containsEntry("retry-after-ms", "58000")
              .containsEntry("x-ratelimit-remaining-tokens", "10");
        });
    assertThat(provider.admit(10)).containsEntry("x-ratelimit-remaining-tokens", "0");
  }

  @Test
  void aLimitOfZeroLimitsNothingAndSendsNoHeaders() {
    StandInProvider provider = new StandInProvider(0, 0, clock);
    for (int i = 0; i < 1_000; i++) {
      assertThat(provider.admit(1_000_000)).isEmpty();
    }
  }

  @Test
  void negativeLimitsAreRefused() {
    assertThatIllegalArgumentException().isThrownBy(() -> new StandInProvider(-1, 0, clock))
        .withMessageContaining("requests=-1");
  }

  @Test
  void writesResetsAsGoDurations() {
    assertThat(StandInProvider.goDuration(0)).isEqualTo("0s");
    assertThat(StandInProvider.goDuration(12)).isEqualTo("12ms");
    assertThat(StandInProvider.goDuration(1_000)).isEqualTo("1s");
    assertThat(StandInProvider.goDuration(1_500)).isEqualTo("1.5s");
    assertThat(StandInProvider.goDuration(59_999)).isEqualTo("59.999s");
    assertThat(StandInProvider.goDuration(360_000)).isEqualTo("6m0s");
    assertThat(StandInProvider.goDuration(3_723_500)).isEqualTo("1h2m3.5s");
  }
}

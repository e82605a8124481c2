package io.github.llmratelimiter.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.llmratelimiter.core.ProviderReport;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

/**
 * The provider-header parser: OpenAI's and Azure OpenAI's headers read into a report, Go durations,
 * both forms of {@code retry-after}, a 429's retry time, and garbage of every kind ignored without
 * an exception.
 */
class ProviderHeadersTests {

  private static final Instant NOW = Instant.parse("2026-12-02T10:00:00Z");
  private final ProviderHeaders parser = ProviderHeaders.withClock(InstantSource.fixed(NOW));

  /** Headers from name/value pairs; a name given twice has both values, in order. */
  private static Map<String, List<String>> headers(String... pairs) {
    Map<String, List<String>> map = new HashMap<>();
    for (int i = 0; i < pairs.length; i += 2) {
      map.computeIfAbsent(pairs[i], n -> new ArrayList<>()).add(pairs[i + 1]);
    }
    return map;
  }

  private ProviderReport parse(int status, String... pairs) {
    return parser.parse(status, headers(pairs)::get);
  }

  @Test
  void readsEveryOpenAiHeader() {
    ProviderReport r = parse(200,
        "x-ratelimit-limit-requests", "500",
        "x-ratelimit-limit-tokens", "30000",
        "x-ratelimit-remaining-requests", "499",
        "x-ratelimit-remaining-tokens", "29950",
        "x-ratelimit-reset-requests", "120ms",
        "x-ratelimit-reset-tokens", "6m0s");
    assertThat(r).isEqualTo(new ProviderReport(500L, 499L, Duration.ofMillis(120), 30000L, 29950L,
        Duration.ofMinutes(6), null));
  }

  @Test
  void readsAzureRemainingCountsWithAndWithoutTheirResets() {
    ProviderReport alone = parse(200, "x-ratelimit-remaining-requests", "7",
        "x-ratelimit-remaining-tokens", "900");
    assertThat(alone.remainingRequests()).isEqualTo(7);
    assertThat(alone.remainingTokens()).isEqualTo(900);
    assertThat(alone.isEmpty()).as("a count without its reset holds no time").isTrue();
    ProviderReport withReset = parse(200, "x-ratelimit-remaining-requests", "0",
        "x-ratelimit-reset-requests", "2s");
    assertThat(withReset.remainingRequests()).isZero();
    assertThat(withReset.resetRequests()).isEqualTo(Duration.ofSeconds(2));
    assertThat(withReset.isEmpty()).isFalse();
  }

  @ParameterizedTest
  @ValueSource(strings = {"1s=1000000000", "6m0s=360000000000", "12ms=12000000", "0.5s=500000000",
      "1h2m3.5s=3723500000000", "250us=250000", "250µs=250000", "7ns=7", "0s=0", "2=2000000000",
      "1.25=1250000000", ".5s=500000000", "1m30s=90000000000", "24h=86400000000000"})
  void readsGoDurations(String pair) {
    String[] p = pair.split("=");
    assertThat(ProviderHeaders.goDurationNanos(p[0])).as(p[0]).isEqualTo(Long.parseLong(p[1]));
    assertThat(parse(200, "x-ratelimit-reset-tokens", p[0]).resetTokens())
        .isEqualTo(Duration.ofNanos(Long.parseLong(p[1])));
  }

  @ParameterizedTest
  @ValueSource(strings = {"", " ", "s", "ms", "1", "-1s", "+1s", "1d", "1S5", "1..5s", "1.s", "1s-",
      "abc", "1e9s", "NaN", "Infinity", "0x10s", "24h0m0.000000001s", "25h", "9999999999999999999s",
      "99999999999999999999999999h", "1h1h1h1h1h1h1h1h1h1h1h1h1h1h1h1h1h1h1h1h1h1h1h1h1h",
      "１s", "1 s", "s1", "--", "١s"})
  void ignoresAResetThatIsNotAGoDurationOfAtMostADay(String value) {
    // "1" alone is a plain number of seconds: valid; every other value is garbage
    ProviderReport r = parse(200, "x-ratelimit-reset-requests", value,
        "x-ratelimit-remaining-requests", "0");
    if (value.equals("1")) {
      assertThat(r.resetRequests()).isEqualTo(Duration.ofSeconds(1));
    } else {
      assertThat(r.resetRequests()).as("'" + value + "'").isNull();
      assertThat(r.isEmpty()).isTrue();
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"", "-1", "-0", "+5", "1.0", "1e3", "0x1F", "9223372036854775808",
      "99999999999999999999999999999999", "five", " ", "١٢", "1 2", "NaN", "null"})
  void ignoresACountThatIsNotAWholeNumber(String value) {
    ProviderReport r = parse(200, "x-ratelimit-remaining-requests", value,
        "x-ratelimit-limit-requests", value, "x-ratelimit-remaining-tokens", value,
        "x-ratelimit-limit-tokens", value);
    assertThat(r).as("'" + value + "'").isEqualTo(ProviderReport.EMPTY);
  }

  @Test
  void ignoresALimitOfZeroButReadsARemainingCountOfZero() {
    ProviderReport r = parse(200, "x-ratelimit-limit-requests", "0",
        "x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "1s");
    assertThat(r.limitRequests()).isNull();
    assertThat(r.remainingRequests()).isZero();
  }

  @Test
  void readsCountsWithSurroundingSpacesAndHugeButValidNumbers() {
    ProviderReport r = parse(200, "x-ratelimit-limit-tokens", " 150000000 ",
        "x-ratelimit-remaining-tokens", "999999999999999999");
    assertThat(r.limitTokens()).isEqualTo(150_000_000L);
    assertThat(r.remainingTokens()).isEqualTo(999_999_999_999_999_999L);
  }

  @Test
  void aRepeatedHeaderCountsByItsMostCautiousValue() {
    ProviderReport r = parse(200,
        "x-ratelimit-remaining-requests", "9", "x-ratelimit-remaining-requests", "3",
        "x-ratelimit-remaining-requests", "garbage",
        "x-ratelimit-limit-requests", "100, 60",
        "x-ratelimit-reset-requests", "1s", "x-ratelimit-reset-requests", "5s,junk");
    assertThat(r.remainingRequests()).isEqualTo(3);
    assertThat(r.limitRequests()).isEqualTo(60);
    assertThat(r.resetRequests()).isEqualTo(Duration.ofSeconds(5));
  }

  @Test
  void retryAfterMsWinsOverRetryAfter() {
    ProviderReport r = parse(429, "retry-after", "20", "retry-after-ms", "1500");
    assertThat(r.retryAfter()).isEqualTo(Duration.ofMillis(1500));
  }

  @Test
  void retryAfterInSecondsOrAsAnHttpDate() {
    assertThat(parse(429, "retry-after", "12").retryAfter()).isEqualTo(Duration.ofSeconds(12));
    assertThat(parse(503, "retry-after", "Wed, 02 Dec 2026 10:00:30 GMT").retryAfter())
        .isEqualTo(Duration.ofSeconds(30));
    assertThat(parse(503, "retry-after", "Wed, 02 Dec 2026 09:00:00 GMT").retryAfter())
        .as("a date in the past: retry now").isEqualTo(Duration.ZERO);
    assertThat(parse(429, "retry-after", "Wed, 02 Dec 2026 09:00:00 GMT").retryAfter())
        .as("a 429 that says retry now still closes the upstream for a second")
        .isEqualTo(Duration.ofMillis(ProviderHeaders.DEFAULT_RETRY_MS));
    assertThat(parse(429, "retry-after", "0", "x-ratelimit-reset-tokens", "4s").retryAfter())
        .as("a 429's retry of 0: the longest reset").isEqualTo(Duration.ofSeconds(4));
    assertThat(parse(200, "retry-after", "Fri, 02 Dec 2050 10:00:30 GMT").retryAfter())
        .as("a date past a day away is garbage").isNull();
  }

  @ParameterizedTest
  @ValueSource(strings = {"", "-3", "soon", "Wed, 99 Foo 2026 10:00:30 GMT", "1e3",
      "Wed, 02 Dec 2026 10:00:30", "999999999999999999999"})
  void aProviders429WithGarbageRetryTimesClosesForTheLongestResetElseOneSecond(String value) {
    assertThat(parse(429, "retry-after", value, "retry-after-ms", value).retryAfter())
        .as("'" + value + "'").isEqualTo(Duration.ofMillis(ProviderHeaders.DEFAULT_RETRY_MS));
    assertThat(parse(429, "retry-after", value, "x-ratelimit-reset-requests", "3s",
        "x-ratelimit-reset-tokens", "7s").retryAfter()).isEqualTo(Duration.ofSeconds(7));
    assertThat(parse(200, "retry-after", value).retryAfter()).isNull();
  }

  @Test
  void aProviders429WhoseCountsLeaveRoomClosesForOneSecondAndItsCountsHold() {
    ProviderReport r = parse(429, "retry-after", "60", "x-ratelimit-remaining-requests", "40",
        "x-ratelimit-reset-requests", "20s", "x-ratelimit-remaining-tokens", "150",
        "x-ratelimit-reset-tokens", "30s");
    assertThat(r.retryAfter()).as("the call was refused, not the account")
        .isEqualTo(Duration.ofMillis(ProviderHeaders.DEFAULT_RETRY_MS));
    assertThat(r.remainingTokens()).isEqualTo(150);
    assertThat(r.resetTokens()).isEqualTo(Duration.ofSeconds(30));
    assertThat(parse(429, "retry-after-ms", "400", "x-ratelimit-remaining-requests", "40",
        "x-ratelimit-reset-requests", "20s").retryAfter())
        .as("a shorter retry is kept").isEqualTo(Duration.ofMillis(400));
  }

  @ParameterizedTest
  @ValueSource(strings = {"requests", "tokens"})
  void aProviders429WithACountAtZeroOrNoCountsClosesForItsRetryTime(String exhausted) {
    String other = exhausted.equals("requests") ? "tokens" : "requests";
    assertThat(parse(429, "retry-after", "60", "x-ratelimit-remaining-" + exhausted, "0",
        "x-ratelimit-reset-" + exhausted, "50s", "x-ratelimit-remaining-" + other, "9",
        "x-ratelimit-reset-" + other, "5s").retryAfter()).isEqualTo(Duration.ofSeconds(60));
    assertThat(parse(429, "retry-after", "60").retryAfter()).isEqualTo(Duration.ofSeconds(60));
    assertThat(parse(429, "retry-after", "60", "x-ratelimit-remaining-" + exhausted, "9")
        .retryAfter()).as("a count without its reset says nothing").isEqualTo(Duration.ofSeconds(60));
  }

  @Test
  void aResponseWithoutHeadersSaysNothing() {
    assertThat(parse(200)).isSameAs(ProviderReport.EMPTY);
    assertThat(parser.parse(200, name -> List.of())).isSameAs(ProviderReport.EMPTY);
    assertThat(parser.parse(500, name -> null)).isSameAs(ProviderReport.EMPTY);
  }

  @Test
  void aValueTooLongIsIgnoredAndAFailingLookupReadsAsAbsent() {
    String huge = "1".repeat(100_000);
    assertThat(parse(200, "x-ratelimit-remaining-requests", huge,
        "x-ratelimit-reset-requests", "1" + "0".repeat(10_000) + "s")).isEqualTo(ProviderReport.EMPTY);
    assertThat(parser.parse(429, name -> {
      throw new IllegalStateException("broken headers");
    }).retryAfter()).isEqualTo(Duration.ofMillis(ProviderHeaders.DEFAULT_RETRY_MS));
    List<String> withNull = Arrays.asList(null, "4");
    assertThat(parser.parse(200, name -> withNull).remainingRequests()).isEqualTo(4);
  }

  @Test
  void randomBytesNeverFail() {
    Random random = new Random(42);
    for (int i = 0; i < 20_000; i++) {
      char[] chars = new char[random.nextInt(40)];
      for (int c = 0; c < chars.length; c++) {
        chars[c] = random.nextInt(4) == 0 ? (char) random.nextInt(0x3000)
            : "0123456789.,:-+ hmsuµnGMTWed".charAt(random.nextInt(28));
      }
      String value = new String(chars);
      int status = random.nextBoolean() ? 429 : 200;
      ProviderReport r = parser.parse(status, name -> List.of(value));
      assertThat(r).isNotNull();
      if (status == 429) {
        assertThat(r.retryAfter()).isNotNull();
      }
    }
  }

  @Test
  void nullHeadersOrClockAreRefused() {
    assertThatThrownBy(() -> parser.parse(200, null)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("headers");
    assertThatThrownBy(() -> ProviderHeaders.withClock(null))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("clock");
  }
}

package io.github.llmratelimiter.gateway;

import io.github.llmratelimiter.core.ProviderReport;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.List;
import java.util.Locale;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * Reads what a provider's response says about its rate limits into a {@link ProviderReport}. The
 * headers read, by name, case-insensitively as the caller's header lookup finds them:
 *
 * <ul>
 *   <li>{@code x-ratelimit-limit-requests}, {@code x-ratelimit-limit-tokens}: the provider's limits
 *       (OpenAI), whole numbers of at least 1;
 *   <li>{@code x-ratelimit-remaining-requests}, {@code x-ratelimit-remaining-tokens}: what is left
 *       (OpenAI, Azure OpenAI), whole numbers of at least 0;
 *   <li>{@code x-ratelimit-reset-requests}, {@code x-ratelimit-reset-tokens}: how long until they
 *       reset, as a Go duration ({@code 1s}, {@code 6m0s}, {@code 12ms}, {@code 0.5s}, {@code
 *       1h2m3.5s}; units {@code h}, {@code m}, {@code s}, {@code ms}, {@code us}, {@code µs},
 *       {@code ns}) or a plain number of seconds;
 *   <li>{@code retry-after-ms} (milliseconds), else {@code retry-after} (whole seconds, or an
 *       HTTP-date).
 * </ul>
 *
 * <p>A provider's 429 closes the upstream: its retry time is the {@code retry-after} it sent (when
 * above 0), else the longest reset it sent, else {@value #DEFAULT_RETRY_MS} ms. A 429 whose own
 * remaining counts say the account has room (at least one count with its reset, none of them 0)
 * refused that call, not the account (a call larger than what is left, or larger than its
 * estimate): it closes the upstream for at most {@value #DEFAULT_RETRY_MS} ms, and its counts hold
 * the calls that follow; so one caller's oversized call cannot close the account for everyone for
 * the provider's whole retry time. On any other status a {@code retry-after} is read as well (a 503
 * may carry one).
 *
 * <p>Garbage never fails: a value that does not parse, is negative, overflows, or gives a time
 * above {@link #MAX_DURATION} is ignored as if absent. A header sent several times (or as a
 * comma-separated list) counts by its most cautious value: the smallest limit and remaining count,
 * the longest reset and retry time. Thread-safe.
 */
public final class ProviderHeaders {

  /** {@code x-ratelimit-limit-requests}. */
  public static final String LIMIT_REQUESTS = "x-ratelimit-limit-requests";
  /** {@code x-ratelimit-limit-tokens}. */
  public static final String LIMIT_TOKENS = "x-ratelimit-limit-tokens";
  /** {@code x-ratelimit-remaining-requests}. */
  public static final String REMAINING_REQUESTS = "x-ratelimit-remaining-requests";
  /** {@code x-ratelimit-remaining-tokens}. */
  public static final String REMAINING_TOKENS = "x-ratelimit-remaining-tokens";
  /** {@code x-ratelimit-reset-requests}. */
  public static final String RESET_REQUESTS = "x-ratelimit-reset-requests";
  /** {@code x-ratelimit-reset-tokens}. */
  public static final String RESET_TOKENS = "x-ratelimit-reset-tokens";
  /** {@code retry-after}. */
  public static final String RETRY_AFTER = "retry-after";
  /** {@code retry-after-ms}. */
  public static final String RETRY_AFTER_MS = "retry-after-ms";
  /** Every header this parser reads. */
  public static final List<String> NAMES = List.of(LIMIT_REQUESTS, LIMIT_TOKENS,
      REMAINING_REQUESTS, REMAINING_TOKENS, RESET_REQUESTS, RESET_TOKENS, RETRY_AFTER,
      RETRY_AFTER_MS);

  /** The longest reset or retry time read; a longer one is ignored as garbage. */
  public static final Duration MAX_DURATION = Duration.ofDays(1);
  /** The retry time of a provider's 429 that states none, in milliseconds. */
  public static final long DEFAULT_RETRY_MS = 1_000;
  /** The longest header value read; a longer one is ignored. */
  static final int MAX_VALUE_LENGTH = 256;

  private static final long MAX_NANOS = MAX_DURATION.toNanos();
  private static final int TOO_MANY_REQUESTS = 429;

  private final InstantSource clock;

  private ProviderHeaders(InstantSource clock) {
    this.clock = clock;
  }

  /**
   * Returns a parser that reads an HTTP-date {@code retry-after} against the system clock.
   *
   * @return the parser
   */
  public static ProviderHeaders system() {
    return new ProviderHeaders(InstantSource.system());
  }

  /**
   * Returns a parser that reads an HTTP-date {@code retry-after} against a clock.
   *
   * @param clock the clock
   * @return the parser
   * @throws IllegalArgumentException if the clock is null
   */
  public static ProviderHeaders withClock(InstantSource clock) {
    if (clock == null) {
      throw new IllegalArgumentException("clock must not be null");
    }
    return new ProviderHeaders(clock);
  }

  /**
   * Whether a response's remaining counts say the account has room: at least one count sent with
   * its reset, and every count sent with its reset above 0.
   */
  private static boolean capacityLeft(@Nullable Long remainingRequests,
      @Nullable Duration resetRequests, @Nullable Long remainingTokens,
      @Nullable Duration resetTokens) {
    boolean requests = remainingRequests != null && resetRequests != null;
    boolean tokens = remainingTokens != null && resetTokens != null;
    return (requests || tokens) && (!requests || remainingRequests > 0)
        && (!tokens || remainingTokens > 0);
  }

  /**
   * Reads a response's rate-limit headers.
   *
   * @param status the response's status
   * @param headers every value of a header by its name (one of {@link #NAMES}, lower case); null or
   *     an empty list when absent
   * @return what the headers say; {@link ProviderReport#EMPTY} when they say nothing usable (never
   *     null, never an exception for any header value)
   * @throws IllegalArgumentException if {@code headers} is null
   */
  public ProviderReport parse(int status, Function<String, @Nullable List<String>> headers) {
    if (headers == null) {
      throw new IllegalArgumentException("headers must not be null");
    }
    Long limitRequests = count(values(headers, LIMIT_REQUESTS), 1);
    Long remainingRequests = count(values(headers, REMAINING_REQUESTS), 0);
    Duration resetRequests = longest(values(headers, RESET_REQUESTS), false);
    Long limitTokens = count(values(headers, LIMIT_TOKENS), 1);
    Long remainingTokens = count(values(headers, REMAINING_TOKENS), 0);
    Duration resetTokens = longest(values(headers, RESET_TOKENS), false);
    Duration retry = longest(values(headers, RETRY_AFTER_MS), true);
    if (retry == null) {
      retry = retryAfter(values(headers, RETRY_AFTER));
    }
    if (status == TOO_MANY_REQUESTS) {
      if (retry == null || retry.isZero()) {
        retry = max(resetRequests, resetTokens);
      }
      if (retry == null || retry.isZero()) {
        retry = Duration.ofMillis(DEFAULT_RETRY_MS);
      }
      if (capacityLeft(remainingRequests, resetRequests, remainingTokens, resetTokens)
          && retry.toMillis() > DEFAULT_RETRY_MS) {
        // the provider's own counts say the account has room: it refused this call (too large
        // for what is left, or over an estimate), not the account; the counts hold the rest
        retry = Duration.ofMillis(DEFAULT_RETRY_MS);
      }
    }
    if (limitRequests == null && remainingRequests == null && resetRequests == null
        && limitTokens == null && remainingTokens == null && resetTokens == null && retry == null) {
      return ProviderReport.EMPTY;
    }
    return new ProviderReport(limitRequests, remainingRequests, resetRequests, limitTokens,
        remainingTokens, resetTokens, retry);
  }

  private static @Nullable List<String> values(
      Function<String, @Nullable List<String>> headers, String name) {
    try {
      return headers.apply(name);
    } catch (RuntimeException e) { // a header lookup that fails reads as absent
      return null;
    }
  }

  /** The smallest whole number of at least {@code min} among the values, or null. */
  private static @Nullable Long count(@Nullable List<String> values, long min) {
    Long best = null;
    if (values == null) {
      return null;
    }
    for (String raw : values) {
      for (String part : parts(raw)) {
        long n = wholeNumber(part);
        if (n >= min && (best == null || n < best)) {
          best = n;
        }
      }
    }
    return best;
  }

  /** The longest duration among the values, or null; millis: plain numbers are milliseconds. */
  private static @Nullable Duration longest(@Nullable List<String> values, boolean millis) {
    if (values == null) {
      return null;
    }
    long best = -1;
    for (String raw : values) {
      for (String part : parts(raw)) {
        long nanos = millis ? numberNanos(part, 1_000_000L) : goDurationNanos(part);
        if (nanos > best) {
          best = nanos;
        }
      }
    }
    return best < 0 ? null : Duration.ofNanos(best);
  }

  /** {@code retry-after}: the longest of its values, seconds or an HTTP-date, or null. */
  private @Nullable Duration retryAfter(@Nullable List<String> values) {
    if (values == null) {
      return null;
    }
    long best = -1;
    for (String raw : values) {
      if (raw == null || raw.length() > MAX_VALUE_LENGTH) {
        continue;
      }
      String value = raw.strip();
      long nanos = numberNanos(value, 1_000_000_000L);
      if (nanos < 0 && !value.isEmpty() && !Character.isDigit(value.charAt(0))) {
        nanos = dateNanos(value);
      }
      if (nanos > best) {
        best = nanos;
      }
    }
    return best < 0 ? null : Duration.ofNanos(best);
  }

  /** The nanoseconds from now until an HTTP-date (0 for a past one), or -1. */
  private long dateNanos(String value) {
    Instant at;
    try {
      at = ZonedDateTime.parse(value, DateTimeFormatter.RFC_1123_DATE_TIME).toInstant();
    } catch (DateTimeParseException | ArithmeticException e) {
      return -1;
    }
    Instant now = clock.instant();
    if (!at.isAfter(now)) {
      return 0;
    }
    Duration d = Duration.between(now, at);
    return d.compareTo(MAX_DURATION) > 0 ? -1 : d.toNanos();
  }

  /** The pieces of a header value: its comma-separated parts, stripped; none when too long. */
  private static List<String> parts(@Nullable String raw) {
    if (raw == null || raw.length() > MAX_VALUE_LENGTH) {
      return List.of();
    }
    if (raw.indexOf(',') < 0) {
      return List.of(raw.strip());
    }
    return List.of(raw.split(",", -1)).stream().map(String::strip).toList();
  }

  /** A whole number of ASCII digits, or -1 (empty, a sign, another character, an overflow). */
  static long wholeNumber(String s) {
    if (s.isEmpty() || s.length() > 18) { // 18 digits never overflow a long
      return -1;
    }
    long n = 0;
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c < '0' || c > '9') {
        return -1;
      }
      n = n * 10 + (c - '0');
    }
    return n;
  }

  /**
   * A non-negative decimal number ({@code 12}, {@code 0.5}) times {@code unitNanos}, in
   * nanoseconds, or -1 when it does not parse or exceeds {@link #MAX_DURATION}.
   */
  static long numberNanos(String s, long unitNanos) {
    int dot = s.indexOf('.');
    String whole = dot < 0 ? s : s.substring(0, dot);
    String fraction = dot < 0 ? "" : s.substring(dot + 1);
    if (whole.isEmpty() && fraction.isEmpty() || dot >= 0 && fraction.isEmpty()) {
      return -1;
    }
    long w = whole.isEmpty() ? 0 : wholeNumber(whole);
    if (w < 0 || w > MAX_NANOS / unitNanos) {
      return -1;
    }
    long nanos = w * unitNanos;
    long scale = unitNanos;
    for (int i = 0; i < fraction.length(); i++) {
      char c = fraction.charAt(i);
      if (c < '0' || c > '9') {
        return -1;
      }
      scale /= 10; // digits below a nanosecond are dropped
      nanos += (c - '0') * scale;
    }
    return nanos > MAX_NANOS ? -1 : nanos;
  }

  /**
   * A Go duration ({@code 1h2m3.5s}, {@code 12ms}, {@code 6m0s}), or a plain number of seconds, in
   * nanoseconds; -1 when it does not parse or exceeds {@link #MAX_DURATION}.
   */
  static long goDurationNanos(String s) {
    if (s.isEmpty()) {
      return -1;
    }
    char last = s.charAt(s.length() - 1);
    if (last >= '0' && last <= '9') {
      return numberNanos(s, 1_000_000_000L);
    }
    long total = 0;
    int i = 0;
    while (i < s.length()) {
      int start = i;
      while (i < s.length() && (s.charAt(i) >= '0' && s.charAt(i) <= '9' || s.charAt(i) == '.')) {
        i++;
      }
      int unitStart = i;
      while (i < s.length() && !(s.charAt(i) >= '0' && s.charAt(i) <= '9') && s.charAt(i) != '.') {
        i++;
      }
      if (start == unitStart || unitStart == i) {
        return -1;
      }
      long unit = unitNanos(s.substring(unitStart, i).toLowerCase(Locale.ROOT));
      if (unit < 0) {
        return -1;
      }
      long part = numberNanos(s.substring(start, unitStart), unit);
      if (part < 0) {
        return -1;
      }
      total += part;
      if (total > MAX_NANOS) {
        return -1;
      }
    }
    return total;
  }

  private static long unitNanos(String unit) {
    return switch (unit) {
      case "h" -> 3_600_000_000_000L;
      case "m" -> 60_000_000_000L;
      case "s" -> 1_000_000_000L;
      case "ms" -> 1_000_000L;
      case "us", "µs", "μs" -> 1_000L;
      case "ns" -> 1L;
      default -> -1;
    };
  }

  private static @Nullable Duration max(@Nullable Duration a, @Nullable Duration b) {
    if (a == null) {
      return b;
    }
    return b == null || a.compareTo(b) >= 0 ? a : b;
  }
}

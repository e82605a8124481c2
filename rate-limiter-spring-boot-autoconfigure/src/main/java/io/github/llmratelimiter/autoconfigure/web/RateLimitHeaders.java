package io.github.llmratelimiter.autoconfigure.web;

import io.github.llmratelimiter.autoconfigure.RateLimitOutcome;
import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Decision;
import io.github.llmratelimiter.core.ModelTokenLimit;
import io.github.llmratelimiter.core.Reservation;
import io.github.llmratelimiter.core.WindowLimit;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.StringJoiner;
import org.jspecify.annotations.Nullable;

/**
 * The rate-limit headers of a response, from its outcome.
 *
 * <ul>
 *   <li>{@code RateLimit-Policy}: one item per level, {@code "name";q=<limit>;w=<window seconds>}
 *       (IETF httpapi ratelimit-headers draft, structured-field list);
 *   <li>{@code RateLimit}: the deciding level, {@code "name";r=<remaining>;t=<seconds to full>};
 *   <li>OpenAI's {@code x-ratelimit-limit-requests}, {@code x-ratelimit-remaining-requests} and
 *       {@code x-ratelimit-reset-requests} (a duration such as {@code 20ms}, {@code 7s} or {@code
 *       1m30s});
 *   <li>when a level limits model tokens (TPM): a second item per such level in {@code
 *       RateLimit-Policy}, {@code "name-tokens";q=<model tokens>;w=<window seconds>}, a second item
 *       in {@code RateLimit}, {@code "name-tokens";r=<model tokens remaining>;t=<seconds until the
 *       model-token windows are empty>}, and OpenAI's {@code x-ratelimit-limit-tokens}, {@code
 *       x-ratelimit-remaining-tokens} and {@code x-ratelimit-reset-tokens}. The remaining model
 *       tokens count this call at its estimate (the response's usage settles it later);
 *   <li>on a retryable deny only: {@code Retry-After} in whole seconds rounded up (at least 1) and
 *       {@code retry-after-ms}. A deny that waiting cannot clear gets neither.
 * </ul>
 */
final class RateLimitHeaders {

  static final String POLICY = "RateLimit-Policy";
  static final String RATE_LIMIT = "RateLimit";
  static final String LIMIT_REQUESTS = "x-ratelimit-limit-requests";
  static final String REMAINING_REQUESTS = "x-ratelimit-remaining-requests";
  static final String RESET_REQUESTS = "x-ratelimit-reset-requests";
  static final String LIMIT_TOKENS = "x-ratelimit-limit-tokens";
  static final String REMAINING_TOKENS = "x-ratelimit-remaining-tokens";
  static final String RESET_TOKENS = "x-ratelimit-reset-tokens";
  /** Appended to a level's name for its model-token item in the structured headers. */
  static final String TOKENS_SUFFIX = "-tokens";
  static final String RETRY_AFTER = "Retry-After";
  static final String RETRY_AFTER_MS = "retry-after-ms";

  private RateLimitHeaders() {}

  /** Returns the headers of the outcome, in a stable order; none for a degraded outcome. */
  static Map<String, String> of(RateLimitOutcome outcome) {
    Map<String, String> headers = new LinkedHashMap<>();
    if (outcome.degraded()) {
      return headers;
    }
    Decision d = outcome.decision();
    StringJoiner policy = new StringJoiner(", ");
    for (Budget level : outcome.levels()) {
      WindowLimit w = level.window();
      if (w != null) {
        policy.add(item(level.name()) + ";q=" + w.limit() + ";w=" + ceilSeconds(w.window().toMillis()));
      }
    }
    Reservation reservation = outcome.reservation();
    Budget tokensLevel = null;
    for (Budget level : outcome.levels()) {
      ModelTokenLimit m = level.modelTokens();
      if (m != null) {
        policy.add(item(level.name() + TOKENS_SUFFIX) + ";q=" + m.limit() + ";w="
            + ceilSeconds(m.window().toMillis()));
        tokensLevel = binding(outcome, tokensLevel, level);
      }
    }
    if (policy.length() > 0) {
      headers.put(POLICY, policy.toString());
    }
    Budget deciding = outcome.decidingBudget();
    String rateLimit = item(deciding.name()) + ";r=" + d.remaining() + ";t=" + ceilSeconds(d.resetAfterMs());
    if (reservation != null && tokensLevel != null) {
      rateLimit += ", " + item(tokensLevel.name() + TOKENS_SUFFIX) + ";r="
          + reservation.remainingModelTokens() + ";t=" + ceilSeconds(reservation.modelTokensResetMs());
    }
    headers.put(RATE_LIMIT, rateLimit);
    if (deciding.window() != null) {
      headers.put(LIMIT_REQUESTS, Long.toString(deciding.window().limit()));
    }
    headers.put(REMAINING_REQUESTS, Long.toString(d.remaining()));
    headers.put(RESET_REQUESTS, duration(d.resetAfterMs()));
    if (reservation != null && tokensLevel != null) {
      headers.put(LIMIT_TOKENS, Long.toString(tokensLevel.modelTokens().limit()));
      headers.put(REMAINING_TOKENS, Long.toString(reservation.remainingModelTokens()));
      headers.put(RESET_TOKENS, duration(reservation.modelTokensResetMs()));
    }
    if (d.denied() && d.retryable()) {
      headers.put(RETRY_AFTER, Long.toString(Math.max(1, ceilSeconds(d.retryAfterMs()))));
      headers.put(RETRY_AFTER_MS, Long.toString(d.retryAfterMs()));
    }
    return headers;
  }

  /**
   * The model-token level the token headers describe: the deciding level when it limits model
   * tokens, else the one with the smallest limit.
   */
  private static Budget binding(RateLimitOutcome outcome, @Nullable Budget current, Budget level) {
    if (current != null && current.name().equals(outcome.decision().level())) {
      return current;
    }
    if (level.name().equals(outcome.decision().level()) || current == null
        || level.modelTokens().limit() < current.modelTokens().limit()) {
      return level;
    }
    return current;
  }

  /** Whole seconds, rounded up. */
  static long ceilSeconds(long ms) {
    return ms <= 0 ? 0 : (ms - 1) / 1000 + 1;
  }

  /** A structured-field string: printable ASCII, quotes and backslashes escaped. */
  static String item(String name) {
    StringBuilder sb = new StringBuilder(name.length() + 2).append('"');
    for (int i = 0; i < name.length(); i++) {
      char c = name.charAt(i);
      if (c == '"' || c == '\\') {
        sb.append('\\').append(c);
      } else if (c < 0x20 || c > 0x7e) {
        sb.append('?');
      } else {
        sb.append(c);
      }
    }
    return sb.append('"').toString();
  }

  /** OpenAI's reset format: {@code 0s}, {@code 250ms}, {@code 7s}, {@code 1m30s}, {@code 2h0m5s}. */
  static String duration(long ms) {
    if (ms <= 0) {
      return "0s";
    }
    if (ms < 1000) {
      return ms + "ms";
    }
    long s = ceilSeconds(ms);
    long h = s / 3600;
    long m = (s % 3600) / 60;
    long sec = s % 60;
    if (h > 0) {
      return h + "h" + m + "m" + sec + "s";
    }
    return m > 0 ? m + "m" + sec + "s" : sec + "s";
  }
}

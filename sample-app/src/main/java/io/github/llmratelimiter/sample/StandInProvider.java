package io.github.llmratelimiter.sample;

import java.time.Duration;
import java.time.InstantSource;
import java.util.ArrayDeque;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The stand-in model's own provider account: it holds every call of the gateway, whatever the
 * tenant, to its own requests and model tokens per minute, as a provider holds an organisation
 * key, and answers with OpenAI's rate-limit headers ({@code x-ratelimit-limit-requests}, {@code
 * x-ratelimit-remaining-requests}, {@code x-ratelimit-reset-requests} and the same for tokens, the
 * resets as Go durations such as {@code 6m0s} or {@code 120ms}). A call over either limit is refused
 * as OpenAI refuses it: a 429 with {@code retry-after} and {@code retry-after-ms} ({@link
 * ProviderRateLimitException}).
 *
 * <p>The limits are sliding windows of one minute: a call counts 1 request and its prompt and
 * completion tokens, from the moment it is answered; the remaining counts are what the windows
 * admit now, and a reset is the time until the oldest entry that binds leaves its window (when
 * the remaining count next grows). A limit of 0 is no limit (and no headers for it).
 */
final class StandInProvider {

  private static final long WINDOW_MS = Duration.ofMinutes(1).toMillis();

  private final long requestLimit;
  private final long tokenLimit;
  private final InstantSource clock;
  /** Admission times of the requests in the window, oldest first. */
  private final ArrayDeque<Long> requests = new ArrayDeque<>();
  /** Admission times and token counts in the window, oldest first. */
  private final ArrayDeque<long[]> tokens = new ArrayDeque<>();
  private long tokensInWindow;

  /**
   * @param requestLimit requests a minute, 0 for none
   * @param tokenLimit model tokens a minute, 0 for none
   * @param clock the provider's clock
   */
  StandInProvider(long requestLimit, long tokenLimit, InstantSource clock) {
    if (requestLimit < 0 || tokenLimit < 0) {
      throw new IllegalArgumentException("limits must be >= 0, but were requests=" + requestLimit
          + " and tokens=" + tokenLimit);
    }
    this.requestLimit = requestLimit;
    this.tokenLimit = tokenLimit;
    this.clock = clock;
  }

  /**
   * Admits one call of {@code callTokens} model tokens, or refuses it.
   *
   * @param callTokens the call's prompt and completion tokens
   * @return the rate-limit headers of the answer, after the call is counted
   * @throws ProviderRateLimitException if a window has too little left for the call
   */
  synchronized Map<String, String> admit(long callTokens) {
    long now = clock.millis();
    expire(now);
    long retryMs = 0;
    if (requestLimit > 0 && requests.size() >= requestLimit) {
      retryMs = requests.peekFirst() + WINDOW_MS - now;
    }
    if (tokenLimit > 0 && tokensInWindow + callTokens > tokenLimit) {
      retryMs = Math.max(retryMs, tokenWait(now, callTokens));
    }
    if (retryMs > 0) {
      Map<String, String> headers = headers(now);
      headers.put("retry-after", Long.toString((retryMs + 999) / 1000));
      headers.put("retry-after-ms", Long.toString(retryMs));
      throw new ProviderRateLimitException(headers, requestLimit > 0
          && requests.size() >= requestLimit ? "requests" : "tokens");
    }
    requests.addLast(now);
    tokens.addLast(new long[] {now, callTokens});
    tokensInWindow += callTokens;
    return headers(now);
  }

  /** Milliseconds until enough tokens have left the window for {@code callTokens} to fit. */
  private long tokenWait(long now, long callTokens) {
    if (callTokens > tokenLimit) {
      return WINDOW_MS;
    }
    long excess = tokensInWindow + callTokens - tokenLimit;
    for (long[] entry : tokens) {
      excess -= entry[1];
      if (excess <= 0) {
        return Math.max(1, entry[0] + WINDOW_MS - now);
      }
    }
    return WINDOW_MS;
  }

  private void expire(long now) {
    while (!requests.isEmpty() && requests.peekFirst() + WINDOW_MS <= now) {
      requests.removeFirst();
    }
    while (!tokens.isEmpty() && tokens.peekFirst()[0] + WINDOW_MS <= now) {
      tokensInWindow -= tokens.removeFirst()[1];
    }
  }

  private Map<String, String> headers(long now) {
    Map<String, String> h = new LinkedHashMap<>();
    if (requestLimit > 0) {
      h.put("x-ratelimit-limit-requests", Long.toString(requestLimit));
      h.put("x-ratelimit-remaining-requests", Long.toString(Math.max(0, requestLimit - requests.size())));
      h.put("x-ratelimit-reset-requests", goDuration(requests.isEmpty() ? 0
          : requests.peekFirst() + WINDOW_MS - now));
    }
    if (tokenLimit > 0) {
      h.put("x-ratelimit-limit-tokens", Long.toString(tokenLimit));
      h.put("x-ratelimit-remaining-tokens", Long.toString(Math.max(0, tokenLimit - tokensInWindow)));
      h.put("x-ratelimit-reset-tokens", goDuration(tokens.isEmpty() ? 0
          : tokens.peekFirst()[0] + WINDOW_MS - now));
    }
    return h;
  }

  /**
   * A duration as OpenAI writes its resets (Go's {@code Duration.String}): {@code 0s}, {@code
   * 120ms}, {@code 1.5s}, {@code 6m0s}, {@code 1h0m0s}.
   */
  static String goDuration(long ms) {
    if (ms <= 0) {
      return "0s";
    }
    if (ms < 1000) {
      return ms + "ms";
    }
    long hours = ms / 3_600_000;
    long minutes = ms / 60_000 % 60;
    long millis = ms % 60_000;
    String seconds = millis % 1000 == 0 ? Long.toString(millis / 1000)
        : (millis / 1000) + "." + String.format("%03d", millis % 1000).replaceAll("0+$", "");
    if (hours > 0) {
      return hours + "h" + minutes + "m" + seconds + "s";
    }
    if (minutes > 0) {
      return minutes + "m" + seconds + "s";
    }
    return seconds + "s";
  }
}

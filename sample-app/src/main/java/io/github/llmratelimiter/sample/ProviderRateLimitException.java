package io.github.llmratelimiter.sample;

import java.util.Map;

/**
 * The model provider refused a call with a 429: its own limit for the gateway's account is used.
 * The gateway answers the caller with the same status, the provider's {@code retry-after} and its
 * rate-limit headers.
 */
final class ProviderRateLimitException extends RuntimeException {

  private static final long serialVersionUID = 1L;

  private final transient Map<String, String> headers;
  private final String limit;

  /**
   * @param headers the provider's rate-limit and retry headers
   * @param limit which limit refused the call: {@code requests} or {@code tokens}
   */
  ProviderRateLimitException(Map<String, String> headers, String limit) {
    super("Rate limit reached for " + limit + " on the model provider");
    this.headers = Map.copyOf(headers);
    this.limit = limit;
  }

  /** The provider's rate-limit and retry headers. */
  Map<String, String> headers() {
    return headers;
  }

  /** Which limit refused the call: {@code requests} or {@code tokens}. */
  String limit() {
    return limit;
  }
}

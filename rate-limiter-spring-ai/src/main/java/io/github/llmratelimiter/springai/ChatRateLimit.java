package io.github.llmratelimiter.springai;

import io.github.llmratelimiter.core.ProviderReport;
import io.github.llmratelimiter.gateway.ProviderHeaders;
import java.time.Duration;
import org.jspecify.annotations.Nullable;
import org.springframework.ai.chat.metadata.EmptyRateLimit;
import org.springframework.ai.chat.metadata.RateLimit;
import org.springframework.ai.chat.model.ChatResponse;

/**
 * What a {@link ChatResponse}'s metadata says of the provider's rate limits (Spring AI's {@link
 * RateLimit}, for a chat model that fills it from the provider's {@code x-ratelimit-*} headers), as
 * a {@link ProviderReport}. A value out of range (a limit below 1, a negative count, a negative
 * reset or one above {@link ProviderHeaders#MAX_DURATION}) is left out, as the headers' parser
 * leaves out garbage.
 */
final class ChatRateLimit {

  private ChatRateLimit() {}

  /** The report, or {@link ProviderReport#EMPTY} when the response carries no rate limits. */
  static ProviderReport of(@Nullable ChatResponse response) {
    if (response == null || response.getMetadata() == null) {
      return ProviderReport.EMPTY;
    }
    RateLimit r = response.getMetadata().getRateLimit();
    if (r == null || r instanceof EmptyRateLimit) {
      return ProviderReport.EMPTY;
    }
    ProviderReport report = new ProviderReport(atLeast(r.getRequestsLimit(), 1),
        atLeast(r.getRequestsRemaining(), 0), reset(r.getRequestsReset()),
        atLeast(r.getTokensLimit(), 1), atLeast(r.getTokensRemaining(), 0),
        reset(r.getTokensReset()), null);
    return report.isEmpty() ? ProviderReport.EMPTY : report;
  }

  private static @Nullable Long atLeast(@Nullable Long value, long min) {
    return value == null || value < min ? null : value;
  }

  private static @Nullable Duration reset(@Nullable Duration d) {
    return d == null || d.isNegative() || d.compareTo(ProviderHeaders.MAX_DURATION) > 0 ? null : d;
  }
}

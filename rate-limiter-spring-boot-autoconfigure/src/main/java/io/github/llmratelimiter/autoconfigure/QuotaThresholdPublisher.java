package io.github.llmratelimiter.autoconfigure;

import io.github.llmratelimiter.core.QuotaStatus;
import io.github.llmratelimiter.gateway.RateLimitObserver;
import io.github.llmratelimiter.gateway.RateLimitOutcome;
import io.github.llmratelimiter.gateway.internal.KeyMasking;
import java.time.Instant;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.context.ApplicationEventPublisher;

/**
 * Turns the thresholds a decision crossed ({@link QuotaStatus#crossed()}, reported once per key,
 * quota, threshold and period by the store) into a {@link QuotaThresholdCrossedEvent} and one
 * warning in the log, with the key masked. It keeps nothing in memory: the store's report is the
 * only de-duplication.
 */
final class QuotaThresholdPublisher implements RateLimitObserver {

  private static final Log LOG = LogFactory.getLog(QuotaThresholdPublisher.class);

  private final ApplicationEventPublisher publisher;

  QuotaThresholdPublisher(ApplicationEventPublisher publisher) {
    this.publisher = publisher;
  }

  @Override
  public void onDecision(RateLimitOutcome outcome, long nanos) {
    String masked = null;
    for (QuotaStatus s : outcome.quotas()) {
      for (int threshold : s.crossed()) {
        if (masked == null) {
          masked = KeyMasking.mask(outcome.key().apiKey());
        }
        Instant end = Instant.ofEpochMilli(s.periodEndMs());
        LOG.warn("Quota '" + s.quota().name() + "' of policy '"
            + outcome.policy().name() + "' reached " + threshold + "% for key " + masked + " ("
            + s.quota().unit().format(s.used()) + " of " + s.quota().unit().format(s.quota().limit())
            + " with the estimates of calls in flight, resets at " + end + ")");
        publisher.publishEvent(new QuotaThresholdCrossedEvent(this, masked,
            outcome.policy().name(), s.quota().name(), s.quota().unit(), threshold, s.used(),
            s.quota().limit(), end));
      }
    }
  }
}

package io.github.llmratelimiter.autoconfigure;

import io.github.llmratelimiter.core.QuotaUnit;
import java.time.Instant;
import org.springframework.context.ApplicationEvent;

/**
 * Published when a call takes a key's use of a quota to one of the quota's thresholds for the first
 * time in the quota's period (a soft limit: for example 80 % of a monthly budget). The store reports
 * each threshold exactly once per key, quota, threshold and period, also across the instances that
 * share it, so a listener sees each crossing once in the whole deployment. Published on the thread
 * that has the decision: a listener should be quick, or asynchronous.
 */
public final class QuotaThresholdCrossedEvent extends ApplicationEvent {

  private static final long serialVersionUID = 1L;

  private final String maskedKey;
  private final String policy;
  private final String quota;
  private final QuotaUnit unit;
  private final int threshold;
  private final long used;
  private final long limit;
  private final Instant periodEnd;

  /**
   * Creates the event.
   *
   * @param source the object that published it
   * @param maskedKey the caller's API key, masked
   * @param policy the name of the policy of the call
   * @param quota the quota's name
   * @param unit what the quota counts
   * @param threshold the percentage of the limit crossed
   * @param used what the key has used of the quota this period (cost in micro-units)
   * @param limit the quota's limit under the key's plan (cost in micro-units)
   * @param periodEnd when the period ends and the quota resets
   */
  public QuotaThresholdCrossedEvent(Object source, String maskedKey, String policy, String quota,
      QuotaUnit unit, int threshold, long used, long limit, Instant periodEnd) {
    super(source);
    this.maskedKey = maskedKey;
    this.policy = policy;
    this.quota = quota;
    this.unit = unit;
    this.threshold = threshold;
    this.used = used;
    this.limit = limit;
    this.periodEnd = periodEnd;
  }

  /**
   * Returns the caller's API key, masked (never the key in clear).
   *
   * @return the masked key
   */
  public String maskedKey() {
    return maskedKey;
  }

  /**
   * Returns the name of the policy of the call.
   *
   * @return the policy
   */
  public String policy() {
    return policy;
  }

  /**
   * Returns the quota's name.
   *
   * @return the quota
   */
  public String quota() {
    return quota;
  }

  /**
   * Returns what the quota counts.
   *
   * @return the unit
   */
  public QuotaUnit unit() {
    return unit;
  }

  /**
   * Returns the percentage of the limit crossed.
   *
   * @return the threshold, 1 to 100
   */
  public int threshold() {
    return threshold;
  }

  /**
   * Returns what the key has used of the quota this period, with the call that crossed.
   *
   * @return the amount (cost in micro-units)
   */
  public long used() {
    return used;
  }

  /**
   * Returns the quota's limit.
   *
   * @return the limit (cost in micro-units)
   */
  public long limit() {
    return limit;
  }

  /**
   * Returns when the period ends and the quota resets.
   *
   * @return the period's end
   */
  public Instant periodEnd() {
    return periodEnd;
  }

  @Override
  public String toString() {
    return "QuotaThresholdCrossedEvent[key=" + maskedKey + ", policy=" + policy + ", quota="
        + quota + ", unit=" + unit + ", threshold=" + threshold + ", used=" + used + ", limit="
        + limit + ", periodEnd=" + periodEnd + "]";
  }
}

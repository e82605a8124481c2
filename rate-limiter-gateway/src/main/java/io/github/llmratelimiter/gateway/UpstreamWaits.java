package io.github.llmratelimiter.gateway;

import java.time.Duration;
import java.util.Map;

/**
 * How long the calls of each policy may wait for their upstream, and how each plan's tenants are
 * weighed while they wait ({@link UpstreamWaitingRoom}): the rules the {@link RateLimitEnforcer}
 * applies to a call its upstream denies.
 *
 * @param maxWaits the longest wait of each policy's calls, by policy name; a policy not named
 *     waits {@code defaultMaxWait}
 * @param planMaxWaits the longest wait of each plan's calls, by plan name, then policy name; an
 *     entry not present inherits the policy's
 * @param weights each plan's weight (its tenants' share of the upstream grows with it), by plan
 *     name; a plan not named weighs 1
 * @param priorities each plan's priority class (a lower class goes first), by plan name; a plan
 *     not named has class 0
 * @param defaultMaxWait the longest wait of a policy not named in {@code maxWaits}; zero for none
 */
public record UpstreamWaits(Map<String, Duration> maxWaits,
    Map<String, Map<String, Duration>> planMaxWaits, Map<String, Double> weights,
    Map<String, Integer> priorities, Duration defaultMaxWait) {

  /** No call waits: every upstream deny is answered at once. */
  public static final UpstreamWaits NONE =
      new UpstreamWaits(Map.of(), Map.of(), Map.of(), Map.of(), Duration.ZERO);

  /**
   * Validates the rules.
   *
   * @throws IllegalArgumentException if a map or duration is null, a wait negative, or a weight
   *     not finite and positive
   */
  public UpstreamWaits {
    if (maxWaits == null || planMaxWaits == null || weights == null || priorities == null
        || defaultMaxWait == null) {
      throw new IllegalArgumentException(
          "maxWaits, planMaxWaits, weights, priorities and defaultMaxWait must not be null");
    }
    maxWaits = Map.copyOf(maxWaits);
    planMaxWaits = Map.copyOf(planMaxWaits);
    weights = Map.copyOf(weights);
    priorities = Map.copyOf(priorities);
    checkWait("defaultMaxWait", defaultMaxWait);
    maxWaits.forEach((policy, wait) -> checkWait("maxWaits[" + policy + "]", wait));
    planMaxWaits.forEach((plan, waits) -> waits.forEach(
        (policy, wait) -> checkWait("planMaxWaits[" + plan + "][" + policy + "]", wait)));
    weights.forEach((plan, weight) -> {
      if (weight == null || !(weight > 0) || Double.isInfinite(weight)) {
        throw new IllegalArgumentException(
            "weights[" + plan + "] must be a finite number > 0, but was " + weight);
      }
    });
  }

  private static void checkWait(String name, Duration wait) {
    if (wait == null || wait.isNegative()) {
      throw new IllegalArgumentException(name + " must be >= 0, but was " + wait);
    }
  }

  /**
   * Returns how long a call of a policy under a plan may wait for its upstream.
   *
   * @param policy the policy's name
   * @param plan the plan's name
   * @return the longest wait; zero for none
   */
  public Duration maxWait(String policy, String plan) {
    Map<String, Duration> planWaits = planMaxWaits.get(plan);
    Duration wait = planWaits == null ? null : planWaits.get(policy);
    return wait != null ? wait : maxWaits.getOrDefault(policy, defaultMaxWait);
  }

  /**
   * Returns the weight of a plan's tenants in the waiting order.
   *
   * @param plan the plan's name
   * @return the weight, 1 when the plan sets none
   */
  public double weight(String plan) {
    return weights.getOrDefault(plan, 1.0);
  }

  /**
   * Returns the priority class of a plan's calls in the waiting order.
   *
   * @param plan the plan's name
   * @return the class, 0 when the plan sets none; a lower class goes first
   */
  public int priority(String plan) {
    return priorities.getOrDefault(plan, 0);
  }
}

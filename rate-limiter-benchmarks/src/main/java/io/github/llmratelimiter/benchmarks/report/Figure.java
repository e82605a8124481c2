package io.github.llmratelimiter.benchmarks.report;

import java.util.List;

/**
 * One measured benchmark: who was measured, on which case, with how many threads, and what it
 * scored.
 *
 * @param subject what was measured: {@code GatewayLimiter}, {@code HierarchicalLimiter}, {@code
 *     RedisStore}, a peer ({@code Bucket4j}, {@code Resilience4j}, {@code Guava}, {@code Naive},
 *     {@code Bucket4jLettuce}) or a floor ({@code Floor}, {@code Evalsha})
 * @param mode the composition mode of the limiter's benchmarks, empty for the peers
 * @param method the benchmark method, which names its case
 * @param threads the benchmark threads
 * @param opsPerSecond the throughput of all threads together
 * @param error the half-width of the 99.9% confidence interval of the throughput (NaN if unknown)
 * @param bytesPerOp bytes allocated per operation ({@code -prof gc}), NaN if not measured
 */
public record Figure(
    String subject,
    String mode,
    String method,
    int threads,
    double opsPerSecond,
    double error,
    double bytesPerOp) {

  /** The subjects that are peers; the others are the limiter's own. */
  static final List<String> PEERS = List.of("Bucket4j", "Resilience4j", "Guava", "Naive");

  /**
   * The subjects measured on Redis: the limiter on the Redis store, the raw {@code EVALSHA} floor
   * and the Bucket4j-Lettuce peer.
   */
  static final List<String> REDIS = List.of("RedisStore", "Evalsha", "Bucket4jLettuce");

  /**
   * Returns whether this figure measures a peer rather than the limiter.
   *
   * @return {@code true} for Bucket4j, Resilience4j, Guava and the naive baseline
   */
  public boolean isPeer() {
    return PEERS.contains(subject);
  }

  /**
   * Returns whether this figure was measured on Redis.
   *
   * @return {@code true} for the Redis store, raw {@code EVALSHA} and Bucket4j-Lettuce
   */
  public boolean isRedis() {
    return REDIS.contains(subject);
  }

  /**
   * Returns the case a peer's figure must share to be compared with this one: the method without
   * the limiter's refinements (which reason denied, whether the decision escapes).
   *
   * @return the comparable case, for example {@code deniedOneKey} for {@code deniedRpmOneKey}
   */
  public String comparableCase() {
    return limiterCase().replace("DecisionEscapes", "").replace("Rpm", "").replace("Burst", "")
        .replace("TwoLevels", "");
  }

  /** The method as an allowed/denied case: {@code tryAcquireDeniedRpmOneKey} is {@code deniedRpmOneKey}. */
  private String limiterCase() {
    if (method.startsWith(TRY_ACQUIRE + "Denied")) {
      return "denied" + method.substring(TRY_ACQUIRE.length() + "Denied".length());
    }
    if (method.startsWith(TRY_ACQUIRE)) {
      return "allowed" + method.substring(TRY_ACQUIRE.length());
    }
    return method;
  }

  private static final String TRY_ACQUIRE = "tryAcquire";

  /**
   * Returns the case in words, for the report.
   *
   * @return for example {@code allowed, 10,000 keys}
   */
  public String caseLabel() {
    String method = limiterCase();
    if (!method.startsWith("allowed") && !method.startsWith("denied")) {
      return method; // a floor primitive, not a limiter's case
    }
    StringBuilder s = new StringBuilder(this.method.startsWith(TRY_ACQUIRE) ? "tryAcquire " : "");
    s.append(method.startsWith("allowed") ? "allowed" : "denied");
    if (method.contains("Rpm")) {
      s.append(" (window full)");
    } else if (method.contains("Burst")) {
      s.append(" (bucket empty)");
    }
    if (method.contains("TenThousandKeys")) {
      s.append(", 10,000 keys");
    } else if (method.contains("ThousandKeys")) {
      s.append(", 1,000 keys");
    } else if (method.contains("OwnKey")) {
      s.append(", own key per thread");
    } else {
      s.append(", 1 key");
    }
    if (method.contains("DecisionEscapes")) {
      s.append(", decision escapes");
    }
    if (method.contains("TwoLevels")) {
      s.append(", 2 levels");
    } else if (subject.equals("HierarchicalLimiter")) {
      s.append(", 3 levels");
    }
    return s.toString();
  }
}

package io.github.llmratelimiter.autoconfigure;

/** Lets tests in other packages run the package-private failure analyzer. */
public final class RateLimiterFailureAnalyzerAccess {

  private RateLimiterFailureAnalyzerAccess() {}

  /**
   * Returns the analyzer's description of a start-up failure.
   *
   * @param failure the failure
   * @return the description, or null when the analyzer does not recognise it
   */
  public static String describe(Throwable failure) {
    var analysis = new RateLimiterFailureAnalyzer().analyze(failure);
    return analysis == null ? null : analysis.getDescription();
  }
}

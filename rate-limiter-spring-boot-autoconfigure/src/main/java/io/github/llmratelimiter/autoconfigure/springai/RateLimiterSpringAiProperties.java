package io.github.llmratelimiter.autoconfigure.springai;

import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * Settings of the Spring AI advisor ({@code ratelimiter.spring-ai.*}): the {@code RateLimitAdvisor}
 * bean a {@code ChatClient} adds to its advisors.
 */
@ConfigurationProperties("ratelimiter.spring-ai")
public class RateLimiterSpringAiProperties {

  /** Whether the RateLimitAdvisor bean is created when Spring AI's ChatClient is on the class path. */
  private boolean enabled = true;

  /**
   * The policy the advisor's calls are charged on, unless a call names its own (the advisor
   * parameter ratelimiter.policy); unset, the default policy. One of ratelimiter.policies.
   */
  private @Nullable String policy;

  /** Creates the settings with their defaults; Spring binds them. */
  public RateLimiterSpringAiProperties() {}

  /**
   * Returns whether the advisor bean is created.
   *
   * @return whether it is
   */
  public boolean isEnabled() {
    return enabled;
  }

  /**
   * Sets whether the advisor bean is created.
   *
   * @param enabled whether it is
   */
  public void setEnabled(boolean enabled) {
    this.enabled = enabled;
  }

  /**
   * Returns the policy the advisor's calls are charged on.
   *
   * @return the policy's name, or {@code null} for the default policy
   */
  public @Nullable String getPolicy() {
    return policy;
  }

  /**
   * Sets the policy the advisor's calls are charged on.
   *
   * @param policy the policy's name, or {@code null} for the default policy
   */
  public void setPolicy(@Nullable String policy) {
    this.policy = policy;
  }
}

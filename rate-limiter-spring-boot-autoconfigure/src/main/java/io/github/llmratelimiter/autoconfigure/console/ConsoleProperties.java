package io.github.llmratelimiter.autoconfigure.console;

import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * Configuration of the operator's console, under the prefix {@code ratelimiter.console}.
 */
@ConfigurationProperties("ratelimiter.console")
public class ConsoleProperties {

  /** The shortest refresh interval the console accepts. */
  static final Duration MIN_REFRESH = Duration.ofMillis(500);

  /** The longest refresh interval the console accepts. */
  static final Duration MAX_REFRESH = Duration.ofMinutes(1);

  /**
   * Whether the console is served at "/ratelimiter/console" on the management server (where the
   * Actuator endpoint "ratelimiter" is, and only while that endpoint is exposed over HTTP).
   */
  private boolean enabled;

  /** How often the page reads the endpoint and the metrics again, from 500ms to 1m. */
  private Duration refresh = Duration.ofSeconds(2);

  /** Creates the properties with their defaults. */
  public ConsoleProperties() {}

  /**
   * Returns the setting: whether the console is served.
   *
   * @return the enabled setting
   */
  public boolean isEnabled() {
    return enabled;
  }

  /**
   * Sets the setting: whether the console is served.
   *
   * @param enabled the new value
   */
  public void setEnabled(boolean enabled) {
    this.enabled = enabled;
  }

  /**
   * Returns the setting: how often the page reads the endpoint and the metrics again.
   *
   * @return the refresh setting
   */
  public Duration getRefresh() {
    return refresh;
  }

  /**
   * Sets the setting: how often the page reads the endpoint and the metrics again.
   *
   * @param refresh the new value
   */
  public void setRefresh(Duration refresh) {
    this.refresh = refresh;
  }
}

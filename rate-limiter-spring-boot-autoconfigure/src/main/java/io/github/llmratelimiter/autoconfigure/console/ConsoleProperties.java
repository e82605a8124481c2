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

  public boolean isEnabled() {
    return enabled;
  }

  public void setEnabled(boolean enabled) {
    this.enabled = enabled;
  }

  public Duration getRefresh() {
    return refresh;
  }

  public void setRefresh(Duration refresh) {
    this.refresh = refresh;
  }
}

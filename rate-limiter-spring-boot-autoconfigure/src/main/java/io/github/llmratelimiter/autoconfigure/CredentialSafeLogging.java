package io.github.llmratelimiter.autoconfigure;

import java.util.Map;
import org.springframework.boot.EnvironmentPostProcessor;
import org.springframework.boot.SpringApplication;
import org.springframework.core.Ordered;
import org.springframework.core.env.ConfigurableEnvironment;
import org.springframework.core.env.MapPropertySource;

/**
 * Keeps callers' credentials out of the server's log by default: raises the log level of the
 * loggers that echo a rejected request's raw header lines to {@code WARN}.
 *
 * <p>Tomcat logs the first malformed HTTP/1.1 request header of each connection processor (a
 * control character in a value, a header line that breaks RFC 9112) at {@code INFO}, with the
 * whole header line in the message, which for {@code Authorization} or {@code X-API-Key} is the
 * caller's API key in clear. The request is answered 400 either way. The level comes from a
 * property source of the lowest precedence, so any {@code logging.level} the application sets for
 * the same logger wins.
 */
final class CredentialSafeLogging implements EnvironmentPostProcessor, Ordered {

  /** The property source's name. */
  static final String SOURCE = "ratelimiter-credential-safe-logging";

  /** The logger levels set, by property name. */
  static final Map<String, Object> LEVELS =
      Map.of("logging.level.org.apache.coyote.http11.Http11Processor", "WARN");

  @Override
  public void postProcessEnvironment(ConfigurableEnvironment environment, SpringApplication application) {
    if (!environment.getPropertySources().contains(SOURCE)) {
      environment.getPropertySources().addLast(new MapPropertySource(SOURCE, LEVELS));
    }
  }

  @Override
  public int getOrder() {
    return Ordered.LOWEST_PRECEDENCE;
  }
}

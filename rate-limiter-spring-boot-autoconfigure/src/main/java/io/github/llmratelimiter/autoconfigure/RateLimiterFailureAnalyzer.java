package io.github.llmratelimiter.autoconfigure;

import io.github.llmratelimiter.core.QuotaFileException;
import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.bind.BindException;
import org.springframework.boot.context.properties.source.ConfigurationProperty;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.diagnostics.FailureAnalyzer;
import org.springframework.core.Ordered;
import org.springframework.core.annotation.Order;

/**
 * Turns an invalid {@code ratelimiter.*} property into a start-up failure message that names the
 * property, the value and the valid range: both values our validation rejects and values that do
 * not bind at all (an unknown composition, a malformed duration).
 */
@Order(Ordered.HIGHEST_PRECEDENCE)
final class RateLimiterFailureAnalyzer implements FailureAnalyzer {

  @Override
  public @Nullable FailureAnalysis analyze(Throwable failure) {
    for (Throwable t = failure; t != null; t = t.getCause() == t ? null : t.getCause()) {
      if (t instanceof InvalidRateLimitPropertyException e) {
        return analysis(e.property(), e.value(), e.validRange(), e);
      }
      if (t instanceof QuotaFileException e) {
        return new FailureAnalysis("The rate limiter cannot read its quota file "
            + e.file().toAbsolutePath() + " (ratelimiter.quota-file): " + e.problem()
            + ". It was left as it is: the quotas it holds are not reset silently.",
            "Restore the file from a backup, or move it away to start every quota of this period"
                + " from zero, or point ratelimiter.quota-file at another file.", e);
      }
      if (t instanceof BindException e && e.getName().toString().startsWith("ratelimiter.")) {
        ConfigurationProperty property = e.getProperty();
        Object value = property == null ? null : property.getValue();
        Class<?> type = e.getTarget().getType().resolve();
        return analysis(e.getName().toString(), value == null ? null : String.valueOf(value),
            range(type), e);
      }
    }
    return null;
  }

  private static FailureAnalysis analysis(
      String property, @Nullable String value, String range, Throwable cause) {
    String description = "Invalid rate-limiter configuration: property '" + property + "' has "
        + (value == null ? "no value" : "the value '" + value + "'") + ", but it must be " + range + ".";
    String action = "Update '" + property + "' in your application's configuration to " + range + ".";
    return new FailureAnalysis(description, action, cause);
  }

  private static String range(@Nullable Class<?> type) {
    if (type == null) {
      return "a valid value";
    }
    if (type.isEnum()) {
      return "one of " + Arrays.stream(type.getEnumConstants())
          .map(c -> ((Enum<?>) c).name().toLowerCase(Locale.ROOT).replace('_', '-'))
          .collect(Collectors.joining(", "));
    }
    if (type == Duration.class) {
      return PropertiesTranslation.WINDOW_RANGE;
    }
    if (type == Long.class || type == long.class || type == Integer.class || type == int.class) {
      return "an integer";
    }
    if (type == Double.class || type == double.class) {
      return "a number";
    }
    if (type == Boolean.class || type == boolean.class) {
      return "true or false";
    }
    return "a valid " + type.getSimpleName();
  }
}

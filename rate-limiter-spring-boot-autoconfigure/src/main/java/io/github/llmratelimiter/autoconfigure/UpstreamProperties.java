package io.github.llmratelimiter.autoconfigure;

import java.beans.PropertyDescriptor;
import java.util.LinkedHashSet;
import java.util.Set;
import org.springframework.beans.BeanUtils;
import org.springframework.boot.context.properties.bind.DataObjectPropertyName;
import org.springframework.boot.context.properties.source.ConfigurationPropertyName;
import org.springframework.boot.context.properties.source.ConfigurationPropertySource;
import org.springframework.boot.context.properties.source.ConfigurationPropertySources;
import org.springframework.boot.context.properties.source.IterableConfigurationPropertySource;
import org.springframework.core.env.Environment;

/**
 * Checks that every property under {@code ratelimiter.upstreams} names an upstream and one of its
 * settings, so that none is dropped without a word: the binder reads {@code
 * ratelimiter.upstreams.openai.main.rpm} as a setting {@code main.rpm} of an upstream {@code
 * openai}, which it does not know and leaves out, and a misspelt setting ({@code rmp}) likewise.
 */
final class UpstreamProperties {

  private static final ConfigurationPropertyName ROOT =
      ConfigurationPropertyName.of("ratelimiter.upstreams");

  /** The settings of an upstream, in their dashed form ({@code lease-timeout}). */
  private static final Set<String> SETTINGS = settings();
  /** The same in the binder's uniform form ({@code leasetimeout}), as property names are compared. */
  private static final Set<String> UNIFORM = uniform(SETTINGS);

  private UpstreamProperties() {}

  /**
   * Fails on the first property under {@code ratelimiter.upstreams} that is not {@code
   * ratelimiter.upstreams.<name>.<setting>}.
   *
   * @param environment the application's environment
   * @throws InvalidRateLimitPropertyException naming the property
   */
  static void checkNames(Environment environment) {
    int depth = ROOT.getNumberOfElements();
    for (ConfigurationPropertySource source : ConfigurationPropertySources.get(environment)) {
      if (!(source instanceof IterableConfigurationPropertySource iterable)) {
        continue;
      }
      for (ConfigurationPropertyName name : (Iterable<ConfigurationPropertyName>) iterable
          .filter(ROOT::isAncestorOf).stream()::iterator) {
        String setting = name.getNumberOfElements() > depth + 1
            ? name.getElement(depth + 1, ConfigurationPropertyName.Form.UNIFORM) : null;
        if (setting == null || !UNIFORM.contains(setting)) {
          throw new InvalidRateLimitPropertyException(name.toString(),
              source.getConfigurationProperty(name).getValue(),
              "ratelimiter.upstreams.<name>.<setting>, the name of letters, digits, '-' or '_'"
                  + " (no '.'), the setting one of " + SETTINGS);
        }
      }
    }
  }

  private static Set<String> settings() {
    Set<String> names = new LinkedHashSet<>();
    for (PropertyDescriptor d : BeanUtils.getPropertyDescriptors(RateLimiterProperties.Upstream.class)) {
      if (d.getWriteMethod() != null) {
        names.add(DataObjectPropertyName.toDashedForm(d.getName()));
      }
    }
    return names;
  }

  private static Set<String> uniform(Set<String> dashed) {
    Set<String> names = new LinkedHashSet<>();
    for (String d : dashed) {
      names.add(d.replace("-", ""));
    }
    return names;
  }
}

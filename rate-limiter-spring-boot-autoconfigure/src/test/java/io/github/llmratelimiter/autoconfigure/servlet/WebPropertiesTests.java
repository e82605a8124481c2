package io.github.llmratelimiter.autoconfigure.servlet;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.autoconfigure.RateLimiterAutoConfiguration;
import io.github.llmratelimiter.autoconfigure.RateLimiterFailureAnalyzerAccess;
import io.github.llmratelimiter.autoconfigure.TestGateway;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import io.github.llmratelimiter.autoconfigure.reactive.RateLimiterReactiveAutoConfiguration;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ReactiveWebApplicationContextRunner;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;

/** The web properties' validation: start-up fails with a message that names the property. */
class WebPropertiesTests {

  private final WebApplicationContextRunner runner = new WebApplicationContextRunner()
      .withConfiguration(TestGateway.MVC)
      .withUserConfiguration(TestGateway.class)
      .withPropertyValues("ratelimiter.policies.routed.rpm.limit=3",
          "ratelimiter.policies.annotated.rpm.limit=2",
          "ratelimiter.web.routes[0].include=/v1/**");

  @ParameterizedTest
  @CsvSource(delimiter = '|', quoteCharacter = '"', value = {
      "ratelimiter.web.max-body=0B | ratelimiter.web.max-body | a size from 1B",
      "ratelimiter.web.max-body=3GB | ratelimiter.web.max-body | a size from 1B",
      "ratelimiter.web.max-body=lots | ratelimiter.web.max-body | a valid DataSize",
      "ratelimiter.web.max-body-peek=8MB | ratelimiter.web.max-body-peek | to ratelimiter.web.max-body (4194304B)",
      "ratelimiter.web.max-body=64KB,ratelimiter.web.max-body-peek=128KB | ratelimiter.web.max-body-peek | to ratelimiter.web.max-body (65536B)",
      "ratelimiter.web.max-body-peek=0B | ratelimiter.web.max-body-peek | a size from 1B",
      "ratelimiter.web.routes[0].model-source=header | ratelimiter.web.routes[0].model-source | one of body, query, body-then-query, none",
      "ratelimiter.web.model-from-body=false,ratelimiter.web.routes[0].model-source=body | ratelimiter.web.routes[0].model-source | query or none while ratelimiter.web.model-from-body is false",
      "ratelimiter.web.model-from-body=false,ratelimiter.web.routes[0].model-source=body-then-query | ratelimiter.web.routes[0].model-source | query or none",
      "ratelimiter.web.routes[0].key-expression=header('X-Tenant' | ratelimiter.web.routes[0].key-expression | a SpEL expression",
      "ratelimiter.web.routes[0].key-expression=   | ratelimiter.web.routes[0].key-expression | a SpEL expression",
      "ratelimiter.web.routes[0].key=client-ip,ratelimiter.web.routes[0].key-expression=header('a') | ratelimiter.web.routes[0].key-expression | unset while ratelimiter.web.routes[0].key is set",
      "ratelimiter.web.routes[0].key=expression | ratelimiter.web.routes[0].key | api-key, principal or client-ip",
      "ratelimiter.web.routes[0].key=cookie | ratelimiter.web.routes[0].key | one of api-key, principal, client-ip, expression",
      "ratelimiter.web.routes[0].methods=POST;FETCH | ratelimiter.web.routes[0].methods[1] | an HTTP method, one of GET",
  })
  void runWhenWebPropertyInvalidShouldFailNamingIt(String properties, String property, String range) {
    runner.withPropertyValues(properties.replace(';', ',').split(",(?=ratelimiter)")).run(context -> {
      assertThat(context).hasFailed();
      String description = RateLimiterFailureAnalyzerAccess.describe(context.getStartupFailure());
      assertThat(description).contains("'" + property + "'").contains(range);
    });
  }

  @Test
  void runWhenWebPropertiesValidShouldStart() {
    runner.withPropertyValues("ratelimiter.web.max-body=1MB", "ratelimiter.web.max-body-peek=1MB",
        "ratelimiter.web.routes[0].model-source=none", "ratelimiter.web.routes[1].include=/q/**",
        "ratelimiter.web.routes[1].model-source=query", "ratelimiter.web.model-from-body=false")
        .run(context -> assertThat(context).hasNotFailed());
    runner.withPropertyValues("ratelimiter.web.max-body=16KB")
        .run(context -> assertThat(context).hasNotFailed());
    runner.withPropertyValues("ratelimiter.web.routes[0].methods=post,Get",
        "ratelimiter.web.routes[0].key=principal", "ratelimiter.web.routes[1].include=/q/**",
        "ratelimiter.web.routes[1].key-expression=header('X-Tenant') ?: clientIp")
        .run(context -> assertThat(context).hasNotFailed());
  }

  @Test
  void runWhenAReactiveRoutesKeyExpressionIsNotSpelShouldFailNamingIt() {
    new ReactiveWebApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(RateLimiterAutoConfiguration.class,
            RateLimiterReactiveAutoConfiguration.class))
        .withPropertyValues("ratelimiter.web.routes[0].include=/v1/**",
            "ratelimiter.web.routes[0].key-expression=@tenants.of(")
        .run(context -> {
          assertThat(context).hasFailed();
          assertThat(RateLimiterFailureAnalyzerAccess.describe(context.getStartupFailure()))
              .contains("'ratelimiter.web.routes[0].key-expression'", "a SpEL expression");
        });
  }
}

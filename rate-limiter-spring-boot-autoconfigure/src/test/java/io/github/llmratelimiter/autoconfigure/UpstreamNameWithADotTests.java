package io.github.llmratelimiter.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.gateway.UpstreamRoutes;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * An upstream whose name holds a '.' (a name the properties allow) written as the docs write
 * upstreams, {@code ratelimiter.upstreams.<name>.rpm}: the upstream is configured under its name,
 * or start-up fails naming it; it is never dropped without a word.
 */
class UpstreamNameWithADotTests {

  private final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(RateLimiterAutoConfiguration.class));

  @Test
  void runWhenAnUpstreamNameHoldsADotShouldConfigureItOrFailNamingIt() {
    runner.withPropertyValues("ratelimiter.upstreams.openai.main.rpm=5",
            "ratelimiter.upstreams.openai.main.models[0]=gpt-4o*")
        .run(context -> {
          if (context.getStartupFailure() != null) {
            assertThat(RateLimiterFailureAnalyzerAccess.describe(context.getStartupFailure()))
                .contains("ratelimiter.upstreams");
            return;
          }
          assertThat(context.getBean(UpstreamRoutes.class).upstreams())
              .as("the upstream 'openai.main' of ratelimiter.upstreams.openai.main.*")
              .containsKey("openai.main");
        });
  }
}

package io.github.llmratelimiter.gateway.scg;

import io.github.llmratelimiter.bench.scg.ScgServletBenchGateway;
import org.springframework.context.ConfigurableApplicationContext;

/** The benchmark gateway of Spring Cloud Gateway Server Web MVC ({@link ScgServletBenchGateway}). */
class ScgServletBenchGatewayTests extends AbstractBenchGatewayTests {

  @Override
  protected ConfigurableApplicationContext start(String... args) {
    return ScgServletBenchGateway.application().run(args);
  }
}

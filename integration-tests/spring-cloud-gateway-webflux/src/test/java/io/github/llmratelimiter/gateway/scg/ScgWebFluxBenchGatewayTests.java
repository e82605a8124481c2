package io.github.llmratelimiter.gateway.scg;

import io.github.llmratelimiter.bench.scg.ScgWebFluxBenchGateway;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The benchmark gateway of Spring Cloud Gateway Server WebFlux ({@link ScgWebFluxBenchGateway}),
 * under this module's BlockHound.
 */
class ScgWebFluxBenchGatewayTests extends AbstractBenchGatewayTests {

  @Override
  protected ConfigurableApplicationContext start(String... args) {
    return ScgWebFluxBenchGateway.application().run(args);
  }
}

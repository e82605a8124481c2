package io.github.llmratelimiter.webflux;

import io.github.llmratelimiter.autoconfigure.stacks.AbstractWebStackScenarioTests;
import org.springframework.boot.WebApplicationType;

/**
 * The scenario list Spring MVC runs too ({@link AbstractWebStackScenarioTests}), on WebFlux and Netty with
 * nothing of the servlet stack on the class path, under BlockHound.
 */
class ReactiveScenarioTests extends AbstractWebStackScenarioTests {

  @Override
  protected WebApplicationType stack() {
    return WebApplicationType.REACTIVE;
  }
}

package io.github.llmratelimiter.webflux;

import io.github.llmratelimiter.autoconfigure.stacks.WebStackScenarios;
import org.springframework.boot.WebApplicationType;

/**
 * The scenario list Spring MVC runs too ({@link WebStackScenarios}), on WebFlux and Netty with
 * nothing of the servlet stack on the class path, under BlockHound.
 */
class ReactiveScenarioTests extends WebStackScenarios {

  @Override
  protected WebApplicationType stack() {
    return WebApplicationType.REACTIVE;
  }
}

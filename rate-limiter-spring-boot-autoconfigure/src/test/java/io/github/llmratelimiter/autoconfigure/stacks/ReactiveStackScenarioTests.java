package io.github.llmratelimiter.autoconfigure.stacks;

import org.springframework.boot.WebApplicationType;

/** The scenarios on WebFlux, beside the servlet stack on the class path. */
class ReactiveStackScenarioTests extends AbstractWebStackScenarioTests {

  @Override
  protected WebApplicationType stack() {
    return WebApplicationType.REACTIVE;
  }
}

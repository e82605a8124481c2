package io.github.llmratelimiter.autoconfigure.stacks;

import org.springframework.boot.WebApplicationType;

/** The scenarios on Spring MVC, on Tomcat. */
class ServletStackScenarioTests extends AbstractWebStackScenarioTests {

  @Override
  protected WebApplicationType stack() {
    return WebApplicationType.SERVLET;
  }
}

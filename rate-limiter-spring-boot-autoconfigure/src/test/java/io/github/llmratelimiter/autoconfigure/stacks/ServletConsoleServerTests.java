package io.github.llmratelimiter.autoconfigure.stacks;

import org.springframework.boot.WebApplicationType;

/** The console's server scenarios on Spring MVC, on Tomcat. */
class ServletConsoleServerTests extends AbstractConsoleServerTests {

  @Override
  protected WebApplicationType stack() {
    return WebApplicationType.SERVLET;
  }
}

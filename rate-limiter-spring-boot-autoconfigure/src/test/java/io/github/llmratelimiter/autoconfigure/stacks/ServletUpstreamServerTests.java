package io.github.llmratelimiter.autoconfigure.stacks;

import org.springframework.boot.WebApplicationType;

/** Upstreams end to end on Spring MVC (Tomcat). */
class ServletUpstreamServerTests extends AbstractUpstreamServerTests {

  @Override
  protected WebApplicationType stack() {
    return WebApplicationType.SERVLET;
  }
}

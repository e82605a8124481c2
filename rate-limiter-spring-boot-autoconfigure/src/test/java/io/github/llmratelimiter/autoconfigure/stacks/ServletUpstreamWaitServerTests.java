package io.github.llmratelimiter.autoconfigure.stacks;

import org.springframework.boot.WebApplicationType;

/**
 * Waiting for an upstream on Spring MVC (Tomcat): a waiting call blocks its request thread, at
 * most its longest wait.
 */
class ServletUpstreamWaitServerTests extends AbstractUpstreamWaitServerTests {

  @Override
  protected WebApplicationType stack() {
    return WebApplicationType.SERVLET;
  }
}

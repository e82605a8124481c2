package io.github.llmratelimiter.autoconfigure.stacks;

import org.springframework.boot.WebApplicationType;

/** The pending-charge scenarios on Spring MVC. */
class ServletPendingChargeTests extends AbstractPendingChargeTests {

  @Override
  protected WebApplicationType stack() {
    return WebApplicationType.SERVLET;
  }
}

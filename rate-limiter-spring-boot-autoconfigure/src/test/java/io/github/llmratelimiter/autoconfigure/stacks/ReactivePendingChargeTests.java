package io.github.llmratelimiter.autoconfigure.stacks;

import org.springframework.boot.WebApplicationType;

/** The pending-charge scenarios on WebFlux. */
class ReactivePendingChargeTests extends AbstractPendingChargeTests {

  @Override
  protected WebApplicationType stack() {
    return WebApplicationType.REACTIVE;
  }
}

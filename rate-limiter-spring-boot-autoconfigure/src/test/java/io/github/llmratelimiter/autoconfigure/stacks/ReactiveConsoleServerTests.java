package io.github.llmratelimiter.autoconfigure.stacks;

import org.springframework.boot.WebApplicationType;

/** The console's server scenarios on WebFlux. */
class ReactiveConsoleServerTests extends AbstractConsoleServerTests {

  @Override
  protected WebApplicationType stack() {
    return WebApplicationType.REACTIVE;
  }
}

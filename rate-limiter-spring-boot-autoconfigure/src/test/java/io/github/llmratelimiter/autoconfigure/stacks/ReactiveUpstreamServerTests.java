package io.github.llmratelimiter.autoconfigure.stacks;

import org.springframework.boot.WebApplicationType;

/** Upstreams end to end on WebFlux (Netty). */
class ReactiveUpstreamServerTests extends AbstractUpstreamServerTests {

  @Override
  protected WebApplicationType stack() {
    return WebApplicationType.REACTIVE;
  }
}

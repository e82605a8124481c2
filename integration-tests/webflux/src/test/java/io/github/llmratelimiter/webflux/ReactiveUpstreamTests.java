package io.github.llmratelimiter.webflux;

import io.github.llmratelimiter.autoconfigure.stacks.AbstractUpstreamServerTests;
import org.springframework.boot.WebApplicationType;

/**
 * Upstreams end to end ({@link AbstractUpstreamServerTests}) on WebFlux and Netty with nothing of
 * the servlet stack on the class path, under BlockHound: the provider's report is applied without
 * blocking an event loop.
 */
class ReactiveUpstreamTests extends AbstractUpstreamServerTests {

  @Override
  protected WebApplicationType stack() {
    return WebApplicationType.REACTIVE;
  }
}

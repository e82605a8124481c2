package io.github.llmratelimiter.autoconfigure.stacks;

import org.springframework.boot.WebApplicationType;

/**
 * Waiting for an upstream on WebFlux (Netty), where a waiting call holds no thread and a client
 * that disconnects leaves the queue at once.
 */
class ReactiveUpstreamWaitServerTests extends AbstractUpstreamWaitServerTests {

  @Override
  protected WebApplicationType stack() {
    return WebApplicationType.REACTIVE;
  }
}

package io.github.llmratelimiter.webflux;

import io.github.llmratelimiter.autoconfigure.stacks.AbstractUpstreamWaitServerTests;
import io.github.llmratelimiter.redis.RedisServer;
import org.junit.jupiter.api.AfterAll;
import org.springframework.boot.WebApplicationType;

/**
 * Waiting for an upstream end to end ({@link AbstractUpstreamWaitServerTests}) on WebFlux and
 * Netty with the Redis store on a real redis-server of its own, under BlockHound: a waiting call,
 * its retries and its cancellation block no event loop.
 */
class ReactiveRedisUpstreamWaitTests extends AbstractUpstreamWaitServerTests {

  private RedisServer server;

  @Override
  protected WebApplicationType stack() {
    return WebApplicationType.REACTIVE;
  }

  @Override
  protected String[] storeProperties() {
    if (server == null) {
      server = RedisServer.start();
    }
    return new String[] {"ratelimiter.store=redis", "spring.data.redis.host=127.0.0.1",
        "spring.data.redis.port=" + server.port(), "management.health.redis.enabled=false"};
  }

  @AfterAll
  void stopRedis() {
    stopApplication();
    server.close();
  }
}

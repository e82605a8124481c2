package io.github.llmratelimiter.webflux;

import io.github.llmratelimiter.autoconfigure.stacks.AbstractUpstreamServerTests;
import io.github.llmratelimiter.redis.RedisServer;
import org.junit.jupiter.api.AfterAll;
import org.springframework.boot.WebApplicationType;

/**
 * Upstreams end to end ({@link AbstractUpstreamServerTests}) on WebFlux and Netty with the Redis
 * store on a real redis-server of its own, nothing of the servlet stack on the class path, under
 * BlockHound: the provider's report reaches the upstream's state in Redis without blocking an event
 * loop, and the next tenant's call is refused on Redis's own clock.
 */
class ReactiveRedisUpstreamTests extends AbstractUpstreamServerTests {

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

package io.github.llmratelimiter.autoconfigure.redis;

import io.github.llmratelimiter.autoconfigure.stacks.WebStackScenarios;
import io.github.llmratelimiter.redis.RedisServer;
import org.junit.jupiter.api.AfterAll;
import org.springframework.boot.WebApplicationType;

/**
 * The shared web scenarios on the servlet stack with the Redis store on a real redis-server: the same
 * limits, headers, problems, plans and calls in flight (slots released on complete, cancel, error
 * and disconnect) as on the in-memory store. The one scenario that moves the store's time is left
 * out: Redis decides on its own clock.
 */
class RedisServletStackScenarioTests extends WebStackScenarios {

  private RedisServer server;

  @Override
  protected WebApplicationType stack() {
    return WebApplicationType.SERVLET;
  }

  @Override
  protected String[] storeProperties() {
    server = RedisServer.start();
    return new String[] {"ratelimiter.store=redis", "spring.data.redis.host=127.0.0.1",
        "spring.data.redis.port=" + server.port(), "management.health.redis.enabled=false"};
  }

  @Override
  protected boolean storeTimeIsManual() {
    return false;
  }

  @AfterAll
  void stopRedis() {
    app().close();
    server.close();
  }
}

package io.github.llmratelimiter.autoconfigure.redis;

import io.github.llmratelimiter.autoconfigure.stacks.AbstractWebStackScenarioTests;
import io.github.llmratelimiter.redis.RedisServer;
import org.junit.jupiter.api.AfterAll;

/**
 * The shared web scenarios with the Redis store on a real redis-server of their own: the same
 * limits, headers, problems, plans and calls in flight (slots released on complete, cancel, error
 * and disconnect) as on the in-memory store. The scenarios that move the store's time or assert
 * exact retry times are left out: Redis decides on its own clock. A subclass picks the stack.
 */
abstract class AbstractRedisStackScenarioTests extends AbstractWebStackScenarioTests {

  private RedisServer server;

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

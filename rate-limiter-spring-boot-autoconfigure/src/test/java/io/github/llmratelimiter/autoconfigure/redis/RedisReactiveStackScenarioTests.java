package io.github.llmratelimiter.autoconfigure.redis;

import org.springframework.boot.WebApplicationType;

/** The shared web scenarios on the reactive stack with the Redis store. */
class RedisReactiveStackScenarioTests extends AbstractRedisStackScenarioTests {

  @Override
  protected WebApplicationType stack() {
    return WebApplicationType.REACTIVE;
  }
}

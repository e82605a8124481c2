package io.github.llmratelimiter.autoconfigure.redis;

import org.springframework.boot.WebApplicationType;

/** The shared web scenarios on the servlet stack with the Redis store. */
class RedisServletStackScenarioTests extends AbstractRedisStackScenarioTests {

  @Override
  protected WebApplicationType stack() {
    return WebApplicationType.SERVLET;
  }
}

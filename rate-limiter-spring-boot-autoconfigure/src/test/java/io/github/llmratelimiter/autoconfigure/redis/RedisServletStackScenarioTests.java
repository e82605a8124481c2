package io.github.llmratelimiter.autoconfigure.redis;

import org.springframework.boot.WebApplicationType;

/** The shared web scenarios on the servlet stack with the Redis store. */
class RedisServletStackScenarioTests extends RedisStackScenarios {

  @Override
  protected WebApplicationType stack() {
    return WebApplicationType.SERVLET;
  }
}

package io.github.llmratelimiter.redis;

import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A real redis-server for one test class (register it as a static field with {@code
 * @RegisterExtension}): started before the class's tests, running again before each test (a test
 * may stop it), stopped after the last. Public (in this module's test jar) for the Spring tests.
 */
public final class RunningRedis implements BeforeAllCallback, BeforeEachCallback, AfterAllCallback {

  private RedisServer server;

  /**
   * Returns the server, once the class's tests have begun.
   *
   * @return the server
   */
  public RedisServer server() {
    return server;
  }

  @Override
  public void beforeAll(ExtensionContext context) {
    server = RedisServer.start();
  }

  @Override
  public void beforeEach(ExtensionContext context) {
    if (!server.running()) {
      server.restart();
    }
  }

  @Override
  public void afterAll(ExtensionContext context) {
    server.close();
  }
}

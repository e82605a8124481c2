package io.github.llmratelimiter.webflux;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Fails a test (or, for what runs after its last test, a test class) during which BlockHound caught
 * a blocking call on a non-blocking thread ({@link BlockingCalls}); registered for every test of
 * this module by automatic extension registration. A call caught between two tests fails the next
 * one.
 */
public final class NoBlockingCalls implements AfterEachCallback, AfterAllCallback {

  @Override
  public void afterEach(ExtensionContext context) {
    assertThat(BlockingCalls.takeAll()).as("blocking calls on non-blocking threads").isEmpty();
  }

  @Override
  public void afterAll(ExtensionContext context) {
    assertThat(BlockingCalls.takeAll()).as("blocking calls on non-blocking threads").isEmpty();
  }
}

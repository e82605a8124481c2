package io.github.llmratelimiter.redis;

import io.lettuce.core.resource.NettyCustomizer;
import io.netty.bootstrap.Bootstrap;
import io.netty.channel.Channel;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * Tells whether the event loop that reads the store's replies has been running: a task on the
 * connection's event loop notes the time every {@value #TICK_MILLIS} ms. Netty reads a channel's
 * pending input before it runs the loop's tasks, so a tick at a time {@code t} means every reply
 * that had arrived by then was read. On a machine whose cores are busy (a burst wakes hundreds of
 * request threads), the loop may not run for a while; a silence it did not see is not Redis's.
 *
 * <p>It wraps the application's own {@link NettyCustomizer}, if any, and follows reconnections.
 */
final class EventLoopWatch implements NettyCustomizer {

  static final long TICK_MILLIS = 5;

  private final @Nullable NettyCustomizer delegate;
  private volatile long tickedAt = System.nanoTime();

  EventLoopWatch(@Nullable NettyCustomizer delegate) {
    this.delegate = delegate;
  }

  /** The {@code System.nanoTime()} of the loop's last tick. */
  long tickedAt() {
    return tickedAt;
  }

  @Override
  public void afterBootstrapInitialized(Bootstrap bootstrap) {
    if (delegate != null) {
      delegate.afterBootstrapInitialized(bootstrap);
    }
  }

  @Override
  public void afterChannelInitialized(Channel channel) {
    if (delegate != null) {
      delegate.afterChannelInitialized(channel);
    }
    ScheduledFuture<?> tick = channel.eventLoop().scheduleAtFixedRate(
        () -> tickedAt = System.nanoTime(), 0, TICK_MILLIS, TimeUnit.MILLISECONDS);
    channel.closeFuture().addListener(closed -> tick.cancel(false));
  }
}

package io.github.llmratelimiter.autoconfigure;

import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.Ticker;
import io.github.llmratelimiter.gateway.UpstreamRoutes;
import io.github.llmratelimiter.gateway.UpstreamWaitingRoom;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.condition.ConditionOutcome;
import org.springframework.boot.autoconfigure.condition.SpringBootCondition;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.context.annotation.ConditionContext;
import org.springframework.core.type.AnnotatedTypeMetadata;

/**
 * Builds the {@link UpstreamWaitingRoom} of the configured upstreams: on one daemon scheduler
 * thread (its retries, deadlines and polls), with the store's shared order of the upstreams'
 * waiting calls when the store keeps one ({@link RateLimitStore#upstreamOrder()}), told to the
 * application's {@link UpstreamWaitingRoom.Listener} beans, and closed with the context (every wait
 * ends, then the thread stops).
 */
final class UpstreamWaitingRoomFactory implements AutoCloseable {

  private final ScheduledThreadPoolExecutor executor;
  private final UpstreamWaitingRoom room;
  private volatile @Nullable List<UpstreamWaitingRoom.Listener> listeners;

  UpstreamWaitingRoomFactory(Map<String, Integer> maxWaiters,
      ObjectProvider<UpstreamWaitingRoom.Listener> beans, RateLimitStore store,
      UpstreamRoutes routes) {
    executor = new ScheduledThreadPoolExecutor(1, r -> {
      Thread t = new Thread(r, "ratelimiter-upstream-wait");
      t.setDaemon(true);
      return t;
    });
    executor.setRemoveOnCancelPolicy(true);
    room = new UpstreamWaitingRoom(Ticker.system(), UpstreamWaitingRoom.Scheduler.of(executor),
        maxWaiters, UpstreamWaitingRoom.DEFAULT_MAX_WAITERS, UpstreamWaitingRoom.DEFAULT_MEMORY, (call, ending, nanos) -> {
          List<UpstreamWaitingRoom.Listener> list = listeners;
          if (list == null) { // asked on the first wait, so that a listener may depend on the room
            list = beans.orderedStream().toList();
            listeners = list;
          }
          for (UpstreamWaitingRoom.Listener l : list) {
            try {
              l.waitEnded(call, ending, nanos);
            } catch (RuntimeException e) { // a listener's failure ends no wait
              System.getLogger(UpstreamWaitingRoomFactory.class.getName()).log(
                  System.Logger.Level.WARNING, "An upstream wait listener failed: " + e);
            }
          }
        }, store.upstreamOrder(), routes.upstreams().values());
  }

  /** The most calls that wait for each upstream: its {@code max-waiters}. */
  static Map<String, Integer> maxWaiters(RateLimiterProperties properties) {
    Map<String, Integer> max = new LinkedHashMap<>();
    properties.getUpstreams().forEach((name, u) -> {
      if (u != null) {
        max.put(name, PropertiesTranslation.maxWaiters(name, u));
      }
    });
    return max;
  }

  UpstreamWaitingRoom room() {
    return room;
  }

  @Override
  public void close() {
    room.close();
    executor.shutdownNow();
  }

  /** Matches when at least one upstream is configured ({@code ratelimiter.upstreams}). */
  static final class OnUpstreams extends SpringBootCondition {
    @Override
    public ConditionOutcome getMatchOutcome(
        ConditionContext context, AnnotatedTypeMetadata metadata) {
      boolean any = Binder.get(context.getEnvironment())
          .bind("ratelimiter.upstreams", Bindable.mapOf(String.class, Object.class))
          .map(m -> !m.isEmpty()).orElse(false);
      return any ? ConditionOutcome.match("ratelimiter.upstreams is set")
          : ConditionOutcome.noMatch("no ratelimiter.upstreams");
    }
  }
}

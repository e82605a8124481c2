package io.github.llmratelimiter.autoconfigure.metrics;

import io.github.llmratelimiter.gateway.UpstreamRoutes;
import io.github.llmratelimiter.gateway.UpstreamWaitingRoom;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * The meters of the calls that wait for an upstream ({@link UpstreamWaitingRoom}), tagged {@code
 * upstream} (a configured name): the timer {@value #WAIT} of how long each wait lasted, tagged
 * {@code outcome} (how it ended: {@code admitted}, {@code denied}, {@code timed_out}, {@code
 * refused}, {@code cancelled}, {@code failed}, {@code closed}); the counter {@value #TIMED_OUT} of
 * the calls whose longest wait passed; and the gauge {@value #QUEUE} of the calls waiting now.
 * A call decided at once, without waiting, is not timed. No tag carries a key.
 */
final class UpstreamWaitMetrics implements UpstreamWaitingRoom.Listener {

  static final String WAIT = "ratelimiter.upstream.wait";
  static final String TIMED_OUT = "ratelimiter.upstream.wait.timeouts";
  static final String QUEUE = "ratelimiter.upstream.queue";

  private final MeterRegistry registry;
  private final Map<String, Timer> timers = new ConcurrentHashMap<>();
  private final Map<String, Counter> timeouts = new ConcurrentHashMap<>();

  UpstreamWaitMetrics(MeterRegistry registry, UpstreamWaitingRoom room, UpstreamRoutes routes) {
    this.registry = registry;
    for (String upstream : routes.upstreams().keySet()) {
      Gauge.builder(QUEUE, room, r -> r.waiting(upstream))
          .description("Calls waiting for an upstream")
          .tag("upstream", upstream)
          .register(registry);
    }
  }

  @Override
  public void waitEnded(UpstreamWaitingRoom.Call call, UpstreamWaitingRoom.Ending ending,
      long waitedNanos) {
    String outcome = ending.name().toLowerCase(Locale.ROOT);
    timers.computeIfAbsent(call.upstream() + '\0' + outcome, k -> Timer.builder(WAIT)
            .description("How long calls waited for an upstream")
            .tag("upstream", call.upstream())
            .tag("outcome", outcome)
            .register(registry))
        .record(Math.max(0, waitedNanos), TimeUnit.NANOSECONDS);
    if (ending == UpstreamWaitingRoom.Ending.TIMED_OUT) {
      timeouts.computeIfAbsent(call.upstream(), u -> Counter.builder(TIMED_OUT)
          .description("Calls whose longest wait for an upstream passed")
          .tag("upstream", u)
          .register(registry)).increment();
    }
  }
}

package io.github.llmratelimiter.benchmarks.redis;

import io.github.llmratelimiter.core.UpstreamOrder;
import io.github.llmratelimiter.redis.RedisRateLimitStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The upstream's fair order in the runs whose calls carry a turn while no call waits: opened as a
 * gateway opens it (subscribed to its wake-ups) before the measured calls, and checked after them
 * in Redis: no call waits, no tenant has a counter of its own, and the order's last-left counter
 * (the service of every call admitted at once, each lifted to the previous one's mark) is the
 * decisions times the estimate.
 */
final class EmptyOrder {

  /** How long the order's subscription may take to be in place. */
  private static final Duration SUBSCRIBED_WITHIN = Duration.ofSeconds(10);

  private EmptyOrder() {}

  /**
   * Opens {@code store}'s order and waits until a node lists the subscription to the order's
   * wake-ups ({@code PUBSUB CHANNELS}), so that no command of the subscription's connection falls
   * among the measured calls.
   *
   * @param nodes administrative connections to every master
   * @return the order
   * @throws IllegalStateException if the store keeps no order or the subscription took too long
   * @throws InterruptedException if interrupted while waiting
   */
  static UpstreamOrder open(RedisRateLimitStore store, List<RedisInfo> nodes)
      throws InterruptedException {
    UpstreamOrder order = store.upstreamOrder();
    if (order == null) {
      throw new IllegalStateException("the Redis store keeps no upstream order");
    }
    long deadline = System.nanoTime() + SUBSCRIBED_WITHIN.toNanos();
    while (nodes.stream().allMatch(n -> n.commands().pubsubChannels("*:upstream-signal")
        .isEmpty())) {
      if (System.nanoTime() - deadline > 0) {
        throw new IllegalStateException("the upstream order did not subscribe within "
            + SUBSCRIBED_WITHIN);
      }
      Thread.sleep(10);
    }
    return order;
  }

  /**
   * Checks the order after a run whose every call was admitted at once with a turn of weight 1:
   * none waits, no tenant has a counter of its own (a call admitted while none waits moves only
   * its class's last-left counter), and class 0's last-left counter is {@code decisions ×
   * estimate} (the order's keys as {@code lib.lua} lays them out, read on the node that holds
   * them).
   *
   * @param order the store's order
   * @param nodes administrative connections to every master
   * @param decisions the admitted calls since the server started
   * @param estimate each call's estimate
   * @throws IllegalStateException if any of these does not hold
   */
  static void verify(UpstreamOrder order, List<RedisInfo> nodes, long decisions, long estimate) {
    long waiting = order.waiting(RedisLimiter.UPSTREAM).toCompletableFuture().join();
    String pattern = "*{upstream:" + RedisLimiter.UPSTREAM.name() + "}:o:";
    List<String> marks = new ArrayList<>();
    List<String> counters = new ArrayList<>();
    String lastLeft = null;
    for (RedisInfo n : nodes) {
      counters.addAll(n.commands().keys(pattern + "c"));
      for (String key : n.commands().keys(pattern + "l")) {
        marks.add(key);
        lastLeft = n.commands().hget(key, "0");
      }
    }
    double expected = (double) decisions * estimate;
    if (waiting != 0 || marks.size() != 1 || !counters.isEmpty() || lastLeft == null
        || Double.parseDouble(lastLeft) != expected) {
      throw new IllegalStateException(String.format(Locale.ROOT, "the upstream's order after %,d "
              + "decisions of estimate %d: %d waiting (0 expected), last-left counters %s (one "
              + "expected), tenants' counters %s (none expected), last-left counter %s (%.0f "
              + "expected)", decisions, estimate, waiting, marks, counters, lastLeft, expected));
    }
  }
}

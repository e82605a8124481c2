package io.github.llmratelimiter.redis;

import io.github.llmratelimiter.core.Upstream;
import io.github.llmratelimiter.core.UpstreamOrder;
import io.github.llmratelimiter.core.UpstreamTurn;
import io.github.llmratelimiter.core.internal.Args;
import io.github.llmratelimiter.core.internal.OrderSignals;
import io.lettuce.core.RedisException;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.output.IntegerOutput;
import io.lettuce.core.output.ValueOutput;
import io.lettuce.core.pubsub.RedisPubSubAdapter;
import io.lettuce.core.pubsub.StatefulRedisPubSubConnection;
import java.lang.System.Logger.Level;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.HexFormat;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * The fair order of the calls that wait for an upstream, in Redis, shared by every gateway instance
 * on the same Redis and key prefix: under each upstream's own hash tag ({@link RedisKeys#order}),
 * so that the upstream's admission ({@code acquire.lua}, or {@code upstream-acquire.lua} on a
 * Cluster) reads it with the upstream's state in one script, and one step per script ({@code
 * order-enter.lua}, {@code order-leave.lua}, {@code order-first.lua}, {@code order-settle.lua},
 * {@code order-waiting.lua}; the shared functions in {@code lib.lua}). Tenants are kept as hashes
 * only ({@link RedisKeys#tenant}); time is the store's (the server's {@code TIME}, or its ticker);
 * a tenant neither backlogged nor served for a minute is forgotten.
 *
 * <p>Ids are this instance's random id and a counter, so they are unique across instances. A
 * waiting call's deadline is kept in Redis: the scripts that read the order take out the calls
 * whose deadline passed, so an instance that dies holds the order for at most its calls' longest
 * wait.
 *
 * <p>Wake-ups: {@link #signal} publishes the upstream's name on the prefix's signal channel
 * ({@link RedisKeys#signalChannel}), and the scripts publish there themselves when the first
 * waiting call changes (one admitted or gone) while calls still wait; every instance subscribes
 * once, on a publish/subscribe connection of its own, and tells its listeners. A signal is
 * published only while this instance knows calls may wait for the upstream (else only its own
 * listeners are told, without Redis): {@code order-enter.lua} publishes on the waiting channel
 * ({@link RedisKeys#waitingChannel}) when a call enters an empty order or waits past the horizon
 * last published (at most twice the call's longest wait ahead), so that no round trip is spent on
 * a signal while no one waits. A message lost while the subscription reconnects is covered by the
 * listeners' poll ({@link #pollInterval}).
 *
 * <p>Every call goes through the circuit breaker of the master that serves the upstream and
 * completes exceptionally, within the store's bounded wait, when Redis does not answer.
 */
final class RedisUpstreamOrder implements UpstreamOrder, AutoCloseable {

  /** How long a call the order denies waits before asking again, when the upstream has room. */
  static final Duration POLL_INTERVAL = Duration.ofSeconds(1);
  /** The longest a call waits in the order: a longer wait is cut to it. */
  static final Duration LONGEST_WAIT = Duration.ofDays(365);
  /** How long a tenant neither backlogged nor served keeps its counter: lib.lua's memory. */
  static final long MEMORY_MS = 60_000;

  private static final System.Logger LOG = System.getLogger(RedisRateLimitStore.class.getName());
  private static final LuaScript ENTER = LuaScript.load("order-enter.lua");
  private static final LuaScript LEAVE = LuaScript.load("order-leave.lua");
  private static final LuaScript FIRST = LuaScript.load("order-first.lua");
  private static final LuaScript SETTLE = LuaScript.load("order-settle.lua");
  private static final LuaScript WAITING = LuaScript.load("order-waiting.lua");

  private final LuaRateLimitStore store;
  private final RedisLink link;
  private final RedisKeys layout;
  /** This instance's part of every id. */
  private final String instance;
  private final AtomicLong ids = new AtomicLong();
  /** This instance's listeners, told on a delivery thread: never Lettuce's event loop. */
  private final OrderSignals signals = new OrderSignals();
  /** Per upstream name, the {@code System.nanoTime()} until which calls may wait for it. */
  private final ConcurrentHashMap<String, Long> waitingUntil = new ConcurrentHashMap<>();
  private @Nullable CompletableFuture<? extends StatefulRedisPubSubConnection<String, String>>
      subscription;
  private boolean closed;

  RedisUpstreamOrder(LuaRateLimitStore store, RedisLink link, RedisKeys layout) {
    this.store = store;
    this.link = link;
    this.layout = layout;
    byte[] random = new byte[8];
    new SecureRandom().nextBytes(random);
    this.instance = HexFormat.of().formatHex(random);
    subscribed();
  }

  /**
   * The subscription to the signal and waiting channels, started anew when the last attempt
   * failed (Lettuce subscribes again by itself after a reconnection of an open one).
   */
  synchronized CompletableFuture<Void> subscribed() {
    if (closed) {
      return CompletableFuture.failedFuture(new RedisException("the order is closed"));
    }
    CompletableFuture<? extends StatefulRedisPubSubConnection<String, String>> s = subscription;
    if (s == null || s.isCompletedExceptionally()) {
      s = link.pubSub().thenCompose(connection -> {
        connection.addListener(new RedisPubSubAdapter<>() {
          @Override
          public void message(String channel, String message) {
            heard(channel, message);
          }
        });
        return connection.async()
            .subscribe(layout.signalChannel(), layout.waitingChannel())
            .toCompletableFuture()
            .thenApply(ignored -> connection);
      });
      s.whenComplete((c, failure) -> {
        if (failure != null) {
          LOG.log(Level.DEBUG, "could not subscribe to the upstreams' wake-ups: {0}",
              failure.toString());
        }
      });
      subscription = s;
    }
    return s.thenApply(ignored -> null);
  }

  /** A message on one of the channels: a wake-up for the listeners, or calls that may wait. */
  private void heard(String channel, String message) {
    if (channel.equals(layout.signalChannel())) {
      tell(RedisKeys.decode(message));
    } else if (channel.equals(layout.waitingChannel())) {
      int space = message.lastIndexOf(' ');
      if (space > 0) {
        try {
          mayWait(RedisKeys.decode(message.substring(0, space)),
              Long.parseLong(message.substring(space + 1)) * 1_000_000L);
        } catch (NumberFormatException e) {
          LOG.log(Level.DEBUG, "ignored a malformed waiting notice");
        }
      }
    }
  }

  /** Tells every listener of this instance that an upstream may admit a call again. */
  private void tell(String upstream) {
    signals.signal(upstream);
  }

  /** Notes that calls may wait for an upstream for the next {@code nanos}. */
  private void mayWait(String upstream, long nanos) {
    long until = System.nanoTime() + nanos;
    waitingUntil.merge(upstream, until, (a, b) -> b - a > 0 ? b : a);
  }

  /** Whether calls may wait for an upstream, as far as this instance heard. */
  boolean mayWait(String upstream) {
    return mayHaveWaited(upstream, 0);
  }

  /**
   * Whether calls may have waited for an upstream within the last {@code sinceNanos}, as far as
   * this instance heard (one entry per upstream name, kept: their number is the configuration's).
   */
  private boolean mayHaveWaited(String upstream, long sinceNanos) {
    Long until = waitingUntil.get(upstream);
    return until != null && until + sinceNanos - System.nanoTime() > 0;
  }

  @Override
  public CompletionStage<String> enter(Upstream upstream, UpstreamTurn turn, Duration maxWait) {
    Args.notNull("upstream", upstream);
    Args.notNull("turn", turn);
    Duration wait = Args.positive("maxWait", maxWait).compareTo(LONGEST_WAIT) > 0
        ? LONGEST_WAIT : maxWait;
    subscribed();
    String id = instance + "-" + ids.incrementAndGet();
    long waitMs = Math.max(1, (wait.toNanos() + 999_999) / 1_000_000);
    double[] numbers = store.timeNumbers(8); // ARGV[1] (see order-enter.lua)
    numbers[3] = turn.priority();
    numbers[4] = turn.weight();
    numbers[5] = turn.estimate();
    numbers[6] = store.units(wait);
    numbers[7] = waitMs + MEMORY_MS + (long) numbers[2];
    byte[][] args = {ScriptArgs.bulkOfString(layout.tenant(turn.tenant())),
        ScriptArgs.bulkOfString(id)};
    mayWait(upstream.name(), wait.toNanos());
    return store.runOrder(ENTER, LuaScript.list(), layout.order(upstream.name()), numbers, args)
        .handle((reply, failure) -> {
          if (failure != null) {
            // the script may have run although its answer was lost: the call must not stay first
            leave(upstream, id).exceptionally(ignored -> null);
            throw failure instanceof CompletionException e ? e : new CompletionException(failure);
          }
          return id;
        });
  }

  @Override
  public CompletionStage<Void> leave(Upstream upstream, String waiter) {
    Args.notNull("upstream", upstream);
    Args.notBlank("waiter", waiter);
    byte[][] args = {ScriptArgs.bulkOfString(waiter)};
    return store.runOrder(LEAVE, () -> new IntegerOutput<>(StringCodec.UTF8),
        layout.order(upstream.name()), store.timeNumbers(3), args).thenApply(reply -> null);
  }

  @Override
  public CompletionStage<Optional<String>> first(Upstream upstream) {
    Args.notNull("upstream", upstream);
    return store.runOrder(FIRST, () -> new ValueOutput<>(StringCodec.UTF8),
            layout.order(upstream.name()), store.timeNumbers(3), new byte[0][])
        .thenApply(id -> id == null || id.isEmpty() ? Optional.empty() : Optional.of(id));
  }

  /**
   * {@inheritDoc}
   *
   * <p>Only a tenant that waited within the order's memory keeps a counter, so a settlement is sent
   * to Redis only while this instance knows calls may have waited for the upstream within that
   * memory (see the class comment); otherwise it completes at once, without a round trip.
   */
  @Override
  public CompletionStage<Void> settled(Upstream upstream, UpstreamTurn turn, long actual) {
    Args.notNull("upstream", upstream);
    Args.notNull("turn", turn);
    Args.notNegative("actual", actual);
    if (!mayHaveWaited(upstream.name(), TimeUnit.MILLISECONDS.toNanos(MEMORY_MS))) {
      return CompletableFuture.completedFuture(null);
    }
    double[] numbers = store.timeNumbers(4); // ARGV[1] (see order-settle.lua)
    numbers[3] = (actual - turn.estimate()) / turn.weight();
    byte[][] args = {ScriptArgs.bulkOfString(layout.tenant(turn.tenant()))};
    return store.runOrder(SETTLE, () -> new IntegerOutput<>(StringCodec.UTF8),
        layout.order(upstream.name()), numbers, args).thenApply(reply -> null);
  }

  /**
   * {@inheritDoc}
   *
   * <p>Publishes while this instance knows calls may wait for the upstream (see the class comment)
   * and the breaker of the master that serves it is closed; every listener, this instance's
   * included, then hears it through the subscription (only this instance's listeners when the
   * publish fails). Otherwise no call waits anywhere as far as this instance heard: only this
   * instance's listeners are told, and nothing is sent to Redis. Listeners are told on a thread
   * of the order's own.
   */
  @Override
  public void signal(String upstream) {
    Args.notBlank("upstream", upstream);
    if (!mayWait(upstream)
        || store.masters().forKey(layout.order(upstream)).breaker().degraded()) {
      tell(upstream);
      return;
    }
    link.async().thenCompose(redis ->
            redis.publish(layout.signalChannel(), RedisKeys.encode(upstream)).toCompletableFuture())
        .whenComplete((receivers, failure) -> {
          if (failure != null) { // the others poll; this instance's listeners hear it at once
            LOG.log(Level.DEBUG, "could not signal an upstream's order: {0}", failure.toString());
            tell(upstream);
          }
        });
  }

  @Override
  public AutoCloseable listen(Consumer<String> listener) {
    AutoCloseable registration = signals.listen(listener);
    subscribed();
    return registration;
  }

  @Override
  public CompletionStage<Long> waiting(Upstream upstream) {
    Args.notNull("upstream", upstream);
    return store.runOrder(WAITING, () -> new IntegerOutput<>(StringCodec.UTF8),
        layout.order(upstream.name()), store.timeNumbers(3), new byte[0][]);
  }

  @Override
  public Duration pollInterval() {
    return POLL_INTERVAL;
  }

  /** Closes the subscription; the order's calls fail from then on. */
  @Override
  public void close() {
    CompletableFuture<? extends StatefulRedisPubSubConnection<String, String>> s;
    synchronized (this) {
      closed = true;
      s = subscription;
      subscription = null;
    }
    signals.clear();
    if (s != null) {
      s.thenAccept(StatefulRedisPubSubConnection::closeAsync);
    }
  }
}

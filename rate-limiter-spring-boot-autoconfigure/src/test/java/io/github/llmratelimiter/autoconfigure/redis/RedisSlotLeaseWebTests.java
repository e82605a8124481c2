package io.github.llmratelimiter.autoconfigure.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.core.Reason;
import io.github.llmratelimiter.redis.RedisRateLimitStore;
import io.github.llmratelimiter.redis.RunningRedis;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;

/**
 * A crashed gateway instance does not lock its tenants out: two real gateway applications on one
 * redis-server, every Redis setting at its default (a slot lease of 5 s), a key allowed two calls
 * in flight. Instance A runs two slow calls of the key; while A lives, a third call of the key on
 * instance B is refused with {@code CONCURRENCY_LIMIT} throughout two slot leases (A renews its
 * slots); then A crashes, and B admits the key again within 15 s. Three times (each takes about
 * 15 s of real time), each time with a new instance A; {@code bench/slot-crash} runs the same
 * scenario ten times on real processes killed with SIGKILL.
 *
 * <p>The crash is modelled in-process, faithfully for what Redis sees: A's store is closed while
 * its two calls are still in flight, so its Redis connection closes and its timer stops (no renewal
 * and no heartbeat from then on), and no release script runs (nothing of A reaches Redis any more;
 * its two calls end only after B has admitted the key). Real time must pass for the slots to
 * expire on Redis's clock: the test waits for conditions, each with a bound, and never sleeps a
 * fixed time to make time pass.
 */
class RedisSlotLeaseWebTests {

  private static final int REPETITIONS = 3;
  private static final long BOUND_MS = 15_000;
  private static final long SLOT_LEASE_MS = RedisRateLimitStore.Builder.DEFAULT_SLOT_LEASE.toMillis();

  @RegisterExtension
  static final RunningRedis REDIS = new RunningRedis();

  private final HttpClient http = HttpClient.newHttpClient();

  /** A slow chat call: it holds its slot until the test lets it end. */
  @RestController
  static class SlowChat {
    static volatile CountDownLatch end = new CountDownLatch(0);
    static final AtomicInteger RUNNING = new AtomicInteger();

    @PostMapping("/v1/chat/slow")
    Map<String, Object> chat(@RequestBody Map<String, Object> body) throws InterruptedException {
      RUNNING.incrementAndGet();
      try {
        end.await(60, TimeUnit.SECONDS);
      } finally {
        RUNNING.decrementAndGet();
      }
      return Map.of("model", body.getOrDefault("model", "none"));
    }
  }

  @Test
  void aCrashedInstancesSlotsFreeWithinFifteenSecondsWhileALiveInstanceHoldsThemThroughout() {
    String prefix = "slots-" + System.nanoTime();
    // a fresh key per repetition: its two slow calls and the one B admits are within its rpm limit
    // of 3; a call refused on its slots charges nothing
    String[] slots = {"--ratelimiter.policies.chat.concurrency.limit=2"};
    Class<?>[] sources = {SlowChat.class};
    List<Long> freedMs = new ArrayList<>();
    List<Integer> refusals = new ArrayList<>();
    try (ConfigurableApplicationContext survivor =
        RedisGateways.start(sources, REDIS.server(), prefix, slots)) {
      for (int rep = 1; rep <= REPETITIONS; rep++) {
        String key = "sk-slots-" + rep + "-" + System.nanoTime();
        CountDownLatch end = new CountDownLatch(1);
        SlowChat.end = end;
        try (ConfigurableApplicationContext holder =
            RedisGateways.start(sources, REDIS.server(), prefix, slots)) {
          List<CompletableFuture<HttpResponse<String>>> slow = List.of(
              send(holder, "/v1/chat/slow", key), send(holder, "/v1/chat/slow", key));
          await("both slow calls run on A", 20_000, () -> SlowChat.RUNNING.get() == 2);
          long runningSince = System.nanoTime();

          // A lives: its slots are renewed, and a third call is refused throughout two slot leases
          int refused = 0;
          while (System.nanoTime() - runningSince < TimeUnit.MILLISECONDS.toNanos(2 * SLOT_LEASE_MS)) {
            HttpResponse<String> third = join(send(survivor, "/v1/chat/completions", key));
            assertThat(third.statusCode()).as("rep %d: a third call while A lives", rep)
                .isEqualTo(429);
            assertThat(third.body()).contains("\"reason\":\"" + Reason.CONCURRENCY_LIMIT + "\"");
            long retryMs = Long.parseLong(third.headers().firstValue("retry-after-ms").orElseThrow());
            assertThat(retryMs).as("an upper bound: the lease timeout").isBetween(1L, 600_000L);
            refused++;
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(250));
          }
          assertThat(SlowChat.RUNNING.get()).isEqualTo(2);

          RedisGateways.store(holder).close(); // A crashes with both calls in flight
          long crashed = System.nanoTime();
          await("rep " + rep + ": B admits the key", BOUND_MS,
              () -> join(send(survivor, "/v1/chat/completions", key)).statusCode() == 200);
          freedMs.add(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - crashed));
          refusals.add(refused);
          end.countDown(); // A's calls end; their releases cannot reach Redis
          slow.forEach(f -> join(f.handle((r, e) -> null)));
        }
      }
    } finally {
      SlowChat.end.countDown();
    }
    System.out.printf("slot leases: B admitted the key %s ms after each crash; refused the third"
        + " call %s times while A lived%n", freedMs, refusals);
    assertThat(freedMs).hasSize(REPETITIONS).allMatch(ms -> ms <= BOUND_MS);
  }

  private CompletableFuture<HttpResponse<String>> send(
      ConfigurableApplicationContext app, String path, String apiKey) {
    return http.sendAsync(HttpRequest.newBuilder(
            URI.create("http://localhost:" + RedisGateways.port(app) + path))
        .header("Authorization", "Bearer " + apiKey).header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString("{\"model\":\"" + RedisGateways.MODEL + "\"}"))
        .timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString());
  }

  private static <T> T join(CompletableFuture<T> f) {
    try {
      return f.get(20, TimeUnit.SECONDS);
    } catch (Exception e) {
      throw new AssertionError("no answer within 20 s", e);
    }
  }

  /** Waits, bounded, for a condition that needs real time (Redis's clock) to pass. */
  private static void await(String what, long boundMs, BooleanSupplier condition) {
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(boundMs);
    while (!condition.getAsBoolean()) {
      assertThat(System.nanoTime() - deadline).as(what + " within " + boundMs + " ms").isNegative();
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(100));
    }
  }
}

package io.github.llmratelimiter.sample;

import static org.assertj.core.api.Assertions.assertThat;

import com.jayway.jsonpath.JsonPath;
import io.github.llmratelimiter.autoconfigure.QuotaThresholdCrossedEvent;
import io.github.llmratelimiter.core.QuotaUnit;
import io.github.llmratelimiter.redis.RedisRateLimitStore;
import io.github.llmratelimiter.redis.RunningRedis;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ApplicationListener;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * Two instances of the sample gateway with its "redis" profile on one real redis-server, attacked
 * with bursts of 150 concurrent calls of one API key spread over both, a fresh key each time, 20
 * times, until the free plan's daily spend quota ({@code daily-spend} on the {@code per-key}
 * level: 0.004 a day, that is 4000 micro-units, thresholds 50, 80 and 100 %) is what denies.
 *
 * <p>Every other limit of the sample is lifted so that the quota is the binding one: the request
 * windows ({@code rpm} of the default, {@code per-key} and {@code chat} policies, of gpt-4o on
 * {@code chat}, and of the free plan's {@code chat}), the burst bucket, the {@code chat} TPM limit
 * (500 a minute would admit 6 of these calls) and the 2 calls in flight. The prices, the plan, the
 * quota and the estimator are the sample's.
 *
 * <p>Each call is {@value #BODY}. Its estimate before the call is {@value #ESTIMATED_TOKENS} model
 * tokens (the message's 10 bytes of role and content over 4, rounded up: 3; 4 per message; 3 per
 * request; 64 default completion tokens) at gpt-4o's highest price (10.00 a million):
 * {@value #ESTIMATE} micro-units. The stand-in model counts words: 1 prompt token ("Hello!") and 4
 * completion tokens ("Echo from gpt-4o: Hello!"), so it settles at 2.50 + 4 x 10.00 per million
 * tokens, 42.5 rounded up: {@value #COST} micro-units. Usage below the estimate never overshoots:
 * the stored use must never exceed the limit at all.
 *
 * <p>The number of 200s depends on when calls settle relative to the others' reservations, but is
 * bounded: a deny means the use before it plus the estimate exceeded the limit, at most 5 estimates
 * fit at once (5 x 740 = 3700), so at least 5 pass; and the last admitted call found at least
 * {@value #COST} for each one before it plus its own estimate within the limit, so at most 76 pass
 * ((4000 - 740) / 43 = 75.8, plus itself). Once all calls ended, the key's use is exactly
 * {@value #COST} times the 200s.
 *
 * <p>A deny that only the estimates of calls in flight cause waits 1 s (they settle when their calls
 * end, here far below them); once what the settled calls used leaves no room for an estimate, the
 * deny waits until midnight UTC. So after each burst, the key goes on one call at a time until its
 * first deny that waits until midnight: by then it has spent {@code 43 b} with the largest {@code b}
 * such that {@code 43 (b - 1) + 740 <= 4000}, that is {@code b = 76}: 3268 micro-units.
 *
 * <p>Thresholds count what calls used, with the deciding call's own estimate (not the estimates of
 * other calls in flight): 50 % (2000) is reached by the call that finds 1260 or more used, 80 %
 * (3200) by the one that finds 2460 or more, each exactly once across both instances; 100 % needs
 * {@code 43 b + 740 >= 4000} with {@code 43 b <= 3260}, which no {@code b} meets: it never fires.
 */
class SampleQuotaBurstOnRedisTests {

  private static final int BURST = 150;
  private static final int REPETITIONS = 20;
  private static final String BODY =
      "{\"model\":\"gpt-4o\",\"messages\":[{\"role\":\"user\",\"content\":\"Hello!\"}]}";
  /** gpt-4o's prices, micro-units per million tokens. */
  private static final long INPUT = 2_500_000;
  private static final long OUTPUT = 10_000_000;
  private static final long ESTIMATED_TOKENS = ceilDiv("user".length() + "Hello!".length(), 4) + 4 + 3 + 64;
  private static final long ESTIMATE = ceilDiv(ESTIMATED_TOKENS * OUTPUT, 1_000_000);
  private static final long COST = ceilDiv(1 * INPUT + 4 * OUTPUT, 1_000_000);
  private static final long LIMIT = 4_000;
  private static final long MIN_ADMITTED = LIMIT / ESTIMATE;
  private static final long MAX_ADMITTED = (LIMIT - ESTIMATE) / COST + 1;

  @RegisterExtension
  static final RunningRedis REDIS = new RunningRedis();
  /**
   * The instances' wall clock, and the test's: the real one moved to noon UTC of the day the test
   * started, so that no run crosses the daily quota's end (it would start a new period mid-burst).
   */
  static final InstantSource CLOCK = fromNoon(Instant.now());
  private final HttpClient http = HttpClient.newBuilder()
      .connectTimeout(Duration.ofSeconds(10)).build();

  /** The threshold events one instance published. */
  static final class Crossings implements ApplicationListener<QuotaThresholdCrossedEvent> {

    final Queue<QuotaThresholdCrossedEvent> events = new ConcurrentLinkedQueue<>();

    @Override
    public void onApplicationEvent(QuotaThresholdCrossedEvent event) {
      events.add(event);
    }
  }

  private static InstantSource fromNoon(Instant start) {
    Duration shift = Duration.between(start,
        LocalDate.ofInstant(start, ZoneOffset.UTC).atTime(12, 0).toInstant(ZoneOffset.UTC));
    return () -> Instant.now().plus(shift);
  }

  private static long ceilDiv(long a, long b) {
    return (a + b - 1) / b;
  }

  private static ConfigurableApplicationContext instance(Crossings crossings) {
    return new SpringApplicationBuilder(SampleGatewayApplication.class)
        .profiles("redis")
        .listeners(crossings)
        .initializers(c -> c.getBeanFactory().registerSingleton("quotaClock", CLOCK))
        .run("--server.port=0", "--management.server.port=0",
            "--spring.data.redis.port=" + REDIS.server().port(), "--spring.data.redis.host=127.0.0.1",
            "--ratelimiter.key-id-secret=sample-quota-burst-test-secret",
            // the quota is under test: lift every request, token and in-flight limit
            "--ratelimiter.rpm.limit=1000000",
            "--ratelimiter.policies.per-key.rpm.limit=1000000",
            "--ratelimiter.policies.chat.rpm.limit=1000000",
            "--ratelimiter.policies.chat.models.gpt-4o.rpm.limit=1000000",
            "--ratelimiter.plans.free.policies.chat.rpm.limit=1000000",
            "--ratelimiter.policies.chat.burst.capacity=1000000",
            "--ratelimiter.policies.chat.burst.refill-per-second=1000000",
            "--ratelimiter.policies.chat.tpm.limit=1000000000",
            "--ratelimiter.policies.chat.concurrency.limit=1000");
  }

  private static int port(ConfigurableApplicationContext app, String property) {
    return Integer.parseInt(app.getEnvironment().getProperty(property));
  }

  /** One call's answer, and when it was sent and answered. */
  private record Answer(int status, String retryAfter, String body, Instant sent, Instant answered) {}

  private Answer call(int port, String key) {
    HttpRequest request = HttpRequest.newBuilder(URI.create(
            "http://127.0.0.1:" + port + "/v1/chat/completions"))
        .header("Authorization", "Bearer " + key)
        .header("Content-Type", "application/json")
        .timeout(Duration.ofSeconds(30))
        .POST(HttpRequest.BodyPublishers.ofString(BODY))
        .build();
    Instant sent = CLOCK.instant();
    try {
      HttpResponse<String> r = http.send(request, HttpResponse.BodyHandlers.ofString());
      return new Answer(r.statusCode(), r.headers().firstValue("Retry-After").orElse(null),
          r.body(), sent, CLOCK.instant());
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  private List<Answer> burst(List<Integer> ports, String key) {
    List<CompletableFuture<Answer>> calls = new ArrayList<>();
    for (int i = 0; i < BURST; i++) {
      HttpRequest request = HttpRequest.newBuilder(URI.create(
              "http://127.0.0.1:" + ports.get(i % 2) + "/v1/chat/completions"))
          .header("Authorization", "Bearer " + key)
          .header("Content-Type", "application/json")
          .timeout(Duration.ofSeconds(30))
          .POST(HttpRequest.BodyPublishers.ofString(BODY))
          .build();
      Instant sent = CLOCK.instant();
      calls.add(http.sendAsync(request, HttpResponse.BodyHandlers.ofString())
          .thenApply(r -> new Answer(r.statusCode(),
              r.headers().firstValue("Retry-After").orElse(null), r.body(), sent, CLOCK.instant())));
    }
    return calls.stream().map(c -> c.orTimeout(60, TimeUnit.SECONDS).join()).toList();
  }

  /** The key's stored use of daily-spend, as the instance's Actuator endpoint reports it. */
  private long used(ConfigurableApplicationContext app, String key) {
    HttpRequest request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:"
            + port(app, "local.management.port") + "/actuator/ratelimiter/" + key))
        .timeout(Duration.ofSeconds(10)).GET().build();
    try {
      HttpResponse<String> response = http.send(request, HttpResponse.BodyHandlers.ofString());
      assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
      List<Number> used = JsonPath.read(response.body(),
          "$.quotas[?(@.quota == 'daily-spend' && @.policy == 'per-key')].used");
      List<Number> limit = JsonPath.read(response.body(),
          "$.quotas[?(@.quota == 'daily-spend' && @.policy == 'per-key')].limit");
      assertThat(used).as(response.body()).hasSize(1);
      assertThat(limit).extracting(Number::longValue).containsExactly(LIMIT);
      return used.get(0).longValue();
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  /** Seconds from an instant to the next midnight UTC, rounded up. */
  private static long secondsToMidnight(Instant at) {
    Instant midnight = LocalDate.ofInstant(at, ZoneOffset.UTC).plusDays(1)
        .atStartOfDay(ZoneOffset.UTC).toInstant();
    return ceilDiv(Duration.between(at, midnight).toMillis(), 1000);
  }

  @Test
  void everyBurstSpendsAtMostTheDailyQuotaAndReportsEachThresholdOnce() {
    assertThat(List.of(ESTIMATED_TOKENS, ESTIMATE, COST, MIN_ADMITTED, MAX_ADMITTED))
        .containsExactly(74L, 740L, 43L, 5L, 76L);
    long started = System.nanoTime();
    Crossings first = new Crossings();
    Crossings second = new Crossings();
    try (ConfigurableApplicationContext one = instance(first);
        ConfigurableApplicationContext two = instance(second)) {
      List<Integer> ports = List.of(port(one, "local.server.port"), port(two, "local.server.port"));
      List<String> results = new ArrayList<>();
      for (int rep = 0; rep < REPETITIONS; rep++) {
        // distinct last 4 characters: the events carry the key masked to them
        String key = "sk-sample-quota-" + System.nanoTime() + "-r" + String.format("%02d", rep);
        String masked = "****" + key.substring(key.length() - 4);
        first.events.clear();
        second.events.clear();
        List<Answer> answers = burst(ports, key);
        long ok = answers.stream().filter(a -> a.status() == 200).count();
        List<Answer> denied = answers.stream().filter(a -> a.status() == 429).toList();
        assertThat(ok + denied.size()).as("rep %d: only 200s and 429s: %s", rep,
            answers.stream().filter(a -> a.status() != 200 && a.status() != 429)
                .map(a -> a.status() + " " + a.body()).toList()).isEqualTo(BURST);
        for (Answer a : denied) {
          assertThat(JsonPath.<String>read(a.body(), "$.reason")).as(a.body()).isEqualTo("QUOTA_EXCEEDED");
          assertThat(JsonPath.<String>read(a.body(), "$.quota")).isEqualTo("daily-spend");
          long usedThen = JsonPath.<Number>read(a.body(), "$.used").longValue();
          // denied because the estimate did not fit what was left, and never above the limit
          assertThat(usedThen).as(a.body()).isLessThanOrEqualTo(LIMIT).isGreaterThan(LIMIT - ESTIMATE);
          // the burst's denies are the calls in flight's: 1 s (at most 76 x 43 = 3268 settled,
          // and a deny for what is spent needs more than 3260)
          long retryMs = JsonPath.<Number>read(a.body(), "$.retryAfterMs").longValue();
          if (retryMs != 1_000) {
            assertThat(Long.parseLong(a.retryAfter())).as("Retry-After of %s", a.body())
                .isBetween(secondsToMidnight(a.answered()) - 1, secondsToMidnight(a.sent()) + 1);
          } else {
            assertThat(a.retryAfter()).isEqualTo("1");
          }
        }
        assertThat(ok).as("rep %d", rep).isBetween(MIN_ADMITTED, MAX_ADMITTED);
        // the usage filter settles as the response ends: wait, bounded, for the last settlements
        long used = awaitUsed(one, key, ok * COST);
        assertThat(used).as("rep %d", rep).isEqualTo(ok * COST).isLessThanOrEqualTo(LIMIT);
        assertThat(used(two, key)).isEqualTo(used);
        long burstOk = ok;
        // then one call at a time, alternating instances, until the first deny for what is spent
        Answer last = null;
        while (ok < MAX_ADMITTED + 1) {
          last = call(ports.get((int) (ok % 2)), key);
          if (last.status() != 200) {
            break;
          }
          ok++;
        }
        assertThat(last).isNotNull();
        assertThat(last.status()).as(last.body()).isEqualTo(429);
        assertThat(ok).as("rep %d: the calls that fit", rep).isEqualTo(MAX_ADMITTED);
        assertThat(JsonPath.<String>read(last.body(), "$.reason")).isEqualTo("QUOTA_EXCEEDED");
        assertThat(Long.parseLong(last.retryAfter())).as("Retry-After of %s", last.body())
            .isBetween(secondsToMidnight(last.answered()) - 1, secondsToMidnight(last.sent()) + 1);
        used = awaitUsed(two, key, ok * COST);
        assertThat(used).isEqualTo(MAX_ADMITTED * COST).isLessThanOrEqualTo(LIMIT);

        List<QuotaThresholdCrossedEvent> events = new ArrayList<>(first.events);
        events.addAll(second.events);
        assertThat(events).as("rep %d", rep).allSatisfy(e -> {
          assertThat(e.maskedKey()).isEqualTo(masked);
          assertThat(e.policy()).isEqualTo("chat"); // the call's policy, whose upper level has the quota
          assertThat(e.quota()).isEqualTo("daily-spend");
          assertThat(e.unit()).isEqualTo(QuotaUnit.COST);
          assertThat(e.limit()).isEqualTo(LIMIT);
          // the use (with the estimates in flight) is at least what reached the threshold
          assertThat(e.used()).isBetween(LIMIT * e.threshold() / 100, LIMIT);
          assertThat(e.periodEnd()).isEqualTo(LocalDate.ofInstant(CLOCK.instant(), ZoneOffset.UTC)
              .plusDays(1).atStartOfDay(ZoneOffset.UTC).toInstant());
        });
        Map<Integer, Long> fired = events.stream()
            .collect(Collectors.groupingBy(QuotaThresholdCrossedEvent::threshold, Collectors.counting()));
        assertThat(fired).as("rep %d: %s", rep, events).isEqualTo(Map.of(50, 1L, 80, 1L));
        results.add("rep " + rep + ": burst 200=" + burstOk + " 429=" + denied.size()
            + ", then one at a time to 200=" + ok + " used=" + used
            + " of " + LIMIT + " events one/two=" + first.events.size() + "/" + second.events.size());
      }
      System.out.println(String.join("\n", results));
      assertThat(one.getBean(RedisRateLimitStore.class).errorCount()
          + two.getBean(RedisRateLimitStore.class).errorCount()).isZero();
    }
    System.out.println("SampleQuotaBurstOnRedisTests: "
        + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started) + " ms");
  }

  /**
   * Returns the key's stored use once it is the expected one, within 20 s (a settlement may land
   * just after its response); every use read on the way is within the limit.
   */
  private long awaitUsed(ConfigurableApplicationContext app, String key, long expected) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    long used = used(app, key);
    while (used != expected && System.nanoTime() < deadline) {
      assertThat(used).isLessThanOrEqualTo(LIMIT);
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20));
      used = used(app, key);
    }
    return used;
  }
}

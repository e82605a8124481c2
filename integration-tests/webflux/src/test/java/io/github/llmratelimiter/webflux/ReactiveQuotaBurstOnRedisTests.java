package io.github.llmratelimiter.webflux;

import static org.assertj.core.api.Assertions.assertThat;

import com.jayway.jsonpath.JsonPath;
import io.github.llmratelimiter.autoconfigure.QuotaThresholdCrossedEvent;
import io.github.llmratelimiter.core.QuotaStatus;
import io.github.llmratelimiter.core.QuotaUnit;
import io.github.llmratelimiter.gateway.RateLimitKey;
import io.github.llmratelimiter.gateway.RateLimitPolicies;
import io.github.llmratelimiter.gateway.RateLimitPolicy;
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
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ApplicationListener;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The module's WebFlux gateway ({@link ChatGateway}) in two instances on one real redis-server,
 * under BlockHound, attacked with bursts of 150 concurrent calls of one API key spread over both, a
 * fresh key each time, 20 times, with a daily spend quota set by properties on its {@code chat}
 * policy (per API key and model): {@code daily-spend}, 0.00365 a day (3650 micro-units),
 * thresholds 50, 80 and 100 %, gpt-4o (and every other model) priced 2.50 / 10.00 a million
 * tokens. The chat policy's
 * request window (3 a minute in {@link ChatGateway}) is lifted so that the quota is the binding
 * limit; its other policies are its own.
 *
 * <p>Each call ({@code "hi"} from the user, no {@code max_tokens}) is estimated at {@value
 * #ESTIMATED_TOKENS} model tokens (6 bytes of role and content over 4, rounded up: 2; 4 per
 * message; 3 per request; 64 default completion tokens, set as the sample sets it), that is {@value #ESTIMATE} micro-units at
 * the highest price. The handler's response reports no usage, so each admitted call is settled at
 * its estimate: usage never exceeds the estimate (the overshoot bound is 0), and the quota admits
 * exactly 5 calls per key whatever the timing (5 x 730 = 3650). A deny while admitted calls are
 * still in flight waits 1 s (they settle when they end); once all 5 are settled, the next call is
 * denied until midnight UTC. Thresholds count what settled calls used, with the deciding call's
 * own estimate: 50 % (1825), 80 % (2920) and 100 % are each reported exactly once across both
 * instances, at the latest by that last call.
 */
class ReactiveQuotaBurstOnRedisTests {

  private static final int BURST = 150;
  private static final int REPETITIONS = 20;
  private static final String BODY =
      "{\"model\":\"gpt-4o\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
  private static final long OUTPUT = 10_000_000;
  private static final long ESTIMATED_TOKENS = ceilDiv("user".length() + "hi".length(), 4) + 4 + 3 + 64;
  private static final long ESTIMATE = ceilDiv(ESTIMATED_TOKENS * OUTPUT, 1_000_000);
  private static final long LIMIT = 3_650;
  private static final long ADMITTED = LIMIT / ESTIMATE;

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

  /**
   * Starts {@link ChatGateway} with its properties, on Redis, with the quota and the prices;
   * its chat window is lifted (a command-line property cannot be given twice, so this names the
   * route's properties itself rather than adding to {@link ChatGateway#start}'s).
   */
  private static ConfigurableApplicationContext start(String prefix, Crossings crossings) {
    return new SpringApplicationBuilder(ChatGateway.class).listeners(crossings)
        .initializers(c -> c.getBeanFactory().registerSingleton("quotaClock", CLOCK)).run(
        "--server.port=0", "--spring.main.banner-mode=off",
        "--spring.data.redis.host=127.0.0.1",
        "--spring.data.redis.port=" + REDIS.server().port(),
        "--ratelimiter.store=redis",
        "--ratelimiter.redis.key-prefix=" + prefix,
        "--management.health.redis.enabled=false",
        "--ratelimiter.web.routes[0].include=/v1/chat/**",
        "--ratelimiter.web.routes[0].policy=chat",
        "--ratelimiter.policies.chat.scope=api-key-and-model",
        "--ratelimiter.policies.embeddings.rpm.limit=2",
        "--ratelimiter.policies.llm.tpm.limit=100",
        "--ratelimiter.web.routes[1].include=/llm/**",
        "--ratelimiter.web.routes[1].policy=llm",
        // the quota is under test: lift the route's window (ChatGateway's is 3 a minute)
        "--ratelimiter.policies.chat.rpm.limit=1000000",
        // as the sample's (the starter's default is 256): a call is estimated at 73 model tokens
        "--ratelimiter.tpm.default-completion-tokens=64",
        "--ratelimiter.prices.gpt-4o.input=2.50",
        "--ratelimiter.prices.gpt-4o.output=10.00",
        // a quota on a level serving any model needs a price for every model
        "--ratelimiter.prices.default.input=2.50",
        "--ratelimiter.prices.default.output=10.00",
        "--ratelimiter.policies.chat.quotas.daily-spend.unit=cost",
        "--ratelimiter.policies.chat.quotas.daily-spend.limit=0.00365",
        "--ratelimiter.policies.chat.quotas.daily-spend.period=day",
        "--ratelimiter.policies.chat.quotas.daily-spend.thresholds=50,80,100");
  }

  /** The key's stored use of daily-spend on gpt-4o, as the store's administration reads it. */
  private static long used(ConfigurableApplicationContext app, String apiKey) {
    RateLimitPolicy chat = app.getBean(RateLimitPolicies.class).policy("chat");
    RateLimitKey key = RateLimitKey.of(apiKey, "gpt-4o");
    List<QuotaStatus> quotas = app.getBean(RedisRateLimitStore.class).administration().orElseThrow()
        .quotas(chat.budgets(key).get(0), chat.keys(key).get(0));
    assertThat(quotas).hasSize(1);
    assertThat(quotas.get(0).quota().name()).isEqualTo("daily-spend");
    assertThat(quotas.get(0).quota().limit()).isEqualTo(LIMIT);
    return quotas.get(0).used();
  }

  /** One call's answer, and when it was sent and answered. */
  private record Answer(int status, String retryAfter, String body, Instant sent, Instant answered) {}

  private List<Answer> burst(List<Integer> ports, String key, int count) {
    List<CompletableFuture<Answer>> calls = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      HttpRequest request = HttpRequest.newBuilder(URI.create(
              "http://127.0.0.1:" + ports.get(i % ports.size()) + "/v1/chat/completions"))
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

  /** The next midnight UTC after an instant. */
  private static Instant midnightAfter(Instant at) {
    return LocalDate.ofInstant(at, ZoneOffset.UTC).plusDays(1).atStartOfDay(ZoneOffset.UTC).toInstant();
  }

  /** Seconds from an instant to the next midnight UTC, rounded up. */
  private static long secondsToMidnight(Instant at) {
    return ceilDiv(Duration.between(at, midnightAfter(at)).toMillis(), 1000);
  }

  @Test
  void everyBurstOver2InstancesAdmitsExactlyWhatTheQuotaHoldsAndReportsEachThresholdOnce() {
    assertThat(List.of(ESTIMATED_TOKENS, ESTIMATE, ADMITTED)).containsExactly(73L, 730L, 5L);
    long started = System.nanoTime();
    String prefix = "webflux-quota-burst-" + System.nanoTime();
    Crossings first = new Crossings();
    Crossings second = new Crossings();
    try (ConfigurableApplicationContext one = start(prefix, first);
        ConfigurableApplicationContext two = start(prefix, second)) {
      List<Integer> ports = List.of(ChatGateway.port(one), ChatGateway.port(two));
      for (int port : ports) { // each handler's JSON decoder, built once, by one call
        assertThat(burst(List.of(port), "sk-warm-up-" + port + "-0123456789", 1))
            .extracting(Answer::status).containsExactly(200);
      }
      List<String> results = new ArrayList<>();
      for (int rep = 0; rep < REPETITIONS; rep++) {
        // distinct last 4 characters: the events carry the key masked to them
        String key = "sk-webflux-quota-" + System.nanoTime() + "-r" + String.format("%02d", rep);
        String masked = "****" + key.substring(key.length() - 4);
        first.events.clear();
        second.events.clear();
        long errorsBefore = store(one).errorCount() + store(two).errorCount();
        List<Answer> answers = burst(ports, key, BURST);
        long ok = answers.stream().filter(a -> a.status() == 200).count();
        List<Answer> denied = answers.stream().filter(a -> a.status() == 429).toList();
        assertThat(ok + denied.size()).as("rep %d: only 200s and 429s: %s", rep,
            answers.stream().filter(a -> a.status() != 200 && a.status() != 429)
                .map(a -> a.status() + " " + a.body()).toList()).isEqualTo(BURST);
        for (Answer a : denied) {
          assertThat(JsonPath.<String>read(a.body(), "$.reason")).as(a.body()).isEqualTo("QUOTA_EXCEEDED");
          assertThat(JsonPath.<String>read(a.body(), "$.quota")).isEqualTo("daily-spend");
          long usedThen = JsonPath.<Number>read(a.body(), "$.used").longValue();
          assertThat(usedThen).as(a.body()).isLessThanOrEqualTo(LIMIT).isGreaterThan(LIMIT - ESTIMATE);
          if (JsonPath.<Number>read(a.body(), "$.retryAfterMs").longValue() == 1_000) {
            assertThat(a.retryAfter()).isEqualTo("1"); // calls in flight: they settle soon
          } else {
            assertThat(Long.parseLong(a.retryAfter())).as("Retry-After of %s", a.body())
                .isBetween(secondsToMidnight(a.answered()) - 1, secondsToMidnight(a.sent()) + 1);
          }
        }
        assertThat(ok).as("rep %d", rep).isEqualTo(ADMITTED);
        long used = used(one, key);
        assertThat(used).as("rep %d", rep).isEqualTo(ok * ESTIMATE).isEqualTo(LIMIT);
        assertThat(used(two, key)).isEqualTo(used);
        awaitSettled(one, key);
        // every admitted call settled: the next one waits until midnight
        Answer after = burst(List.of(ports.get(rep % 2)), key, 1).get(0);
        assertThat(after.status()).isEqualTo(429);
        assertThat(Long.parseLong(after.retryAfter())).as("Retry-After of %s", after.body())
            .isBetween(secondsToMidnight(after.answered()) - 1, secondsToMidnight(after.sent()) + 1);
        assertThat(store(one).errorCount() + store(two).errorCount() - errorsBefore).isZero();

        List<QuotaThresholdCrossedEvent> events = new ArrayList<>(first.events);
        events.addAll(second.events);
        assertThat(events).as("rep %d", rep).allSatisfy(e -> {
          assertThat(e.maskedKey()).isEqualTo(masked);
          assertThat(e.policy()).isEqualTo("chat");
          assertThat(e.quota()).isEqualTo("daily-spend");
          assertThat(e.unit()).isEqualTo(QuotaUnit.COST);
          assertThat(e.limit()).isEqualTo(LIMIT);
          // the use (with the estimates in flight) is at least what reached the threshold
          assertThat(e.used()).isBetween(LIMIT * e.threshold() / 100, LIMIT);
          assertThat(e.periodEnd()).isEqualTo(midnightAfter(CLOCK.instant()));
        });
        Map<Integer, Long> fired = events.stream()
            .collect(Collectors.groupingBy(QuotaThresholdCrossedEvent::threshold, Collectors.counting()));
        assertThat(fired).as("rep %d: %s", rep, events).isEqualTo(Map.of(50, 1L, 80, 1L, 100, 1L));
        results.add("rep " + rep + ": 200=" + ok + " 429=" + denied.size() + " used=" + used
            + " of " + LIMIT + " events one/two=" + first.events.size() + "/" + second.events.size());
      }
      System.out.println(String.join("\n", results));
    }
    System.out.println("ReactiveQuotaBurstOnRedisTests: "
        + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started) + " ms");
  }

  /** Waits, bounded, until no admitted call of the key is in flight (all settled). */
  private static void awaitSettled(ConfigurableApplicationContext app, String apiKey) {
    RateLimitPolicy chat = app.getBean(RateLimitPolicies.class).policy("chat");
    RateLimitKey key = RateLimitKey.of(apiKey, "gpt-4o");
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (app.getBean(RedisRateLimitStore.class).administration().orElseThrow()
        .quotas(chat.budgets(key).get(0), chat.keys(key).get(0)).get(0).pending() != 0) {
      assertThat(System.nanoTime()).as("all calls settled within 20 s").isLessThan(deadline);
      java.util.concurrent.locks.LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20));
    }
  }

  private static RedisRateLimitStore store(ConfigurableApplicationContext app) {
    return app.getBean(RedisRateLimitStore.class);
  }
}

package io.github.llmratelimiter.autoconfigure.redis;

import org.awaitility.Awaitility;
import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.autoconfigure.ManualTicker;
import io.github.llmratelimiter.core.KeySnapshot;
import io.github.llmratelimiter.core.Reason;
import io.github.llmratelimiter.gateway.RateLimitEnforcer;
import io.github.llmratelimiter.gateway.RateLimitKey;
import io.github.llmratelimiter.gateway.RateLimitOutcome;
import io.github.llmratelimiter.gateway.RateLimitPlanResolver;
import io.github.llmratelimiter.gateway.RateLimitPolicy;
import io.github.llmratelimiter.redis.RedisServer;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Plans and calls in flight across gateway applications that share one real redis-server: an
 * assignment made on one instance is seen by another within {@code ratelimiter.plan-refresh} (on
 * each application's manual ticker, which only the plan cache reads), a decision in steady state
 * sends Redis one script call and no plan read ({@code INFO commandstats}), and the slot of an
 * instance that died frees itself when its lease expires on Redis's clock.
 */
class RedisPlansWebTests {

  private static final String[] PLANS = {
      "--ratelimiter.default-plan=free",
      "--ratelimiter.plans.free.policies.chat.rpm.limit=" + RedisGateways.LIMIT,
      "--ratelimiter.plans.pro.policies.chat.rpm.limit=30",
      "--ratelimiter.plan-refresh=5s"};

  private static RedisServer server;
  private static RedisClient client;
  private static StatefulRedisConnection<String, String> redis;
  private final HttpClient http = HttpClient.newHttpClient();

  @BeforeAll
  static void startRedis() {
    server = RedisServer.start();
    client = RedisClient.create(server.uri());
    redis = client.connect();
  }

  @AfterAll
  static void stopRedis() {
    redis.close();
    client.shutdown();
    server.close();
  }

  /** Each application's own manual ticker: the plan cache's time. */
  @Configuration(proxyBeanMethods = false)
  static class OwnTicker {
    @Bean
    ManualTicker ticker() {
      return new ManualTicker();
    }
  }

  private static ConfigurableApplicationContext start(String prefix, String... extra) {
    String[] args = new String[PLANS.length + extra.length];
    System.arraycopy(PLANS, 0, args, 0, PLANS.length);
    System.arraycopy(extra, 0, args, PLANS.length, extra.length);
    return RedisGateways.start(new Class<?>[] {OwnTicker.class}, server, prefix, args);
  }

  private HttpResponse<String> chat(ConfigurableApplicationContext app, String apiKey) throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create("http://localhost:" + RedisGateways.port(app)
            + "/v1/chat/completions"))
        .header("Authorization", "Bearer " + apiKey).header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString("{\"model\":\"" + RedisGateways.MODEL + "\"}"))
        .timeout(Duration.ofSeconds(30)).build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private static long calls(String info, String command) {
    Matcher m = Pattern.compile("cmdstat_" + command + ":calls=(\\d+)").matcher(info);
    return m.find() ? Long.parseLong(m.group(1)) : 0;
  }

  @Test
  void anAssignmentOnOneInstanceIsSeenByAnotherWithinThePlanRefresh() throws Exception {
    String prefix = "plans2-" + System.nanoTime();
    String key = "sk-plans-redis-" + System.nanoTime();
    try (ConfigurableApplicationContext one = start(prefix);
        ConfigurableApplicationContext two = start(prefix)) {
      for (int i = 0; i < RedisGateways.LIMIT; i++) {
        assertThat(chat(i % 2 == 0 ? one : two, key).statusCode()).isEqualTo(200);
      }
      assertThat(chat(two, key).statusCode()).isEqualTo(429); // two has cached "free"
      one.getBean(RateLimitPlanResolver.class).assign(key, "pro");
      HttpResponse<String> onOne = chat(one, key);
      assertThat(onOne.statusCode()).isEqualTo(200);
      assertThat(onOne.headers().firstValue("x-ratelimit-limit-requests")).hasValue("30");
      // two decides under the plan it read less than plan-refresh ago: still free
      assertThat(chat(two, key).statusCode()).isEqualTo(429);
      two.getBean(ManualTicker.class).advance(Duration.ofSeconds(5));
      HttpResponse<String> onTwo = chat(two, key);
      assertThat(onTwo.statusCode()).isEqualTo(200);
      assertThat(onTwo.headers().firstValue("x-ratelimit-limit-requests")).hasValue("30");
      // nothing spent was reset: 3 + 1 + 1 calls of the 30 in the window
      assertThat(RedisGateways.windowUsed(two, key)).isEqualTo(5);
    }
  }

  @Test
  void aDecisionInSteadyStateSendsOneScriptCallAndNoPlanRead() throws Exception {
    String key = "sk-round-trips-" + System.nanoTime();
    try (ConfigurableApplicationContext app = start("trips-" + System.nanoTime(),
        "--ratelimiter.redis.heartbeat-interval=1h")) {
      app.getBean(RateLimitPlanResolver.class).assign(key, "pro");
      assertThat(chat(app, key).statusCode()).isEqualTo(200); // warms the connection and the cache
      // every command Redis runs, with its arguments, script calls included: the slow log at 0 µs
      redis.sync().configSet("slowlog-max-len", "100000");
      redis.sync().configSet("slowlog-log-slower-than", "0");
      redis.sync().slowlogReset();
      String before = redis.sync().info("commandstats");
      int n = 40;
      int admitted = 0;
      for (int i = 0; i < n; i++) {
        admitted += chat(app, key).statusCode() == 200 ? 1 : 0;
      }
      String after = redis.sync().info("commandstats");
      List<Object> log = redis.sync().slowlogGet(100_000);
      redis.sync().configSet("slowlog-log-slower-than", "10000");
      long scripts = calls(after, "evalsha") - calls(before, "evalsha");
      long planReads = log.stream().map(Object::toString)
          .filter(e -> e.contains("[GET, ") && e.contains(":plan]")).count();
      System.out.printf("[plan-round-trips] %d decisions: %d EVALSHA, %d plan reads%n",
          n, scripts, planReads);
      assertThat(admitted).isEqualTo(29); // pro's 30, one spent warming
      assertThat(planReads).as("no plan read on the decision path").isZero();
      assertThat(scripts).as("one script call per decision, nothing else").isEqualTo(n);
      // the control: a key this instance never saw is read once, and the log shows it
      redis.sync().configSet("slowlog-log-slower-than", "0");
      redis.sync().slowlogReset();
      assertThat(chat(app, "sk-cold-" + System.nanoTime()).statusCode()).isEqualTo(200);
      long coldReads = redis.sync().slowlogGet(100_000).stream().map(Object::toString)
          .filter(e -> e.contains("[GET, ") && e.contains(":plan]")).count();
      redis.sync().configSet("slowlog-log-slower-than", "10000");
      assertThat(coldReads).as("a cold key's plan is read from Redis once").isEqualTo(1);
    }
  }

  @Test
  void theSlotOfAnInstanceThatDiedFreesItselfWhenItsLeaseExpiresOnRedisTime() throws Exception {
    String prefix = "lease-" + System.nanoTime();
    String key = "sk-lease-" + System.nanoTime();
    String[] slots = {"--ratelimiter.policies.chat.concurrency.limit=1",
        "--ratelimiter.policies.chat.concurrency.lease-timeout=5s"};
    try (ConfigurableApplicationContext survivor = start(prefix, slots)) {
      RateLimitKey call = RateLimitKey.of(key, RedisGateways.MODEL);
      try (ConfigurableApplicationContext dying = start(prefix, slots)) {
        RateLimitOutcome held = dying.getBean(RateLimitEnforcer.class).acquire("chat", call, 1);
        assertThat(held.slots()).isNotNull();
        // the instance dies with its call in flight: nothing releases the slot
      }
      RateLimitPolicy chat = survivor.getBean(RateLimitEnforcer.class).policies().policy("chat");
      assertThat(RedisGateways.store(survivor).administration().orElseThrow()
          .inspect(chat.budgets(call).get(0), chat.keys(call).get(0))
          .map(KeySnapshot::inFlight)).hasValue(1L);
      long deniedAt = System.nanoTime();
      HttpResponse<String> denied = chat(survivor, key);
      assertThat(denied.statusCode()).isEqualTo(429);
      assertThat(denied.body()).contains("\"reason\":\"" + Reason.CONCURRENCY_LIMIT + "\"");
      long retryMs = Long.parseLong(denied.headers().firstValue("retry-after-ms").orElseThrow());
      assertThat(retryMs).isBetween(1L, 5_000L);
      // Redis's clock runs the lease out: a bounded wait for it, then the survivor admits the key
      Awaitility.await("the lease expires within 15 s").atMost(Duration.ofSeconds(15))
          .pollInterval(Duration.ofMillis(50))
          .until(() -> chat(survivor, key).statusCode(), status -> status != 429);
      assertThat(chat(survivor, key).statusCode()).as("the slot the expired lease freed").isEqualTo(200);
      assertThat((System.nanoTime() - deniedAt) / 1_000_000).as("not before the advertised retry")
          .isGreaterThanOrEqualTo(retryMs - 50);
    }
  }
}

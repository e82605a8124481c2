package io.github.llmratelimiter.gateway.scg;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.gateway.scg.reactive.ScgReactiveGatewayApplication;
import io.github.llmratelimiter.redis.RedisRateLimitStore;
import io.github.llmratelimiter.redis.RunningRedis;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.cloud.gateway.config.GatewayProperties;
import org.springframework.cloud.gateway.filter.FilterDefinition;
import org.springframework.cloud.gateway.route.RouteDefinition;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.data.redis.connection.ReactiveRedisConnectionFactory;
import org.springframework.data.redis.core.script.RedisScript;

/**
 * Two reactive gateway instances ({@code application-filter.yml}) on one real redis-server: the
 * starter's store ({@code ratelimiter.store=redis}) behind {@code llmRateLimiter}, and Spring Cloud
 * Gateway's own {@code RedisRateLimiter} on the same server. The instances share one budget
 * exactly; a route switched from {@code RedisRateLimiter} to {@code llmRateLimiter} differs only by
 * the filter's {@code rate-limiter} argument and answers with the starter's decisions and headers.
 * Bursts of 150 concurrent calls of one key over both instances, 20 times, pass exactly the limit.
 */
class RequestRateLimiterOnRedisTests {

  @RegisterExtension
  static final RunningRedis REDIS = new RunningRedis();

  /** The chat policy's limit on these instances. */
  private static final int SHARED_RPM = 25;

  private static final OpenAiUpstream UPSTREAM = GatewayTestSupport.UPSTREAM;

  private static final HttpClient HTTP = HttpClient.newBuilder()
      .version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(5)).build();

  private static ConfigurableApplicationContext first;
  private static ConfigurableApplicationContext second;

  @BeforeAll
  static void startTwoGateways() {
    first = start();
    second = start();
    // The gateway's own RedisRateLimiter blocks the first time it runs (BlockHound sees it):
    // Spring Data Redis opens its shared reactive connection, and reads the limiter's Lua script
    // from its jar to load it into Redis. Both are done here, off the event loops.
    for (ConfigurableApplicationContext gateway : new ConfigurableApplicationContext[] {first, second}) {
      RedisScript<?> script = gateway.getBean("redisRequestRateLimiterScript", RedisScript.class);
      script.getSha1(); // read once, then kept
      gateway.getBean(ReactiveRedisConnectionFactory.class).getReactiveConnection().scriptingCommands()
          .scriptLoad(ByteBuffer.wrap(script.getScriptAsString().getBytes(StandardCharsets.UTF_8)))
          .block(Duration.ofSeconds(10));
    }
  }

  @AfterAll
  static void stopThem() {
    for (ConfigurableApplicationContext gateway : new ConfigurableApplicationContext[] {first, second}) {
      if (gateway != null) {
        gateway.close();
      }
    }
  }

  private static ConfigurableApplicationContext start() {
    // command-line arguments: above application.yml, unlike default properties
    return new SpringApplicationBuilder(ScgReactiveGatewayApplication.class, OwnNettyResources.class)
        .profiles("filter")
        .run("--server.port=0",
            "--upstream.uri=" + UPSTREAM.uri(),
            "--spring.data.redis.host=127.0.0.1",
            "--spring.data.redis.port=" + REDIS.server().port(),
            "--ratelimiter.store=redis",
            "--ratelimiter.redis.key-prefix=scg-webflux:",
            "--ratelimiter.policies.chat.rpm.limit=" + SHARED_RPM);
  }

  private static int port(ConfigurableApplicationContext gateway) {
    return Integer.parseInt(gateway.getEnvironment().getRequiredProperty("local.server.port"));
  }

  private static HttpResponse<String> post(ConfigurableApplicationContext gateway, String path,
      String header, String value, String content) throws Exception {
    return HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port(gateway) + path))
        .timeout(Duration.ofSeconds(20))
        .header("Content-Type", "application/json")
        .header(header, value)
        .POST(HttpRequest.BodyPublishers.ofString(
            GatewayTestSupport.chatBody("gpt-4o-mini", content, "")))
        .build(), HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void twoGatewaysOnOneRedisPassExactlyTheLimitTogether() throws Exception {
    String key = "sk-rrl-redis-shared-00001";
    // one budget: each instance sees the other's calls
    HttpResponse<String> one = post(first, "/v1/chat/completions", "Authorization", "Bearer " + key,
        "redis shared first");
    HttpResponse<String> two = post(second, "/v1/chat/completions", "Authorization", "Bearer " + key,
        "redis shared second");
    assertThat(GatewayTestSupport.header(one, "x-ratelimit-remaining-requests")).isEqualTo(SHARED_RPM - 1);
    assertThat(GatewayTestSupport.header(two, "x-ratelimit-remaining-requests")).isEqualTo(SHARED_RPM - 2);

    List<Callable<HttpResponse<String>>> calls = new ArrayList<>();
    for (int i = 0; i < 60; i++) { // 30 on each instance
      ConfigurableApplicationContext gateway = i % 2 == 0 ? first : second;
      String content = "redis concurrent " + i;
      calls.add(() -> post(gateway, "/v1/chat/completions", "Authorization", "Bearer " + key, content));
    }
    int passed = 0;
    for (HttpResponse<String> r : GatewayTestSupport.atOnce(calls)) {
      if (r.statusCode() == 200) {
        passed++;
      } else {
        assertThat(r.statusCode()).as(r.body()).isEqualTo(429);
        assertThat(r.headers().firstValue("retry-after-ms")).isPresent();
      }
    }
    assertThat(passed).isEqualTo(SHARED_RPM - 2);
    assertThat(UPSTREAM.receivedFor(key)).hasSize(SHARED_RPM);
    assertThat(post(first, "/v1/chat/completions", "Authorization", "Bearer " + key, "after")
        .statusCode()).isEqualTo(429);
    assertThat(post(second, "/v1/chat/completions", "Authorization", "Bearer " + key, "after")
        .statusCode()).isEqualTo(429);
  }

  /**
   * As an attacker bursts: 150 concurrent calls of one fresh key, half on each instance, 20 times,
   * every Redis setting at its default. Each burst passes exactly the limit, the upstream sees
   * exactly those calls, and every other answer is the filter's 429.
   */
  @Test
  void everyBurstOf150ConcurrentCallsOfOneKeyOverBothGatewaysPassesExactlyTheLimit() throws Exception {
    int burst = 150;
    List<String> results = new ArrayList<>();
    for (int rep = 0; rep < 20; rep++) {
      String key = "sk-rrl-burst-" + rep + "-" + System.nanoTime();
      long errorsBefore = storeErrors();
      List<Callable<HttpResponse<String>>> calls = new ArrayList<>();
      for (int i = 0; i < burst; i++) {
        ConfigurableApplicationContext gateway = i % 2 == 0 ? first : second;
        String content = "burst " + rep + " " + i;
        calls.add(() -> post(gateway, "/v1/chat/completions", "Authorization", "Bearer " + key, content));
      }
      int ok = 0;
      int limited = 0;
      List<String> other = new ArrayList<>();
      for (HttpResponse<String> r : GatewayTestSupport.atOnce(calls)) {
        if (r.statusCode() == 200) {
          ok++;
        } else if (r.statusCode() == 429) {
          limited++;
        } else {
          other.add(r.statusCode() + " " + r.body());
        }
      }
      results.add("rep " + rep + ": ok=" + ok + " limited=" + limited + " other=" + other
          + " upstream=" + UPSTREAM.receivedFor(key).size() + " storeErrors="
          + (storeErrors() - errorsBefore));
    }
    System.out.println(String.join("\n", results));
    assertThat(results).allSatisfy(r -> assertThat(r).contains("ok=" + SHARED_RPM + " ",
        "limited=" + (burst - SHARED_RPM) + " ", "other=[] ", "upstream=" + SHARED_RPM + " ",
        "storeErrors=0"));
  }

  private static long storeErrors() {
    return first.getBean(RedisRateLimitStore.class).errorCount()
        + second.getBean(RedisRateLimitStore.class).errorCount();
  }

  /**
   * The YAML of {@code application-filter.yml}: route {@code scg-redis} is limited by Spring Cloud
   * Gateway's {@code RedisRateLimiter} (20 tokens a call out of 60), route {@code switched} is the
   * same route with {@code rate-limiter: "#{@llmRateLimiter}"} added, and is limited by the
   * starter's default policy (3 a minute) with the starter's headers.
   */
  @Test
  void switchingFromRedisRateLimiterTakesOnlyTheBeanName() throws Exception {
    Map<String, RouteDefinition> routes = new LinkedHashMap<>();
    first.getBean(GatewayProperties.class).getRoutes().forEach(r -> routes.put(r.getId(), r));
    List<FilterDefinition> redis = routes.get("scg-redis").getFilters();
    List<FilterDefinition> switched = routes.get("switched").getFilters();
    assertThat(switched).hasSameSizeAs(redis);
    for (int i = 0; i < redis.size(); i++) {
      Map<String, String> args = new LinkedHashMap<>(switched.get(i).getArgs());
      String limiter = args.remove("rate-limiter");
      assertThat(switched.get(i).getName()).isEqualTo(redis.get(i).getName());
      assertThat(args).isEqualTo(redis.get(i).getArgs());
      assertThat(limiter).isEqualTo(i == redis.size() - 1 ? "#{@llmRateLimiter}" : null);
    }

    String key = "sk-rrl-switch-0000000001";
    for (int i = 1; i <= 3; i++) {
      HttpResponse<String> r = post(first, "/scg-redis/v1/chat/completions", "X-API-Key", key,
          "switch scg " + i);
      assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
      // 20 tokens a call, and the bucket refills 1 a second on Redis's clock while this runs
      assertThat(GatewayTestSupport.header(r, "X-RateLimit-Remaining"))
          .isBetween(60 - 20L * i, 60 - 20L * i + 10);
      assertThat(GatewayTestSupport.header(r, "X-RateLimit-Burst-Capacity")).isEqualTo(60);
      assertThat(r.headers().firstValue("RateLimit")).isEmpty();
    }
    // denied until 20 s have refilled a call's tokens
    HttpResponse<String> scgDenied = post(first, "/scg-redis/v1/chat/completions", "X-API-Key", key,
        "switch scg denied");
    assertThat(scgDenied.statusCode()).isEqualTo(429);
    assertThat(scgDenied.headers().firstValue("Retry-After")).isEmpty();

    for (int i = 1; i <= 3; i++) {
      HttpResponse<String> r = post(i % 2 == 0 ? second : first, "/switched/v1/chat/completions",
          "X-API-Key", key, "switch llm " + i);
      assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
      assertThat(r.headers().firstValue("RateLimit-Policy")).hasValue("\"default\";q=3;w=60");
      assertThat(GatewayTestSupport.header(r, "x-ratelimit-remaining-requests")).isEqualTo(3 - i);
      assertThat(r.headers().firstValue("X-RateLimit-Remaining")).isEmpty();
    }
    HttpResponse<String> denied = post(second, "/switched/v1/chat/completions", "X-API-Key", key,
        "switch llm denied");
    assertThat(denied.statusCode()).isEqualTo(429);
    assertThat(denied.headers().firstValue("RateLimit").orElseThrow()).startsWith("\"default\";r=0;t=");
    assertThat(GatewayTestSupport.header(denied, "retry-after-ms")).isPositive();
    assertThat(denied.headers().firstValue("X-RateLimit-Remaining")).isEmpty();

    // both routes proxied what they let through, with the prefix stripped, and nothing else
    assertThat(UPSTREAM.receivedContaining("switch scg ")).hasSize(3)
        .allSatisfy(r -> assertThat(r.path()).isEqualTo("/v1/chat/completions"));
    assertThat(UPSTREAM.receivedContaining("switch llm ")).hasSize(3);
    assertThat(UPSTREAM.receivedContaining("switch scg denied")).isEmpty();
    assertThat(UPSTREAM.receivedContaining("switch llm denied")).isEmpty();
  }
}

package io.github.llmratelimiter.autoconfigure.stacks;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.autoconfigure.RawHttp;
import io.github.llmratelimiter.autoconfigure.RawHttp.Response;
import io.github.llmratelimiter.core.KeySnapshot;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.gateway.RateLimitKey;
import io.github.llmratelimiter.gateway.RateLimitPolicy;
import io.github.llmratelimiter.gateway.RateLimitPolicies;
import java.time.Duration;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;
import org.springframework.boot.WebApplicationType;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.test.web.reactive.server.WebTestClient;

/**
 * The key sources under settings the shared scenarios do not run with, on both stacks: the client
 * address when the server honours forwarded headers ({@code server.forward-headers-strategy}
 * native, through Tomcat's RemoteIpValve or Reactor Netty's forwarded handler; framework, through
 * Spring's ForwardedHeaderFilter or ForwardedHeaderTransformer), and keys that give nothing under
 * {@code ratelimiter.missing-key=anonymous}.
 */
class KeySourceServerTests {

  static Stream<Arguments> stacksAndStrategies() {
    return Stream.of(WebApplicationType.SERVLET, WebApplicationType.REACTIVE)
        .flatMap(stack -> Stream.of("native", "framework").map(s -> Arguments.of(stack, s)));
  }

  private static WebTestClient client(ConfigurableApplicationContext app) {
    return WebTestClient.bindToServer().baseUrl("http://localhost:" + AbstractWebStackScenarioTests.port(app))
        .responseTimeout(Duration.ofSeconds(30)).build();
  }

  private static long windowUsed(ConfigurableApplicationContext app, String policy, String key) {
    RateLimitPolicy p = app.getBean(RateLimitPolicies.class).policy(policy);
    RateLimitKey k = RateLimitKey.of(key, null);
    return app.getBean(RateLimitStore.class).administration().orElseThrow()
        .inspect(p.budgets(k).get(0), p.keys(k).get(0))
        .map(KeySnapshot::windowUsed).orElse(0L);
  }

  @ParameterizedTest(name = "{0}, {1}")
  @MethodSource("stacksAndStrategies")
  void aForwardedClientAddressIsHonouredWhenTheServerIsToldTo(WebApplicationType stack, String strategy) {
    try (ConfigurableApplicationContext app = AbstractWebStackScenarioTests.start(stack,
        "server.forward-headers-strategy=" + strategy)) {
      WebTestClient client = client(app);
      for (int r = 1; r >= 0; r--) {
        client.get().uri("/keyed/ip").header("X-Forwarded-For", "203.0.113.9").exchange()
            .expectStatus().isOk().expectHeader().valueEquals("RateLimit", "\"keyed\";r=" + r + ";t=60");
      }
      client.get().uri("/keyed/ip").header("X-Forwarded-For", "203.0.113.9").exchange()
          .expectStatus().isEqualTo(429);
      // another forwarded client has a budget of its own; the proxy's own address is not charged
      client.get().uri("/keyed/ip").header("X-Forwarded-For", "203.0.113.10").exchange()
          .expectStatus().isOk();
      assertThat(windowUsed(app, "keyed", "ip:203.0.113.9")).isEqualTo(2);
      assertThat(windowUsed(app, "keyed", "ip:203.0.113.10")).isEqualTo(1);
      assertThat(windowUsed(app, "keyed", "ip:127.0.0.1")
          + windowUsed(app, "keyed", "ip:0:0:0:0::/64")).isZero();
    }
  }

  @ParameterizedTest(name = "{0}, {1}")
  @MethodSource("stacksAndStrategies")
  void anIpv6ClientIsChargedAsItsSlash64WhicheverAddressOfItItSends(
      WebApplicationType stack, String strategy) {
    try (ConfigurableApplicationContext app = AbstractWebStackScenarioTests.start(stack,
        "server.forward-headers-strategy=" + strategy)) {
      WebTestClient client = client(app);
      // an attacker rotating through its own /64 (limit 2): one budget, however the address is written
      for (String address : List.of("2001:db8:0:7::1", "2001:db8:0:7:ffff:ffff:ffff:fffe")) {
        client.get().uri("/keyed/ip").header("X-Forwarded-For", address).exchange()
            .expectStatus().isOk();
      }
      client.get().uri("/keyed/ip").header("X-Forwarded-For", "2001:DB8:0:7:0:0:0:2").exchange()
          .expectStatus().isEqualTo(429);
      // the neighbouring /64 is another client; an IPv4-mapped address is its IPv4 client
      client.get().uri("/keyed/ip").header("X-Forwarded-For", "2001:db8:0:8::1").exchange()
          .expectStatus().isOk();
      client.get().uri("/keyed/ip").header("X-Forwarded-For", "::ffff:203.0.113.20").exchange()
          .expectStatus().isOk();
      assertThat(windowUsed(app, "keyed", "ip:2001:db8:0:7::/64")).isEqualTo(2);
      assertThat(windowUsed(app, "keyed", "ip:2001:db8:0:8::/64")).isEqualTo(1);
      assertThat(windowUsed(app, "keyed", "ip:203.0.113.20")).isEqualTo(1);
    }
  }

  @ParameterizedTest
  @EnumSource(names = {"SERVLET", "REACTIVE"})
  void keysThatGiveNothingShareTheAnonymousKeyWhenMissingKeysAreAnonymous(WebApplicationType stack)
      throws Exception {
    try (ConfigurableApplicationContext app = AbstractWebStackScenarioTests.start(stack,
        "ratelimiter.missing-key=anonymous")) {
      WebTestClient client = client(app);
      client.post().uri("/keyed/tenant").exchange().expectStatus().isOk();
      client.get().uri("/keyed/principal").exchange().expectStatus().isOk();
      Response blank = RawHttp.send(AbstractWebStackScenarioTests.port(app), "POST /keyed/tenant HTTP/1.1",
          List.of(RawHttp.header("X-Tenant", "  ")), new byte[0]);
      assertThat(blank.status()).isEqualTo(429);
      assertThat(windowUsed(app, "keyed", "anonymous")).isEqualTo(2);
      client.get().uri("/annotated/tenant").exchange().expectStatus().isOk()
          .expectBody(String.class).isEqualTo("tenant null");
      assertThat(windowUsed(app, "annotated", "anonymous")).isEqualTo(1);
    }
  }
}

package io.github.llmratelimiter.autoconfigure.stacks;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.github.llmratelimiter.autoconfigure.stacks.PendingChargeApp.Gates;
import io.github.llmratelimiter.core.KeySnapshot;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.gateway.RateLimitKey;
import io.github.llmratelimiter.gateway.RateLimitPolicies;
import io.github.llmratelimiter.gateway.RateLimitPolicy;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.ToLongFunction;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.test.web.reactive.server.WebTestClient;

/**
 * Calls whose charge completes after the front door last looked at them, on a real server ({@link
 * PendingChargeApp}): the client went away while the charge was pending, or the charge completed
 * after the request's thread left the filters. Each call's slot on a limit on calls in flight is
 * given back once nobody proceeds with it, or once its response is over. A plan resolver's failure
 * is logged without its message; an observer's failure loses no call.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@ExtendWith(OutputCaptureExtension.class)
abstract class AbstractPendingChargeTests {

  private static final AtomicLong KEYS = new AtomicLong();

  private ConfigurableApplicationContext app;
  private int port;
  private WebTestClient client;

  /**
   * Returns the stack the application runs on.
   *
   * @return the web application type
   */
  protected abstract WebApplicationType stack();

  @BeforeAll
  void startApplication() {
    app = AbstractWebStackScenarioTests.start(PendingChargeApp.class, stack(), PendingChargeApp.PROPERTIES);
    port = AbstractWebStackScenarioTests.port(app);
    client = WebTestClient.bindToServer().baseUrl("http://localhost:" + port)
        .responseTimeout(Duration.ofSeconds(30)).build();
  }

  @AfterAll
  void stopApplication() {
    if (app != null) {
      app.close();
    }
  }

  private static String gatedKey() {
    return PendingChargeApp.GATED + "sk-pending-" + KEYS.incrementAndGet() + "-0123456789";
  }

  private long snapshot(String apiKey, ToLongFunction<KeySnapshot> field) {
    RateLimitPolicy p = app.getBean(RateLimitPolicies.class).policy("held");
    RateLimitKey key = RateLimitKey.of(apiKey, null);
    return app.getBean(RateLimitStore.class).administration().orElseThrow()
        .inspect(p.budgets(key).get(0), p.keys(key).get(0))
        .map(field::applyAsLong).orElse(0L);
  }

  /** Charged once, and its slot given back. */
  private void awaitChargedAndReleased(String apiKey) {
    AbstractWebStackScenarioTests.await("the call charged", () -> snapshot(apiKey, KeySnapshot::windowUsed), 1);
    AbstractWebStackScenarioTests.await("the slot released", () -> snapshot(apiKey, KeySnapshot::inFlight), 0);
  }

  /** Sends a request, waits until its charge is pending at its gate, and leaves with a reset. */
  private void leaveWhileTheChargeIsPending(String path, String apiKey) throws Exception {
    Gates gates = app.getBean(Gates.class);
    try (Socket socket = new Socket("localhost", port)) {
      socket.getOutputStream().write(("GET " + path + " HTTP/1.1\r\nHost: localhost\r\n"
          + "Authorization: Bearer " + apiKey + "\r\n\r\n").getBytes(StandardCharsets.ISO_8859_1));
      socket.getOutputStream().flush();
      Awaitility.await("the charge pending").atMost(Duration.ofSeconds(10))
          .pollInterval(Duration.ofMillis(5)).until(() -> gates.wasAsked(apiKey));
      socket.setSoLinger(true, 0);
    }
  }

  @Test
  void aPlanResolversFailureIsLoggedByItsTypeWithoutItsMessageThatNamesTheKey(CapturedOutput output) {
    String key = PendingChargeApp.FAILING + "sk-secret-" + KEYS.incrementAndGet() + "-0123456789";
    client.get().uri("/held/annotated").header("Authorization", "Bearer " + key).exchange()
        .expectStatus().isOk(); // decided under the default plan
    Awaitility.await("the warning").atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(5))
        .until(() -> output.getAll().contains("The plan resolver failed"));
    assertThat(output.getAll()).contains("The plan resolver failed (java.lang.IllegalStateException)")
        .doesNotContain(key, "no tenant for key");
  }

  @Test
  void anObserverThatThrowsLosesNeitherTheCallNorItsSlot() {
    String key = PendingChargeApp.THROWING + "sk-pending-" + KEYS.incrementAndGet() + "-0123456789";
    for (int i = 0; i < 2; i++) { // one call in flight at most: a slot kept would deny the next
      for (String path : List.of("/held/routed", "/held/annotated")) {
        client.get().uri(path).header("Authorization", "Bearer " + key).exchange()
            .expectStatus().isOk();
        AbstractWebStackScenarioTests.await("the slot released", () -> snapshot(key, KeySnapshot::inFlight), 0);
      }
    }
    assertThat(snapshot(key, KeySnapshot::windowUsed)).isEqualTo(4);
  }

  @Test
  void aClientLeavingWhileItsRoutesChargeIsPendingGetsItsSlotReleased() throws Exception {
    assumeTrue(stack() == WebApplicationType.REACTIVE,
        "Spring MVC charges a route on the request's thread, before the handler");
    String key = gatedKey();
    leaveWhileTheChargeIsPending("/held/routed", key);
    awaitChargedAndReleased(key);
    app.getBean(Gates.class).open(key);
    client.get().uri("/held/routed").header("Authorization", "Bearer " + key).exchange()
        .expectStatus().isOk();
    AbstractWebStackScenarioTests.await("the slot released", () -> snapshot(key, KeySnapshot::inFlight), 0);
  }

  @Test
  void aClientLeavingWhileItsAnnotatedChargeIsPendingGetsItsSlotReleased() throws Exception {
    String key = gatedKey();
    leaveWhileTheChargeIsPending("/held/annotated", key);
    awaitChargedAndReleased(key);
    app.getBean(Gates.class).open(key);
    client.get().uri("/held/annotated").header("Authorization", "Bearer " + key).exchange()
        .expectStatus().isOk();
    AbstractWebStackScenarioTests.await("the slot released", () -> snapshot(key, KeySnapshot::inFlight), 0);
  }

  @Test
  void anAnnotatedCallChargedAfterItsThreadLeftTheFiltersReleasesItsSlotWhenItsResponseIsOver() {
    String key = gatedKey();
    if (stack() == WebApplicationType.REACTIVE) {
      // no thread to leave: the gate opens once the charge waits at it
      Gates gates = app.getBean(Gates.class);
      CompletableFuture.runAsync(() -> {
        Awaitility.await("the charge pending").atMost(Duration.ofSeconds(10))
            .pollInterval(Duration.ofMillis(5)).until(() -> gates.wasAsked(key));
        gates.open(key);
      });
    }
    WebTestClient.ResponseSpec response = client.get().uri("/held/annotated")
        .header("Authorization", "Bearer " + key).exchange();
    response.expectStatus().isOk().expectBody(String.class).isEqualTo("annotated");
    awaitChargedAndReleased(key);
    client.get().uri("/held/annotated").header("Authorization", "Bearer " + key).exchange()
        .expectStatus().isOk();
    AbstractWebStackScenarioTests.await("the slot released", () -> snapshot(key, KeySnapshot::inFlight), 0);
  }
}

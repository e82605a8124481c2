package io.github.llmratelimiter.sample;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.jayway.jsonpath.JsonPath;
import java.net.ConnectException;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.net.Socket;
import java.net.SocketException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalManagementPort;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.ApplicationContext;

/**
 * The sample's safe set-up, with its own application.yml: Actuator only on the management port,
 * bound to the loopback interface; the public port serves no {@code /actuator} path, so no caller
 * on the network can read the endpoint or reset a key.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
class ManagementPortTests {

  private static final List<String> ACTUATOR_PATHS = List.of("/actuator", "/actuator/", "/actuator/health",
      "/actuator/health/liveness", "/actuator/ratelimiter", "/actuator/ratelimiter?top=5",
      "/actuator/ratelimiter/sk-anything-0000", "/actuator/env", "/actuator/beans", "/actuator/nothing");

  @LocalServerPort
  int port;

  @LocalManagementPort
  int managementPort;

  @Value("${management.server.address}")
  String managementAddress;

  private final HttpClient http = HttpClient.newHttpClient();

  private HttpResponse<String> send(String method, int toPort, String path) throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + toPort + path))
        .method(method, HttpRequest.BodyPublishers.noBody())
        .timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString());
  }

  private HttpResponse<String> chat(String key) throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/v1/chat/completions"))
        .header("Content-Type", "application/json").header("Authorization", "Bearer " + key)
        .POST(HttpRequest.BodyPublishers.ofString(
            "{\"model\":\"gpt-4o\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"))
        .timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void thePublicPortServesNoActuatorPath() throws Exception {
    assertThat(managementPort).isPositive().isNotEqualTo(port);
    for (String path : ACTUATOR_PATHS) {
      for (String method : List.of("GET", "HEAD", "POST", "DELETE")) {
        assertThat(send(method, port, path).statusCode()).as("%s %s on the public port", method, path)
            .isEqualTo(404);
      }
    }
    // the same paths are served on the management port
    assertThat(send("GET", managementPort, "/actuator/health").statusCode()).isEqualTo(200);
    assertThat(send("GET", managementPort, "/actuator/ratelimiter").statusCode()).isEqualTo(200);
  }

  @Test
  void theInMemoryStoreReportsTheRateLimiterHealthComponent(
      @Autowired ApplicationContext context) throws Exception {
    assertThat(chat("sk-health-check-0001").statusCode()).isEqualTo(200);
    Health health = context.getBean("rateLimiterHealthIndicator", HealthIndicator.class).health();
    assertThat(health.getStatus()).isEqualTo(Status.UP);
    assertThat(health.getDetails()).containsEntry("store", "memory");
    assertThat((Long) health.getDetails().get("trackedKeys")).isPositive();
    assertThat(health.getDetails().toString()).doesNotContain("sk-health-check");
    // the overall health, on the management port, includes it
    assertThat(send("GET", managementPort, "/actuator/health").body()).contains("\"status\":\"UP\"");
  }

  @Test
  void aResetFromThePublicPortIsImpossibleAndOnlyTheManagementPortResets() throws Exception {
    String key = "sk-self-reset-attempt-7e57";
    for (int i = 0; i < 3; i++) {
      assertThat(chat(key).statusCode()).isEqualTo(200);
    }
    assertThat(chat(key).statusCode()).isEqualTo(429);
    // the id an attacker would have read from the public ?top= list, were it public
    String report = send("GET", managementPort, "/actuator/ratelimiter?top=1000").body();
    List<String> ids = JsonPath.read(report, "$.budgets[?(@.budget=='chat/gpt-4o')].top[?(@.key=='****7e57')].id");
    assertThat(ids).hasSize(1);
    String id = ids.get(0);

    for (String selector : List.of(id, key)) {
      for (String path : List.of("/actuator/ratelimiter/" + selector,
          "/actuator/ratelimiter/" + selector + "?model=gpt-4o")) {
        assertThat(send("DELETE", port, path).statusCode()).as("DELETE %s on the public port", path)
            .isEqualTo(404);
      }
    }
    assertThat(chat(key).statusCode()).as("still limited: nothing was reset").isEqualTo(429);

    HttpResponse<String> reset = send("DELETE", managementPort, "/actuator/ratelimiter/" + id);
    assertThat(reset.statusCode()).isEqualTo(200);
    assertThat(JsonPath.<Integer>read(reset.body(), "$.reset")).isPositive();
    assertThat(chat(key).statusCode()).isEqualTo(200);
  }

  @Test
  void theManagementPortIsBoundToTheLoopbackInterfaceOnly() throws Exception {
    assertThat(InetAddress.getByName(managementAddress).isLoopbackAddress()).isTrue();
    Optional<InetAddress> external = nonLoopbackAddress();
    assumeTrue(external.isPresent(), "this host has no non-loopback address to connect from");
    InetAddress address = external.get();
    // the public port answers on that address: the address is reachable from here ...
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress(address, port), 2_000);
      assertThat(s.isConnected()).isTrue();
    }
    // ... while nothing listens there on the management port
    assertThatExceptionOfType(ConnectException.class).isThrownBy(() -> {
      try (Socket s = new Socket()) {
        s.connect(new InetSocketAddress(address, managementPort), 2_000);
      }
    });
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress(InetAddress.getByName("127.0.0.1"), managementPort), 2_000);
      assertThat(s.isConnected()).isTrue();
    }
  }

  /** An address of an up, non-loopback interface of this host, preferring IPv4. */
  private static Optional<InetAddress> nonLoopbackAddress() throws SocketException {
    return NetworkInterface.networkInterfaces()
        .filter(i -> {
          try {
            return i.isUp() && !i.isLoopback();
          } catch (SocketException e) {
            return false;
          }
        })
        .flatMap(NetworkInterface::inetAddresses)
        .filter(a -> !a.isLoopbackAddress() && !a.isLinkLocalAddress())
        .sorted(Comparator.comparing(a -> !(a instanceof Inet4Address)))
        .findFirst();
  }
}

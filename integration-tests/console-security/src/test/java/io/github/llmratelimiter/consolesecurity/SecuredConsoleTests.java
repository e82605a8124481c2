package io.github.llmratelimiter.consolesecurity;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;

/**
 * The Spring Security set-up of docs/operations.md: the console and the endpoint need a role
 * (anonymous callers get 401), operators read, only admins reset, and a reset needs the CSRF token
 * the console sends: the cookie {@code XSRF-TOKEN} the server sets, echoed in the header {@code
 * X-XSRF-TOKEN}.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, properties = {
    "ratelimiter.console.enabled=true", "ratelimiter.policies.api.rpm.limit=3",
    "ratelimiter.web.routes[0].include=/v1/**", "ratelimiter.web.routes[0].policy=api",
    "management.endpoints.web.exposure.include=health,ratelimiter",
    "management.endpoint.ratelimiter.access=unrestricted"})
class SecuredConsoleTests {

  private static final String KEY = "sk-secured-console-tenant-5e5e";

  @LocalServerPort
  int port;

  private final HttpClient http = HttpClient.newHttpClient();

  private HttpResponse<String> send(String method, String path, Optional<String> user, String... headers)
      throws Exception {
    HttpRequest.Builder request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
        .method(method, HttpRequest.BodyPublishers.noBody());
    user.ifPresent(u -> request.header("Authorization", "Basic " + Base64.getEncoder()
        .encodeToString((u + ":" + u + "-password").getBytes(StandardCharsets.UTF_8))));
    if (headers.length > 0) {
      request.headers(headers);
    }
    return http.send(request.timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString());
  }

  /** The CSRF cookie a GET of the console sets, as name=value. */
  private String csrfCookie(String user) throws Exception {
    HttpResponse<String> page = send("GET", "/ratelimiter/console", Optional.of(user));
    assertThat(page.statusCode()).isEqualTo(200);
    return page.headers().allValues("Set-Cookie").stream().filter(c -> c.startsWith("XSRF-TOKEN="))
        .map(c -> c.substring(0, c.indexOf(';'))).findFirst().orElseThrow();
  }

  @Test
  void theConsoleAndTheEndpointNeedARoleAndAResetNeedsAnAdminAndTheCsrfToken() throws Exception {
    for (int i = 0; i < 4; i++) {
      send("GET", "/v1/hello", Optional.empty(), "Authorization", "Bearer " + KEY);
    }
    for (String path : List.of("/ratelimiter/console", "/ratelimiter/console/console.js", "/actuator/ratelimiter")) {
      assertThat(send("GET", path, Optional.empty()).statusCode()).as(path).isEqualTo(401);
      assertThat(send("GET", path, Optional.of("ops")).statusCode()).as(path).isEqualTo(200);
    }
    assertThat(send("GET", "/actuator/health", Optional.empty()).statusCode()).isEqualTo(200);
    String reset = "/actuator/ratelimiter/" + KEY;

    String cookie = csrfCookie("admin");
    String token = cookie.substring("XSRF-TOKEN=".length());
    assertThat(send("DELETE", reset, Optional.of("admin")).statusCode()).as("without the token").isEqualTo(403);
    assertThat(send("DELETE", reset, Optional.of("admin"), "Cookie", cookie, "X-XSRF-TOKEN", "forged")
        .statusCode()).as("with a forged token").isEqualTo(403);
    String opsCookie = csrfCookie("ops");
    assertThat(send("DELETE", reset, Optional.of("ops"), "Cookie", opsCookie, "X-XSRF-TOKEN",
        opsCookie.substring("XSRF-TOKEN=".length())).statusCode()).as("an operator").isEqualTo(403);
    HttpResponse<String> done = send("DELETE", reset, Optional.of("admin"), "Cookie", cookie, "X-XSRF-TOKEN", token);
    assertThat(done.statusCode()).as("an admin with the token").isEqualTo(200);
    assertThat(done.body()).contains("\"reset\":");
    assertThat(send("GET", "/v1/hello", Optional.empty(), "Authorization", "Bearer " + KEY).statusCode())
        .as("the tenant, reset").isEqualTo(200);
  }
}

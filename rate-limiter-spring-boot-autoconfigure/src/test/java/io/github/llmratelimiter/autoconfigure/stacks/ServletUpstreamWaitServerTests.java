package io.github.llmratelimiter.autoconfigure.stacks;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.springframework.boot.WebApplicationType;

/**
 * Waiting for an upstream on Spring MVC (Tomcat): a waiting call holds no request thread (the
 * request is asynchronous while it waits), so that a server of four threads keeps answering while
 * ten calls wait.
 */
class ServletUpstreamWaitServerTests extends AbstractUpstreamWaitServerTests {

  private static final int THREADS = 4;

  @Override
  protected WebApplicationType stack() {
    return WebApplicationType.SERVLET;
  }

  @Override
  protected String[] serverProperties() {
    return new String[] {"server.tomcat.threads.max=" + THREADS,
        "server.tomcat.threads.min-spare=1"};
  }

  @Test
  void callsThatWaitHoldNoRequestThreadOfTheServer() throws Exception {
    List<CompletableFuture<HttpResponse<String>>> calls = new ArrayList<>();
    calls.add(send(newKey(), "/v1", "w0"));
    assertThat(arrival()).isEqualTo("w0");
    int waiters = THREADS * 2 + 2;
    for (int i = 1; i <= waiters; i++) {
      calls.add(send(newKey(), "/v1", "w" + i));
    }
    // a blocked thread per waiter would let no more than the server's threads wait
    awaitThat(() -> waiting() == waiters);

    HttpResponse<String> plain = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
            URI.create("http://localhost:" + port + "/actuator/ratelimiter"))
        .timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString());
    assertThat(plain.statusCode()).as("answered while %d calls wait", waiters).isEqualTo(200);
    assertThat(waiting()).isEqualTo(waiters);

    String current = "w0";
    for (int i = 0; i < waiters; i++) {
      gate().release(current);
      current = arrival();
    }
    gate().release(current);
    for (CompletableFuture<HttpResponse<String>> call : calls) {
      HttpResponse<String> response = call.get(10, TimeUnit.SECONDS);
      assertThat(response.statusCode()).isEqualTo(200);
      assertThat(response.body()).contains("\"total_tokens\":1000");
    }
    assertThat(gate().arrivals).isEmpty();
  }
}

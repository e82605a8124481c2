package io.github.llmratelimiter.sample;

import static org.assertj.core.api.Assertions.assertThat;

import com.jayway.jsonpath.JsonPath;
import io.github.llmratelimiter.core.KeySnapshot;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.StoreAdministration;
import io.github.llmratelimiter.gateway.RateLimitKey;
import io.github.llmratelimiter.gateway.RateLimitPolicies;
import io.github.llmratelimiter.gateway.RateLimitPolicy;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;

/**
 * The sample gateway against a client that tries to be charged to a budget other than the one it
 * uses, with the sample's own configuration (gpt-4o's budget is the smallest): a query parameter
 * beside the body's model, two credentials, negative estimate fields, a body above {@code
 * ratelimiter.web.max-body} (4MB by default). What a request was charged is read from the store.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
class GatewayBudgetBypassTests {

  @LocalServerPort
  int port;

  @Autowired
  RateLimitStore store;

  @Autowired
  RateLimitPolicies policies;

  private final HttpClient http = HttpClient.newHttpClient();

  private HttpResponse<String> chat(String query, String body, String... headers) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(
            URI.create("http://localhost:" + port + "/v1/chat/completions" + query))
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(body));
    for (int i = 0; i < headers.length; i += 2) {
      b.header(headers[i], headers[i + 1]);
    }
    return http.send(b.timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString());
  }

  private static String body(String model, String extra) {
    return "{\"model\":\"" + model + "\"" + extra + ",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
  }

  /** The "chat" level's budget of the model: its limit, and what the key used of it. */
  private KeySnapshot chatLevel(String apiKey, String model) {
    RateLimitPolicy chat = policies.policy("chat");
    RateLimitKey key = RateLimitKey.of(apiKey, model);
    int last = chat.levels().size() - 1;
    return admin(store).inspect(chat.budgets(key).get(last), chat.keys(key).get(last))
        .orElse(new KeySnapshot("none", "none", 0, 0, 0, 0, 0, 0, 0));
  }

  /** Whether any level of the chat hierarchy holds anything for the key, on either model. */
  private boolean charged(String apiKey) {
    RateLimitPolicy chat = policies.policy("chat");
    for (String model : new String[] {"gpt-4o", "gpt-4o-mini"}) {
      RateLimitKey key = RateLimitKey.of(apiKey, model);
      for (int i = 0; i < chat.levels().size(); i++) {
        if (admin(store).inspect(chat.budgets(key).get(i), chat.keys(key).get(i)).isPresent()) {
          return true;
        }
      }
    }
    return false;
  }

  private long gpt4oLimit() {
    RateLimitPolicy chat = policies.policy("chat");
    RateLimitKey key = RateLimitKey.of("any", "gpt-4o");
    return chat.budgets(key).get(chat.levels().size() - 1).window().limit();
  }

  @Test
  void aQueryModelBesideTheBodysModelIsChargedToTheBodysModel() throws Exception {
    long limit = gpt4oLimit();
    String[] keys = {"sk-bypass-query-000000001", "sk-bypass-fresh-000000002"};
    for (int k = 0; k < keys.length; k++) {
      String key = keys[k];
      int allowed = 0;
      for (int i = 0; i < 10; i++) {
        // the first key names gpt-4o-mini in the query each time, the second a new model each time
        String query = k == 0 ? "?model=gpt-4o-mini" : "?model=gpt-4o-" + i;
        HttpResponse<String> r = chat(query, body("gpt-4o", ""), "Authorization", "Bearer " + key);
        if (r.statusCode() == 200) {
          allowed++;
          assertThat(JsonPath.<String>read(r.body(), "$.model")).isEqualTo("gpt-4o");
        } else {
          assertThat(r.statusCode()).isEqualTo(429);
        }
      }
      assertThat(allowed).as(key).isEqualTo(limit);
      assertThat(chatLevel(key, "gpt-4o").windowUsed()).isEqualTo(limit);
      assertThat(chatLevel(key, "gpt-4o-mini").windowUsed()).isZero();
    }
  }

  @Test
  void twoDifferentCredentialsAreA400ChargedToNeither() throws Exception {
    String fixed = "sk-bypass-fixed-000000003";
    for (int i = 0; i < 6; i++) {
      String random = "sk-bypass-random-" + i + "-0000000";
      HttpResponse<String> r = chat("", body("gpt-4o", ""),
          "X-API-Key", fixed, "Authorization", "Bearer " + random);
      assertThat(r.statusCode()).isEqualTo(400);
      assertThat(r.headers().firstValue("Content-Type")).hasValue("application/problem+json");
      assertThat(JsonPath.<String>read(r.body(), "$.error.type")).isEqualTo("invalid_request_error");
      assertThat(r.body()).doesNotContain(fixed).doesNotContain(random);
      assertThat(charged(random)).isFalse();
    }
    assertThat(charged(fixed)).isFalse();
    // one key sent both ways is that key
    assertThat(chat("", body("gpt-4o", ""), "X-API-Key", fixed, "Authorization", "Bearer " + fixed)
        .statusCode()).isEqualTo(200);
    assertThat(chatLevel(fixed, "gpt-4o").windowUsed()).isEqualTo(1);
  }

  @Test
  void negativeMaxTokensOrNIsA400ChargedNothing() throws Exception {
    String key = "sk-bypass-negative-000004";
    for (String field : new String[] {",\"max_tokens\":-1", ",\"n\":-3", ",\"max_completion_tokens\":-1", ",\"n\":0"}) {
      HttpResponse<String> r = chat("", body("gpt-4o-mini", field), "Authorization", "Bearer " + key);
      assertThat(r.statusCode()).as(field).isEqualTo(400);
      assertThat(JsonPath.<String>read(r.body(), "$.detail")).contains("must be an integer from");
      assertThat(JsonPath.<String>read(r.body(), "$.error.type")).isEqualTo("invalid_request_error");
    }
    assertThat(charged(key)).isFalse();
  }

  @Test
  void aBodyAboveMaxBodyIsA413ProblemChargedNothing() throws Exception {
    String key = "sk-bypass-large-00000005";
    byte[] large = new byte[10 * 1024 * 1024];
    Arrays.fill(large, (byte) ' ');
    String declared = send("Content-Length: " + large.length, large, key);
    assertThat(declared).startsWith("HTTP/1.1 413 ").contains("application/problem+json")
        .contains("\"status\":413").contains("\"maxBodyBytes\":4194304").contains("(ratelimiter.web.max-body)")
        .contains("request_too_large");
    byte[] chunk = new byte[1024 * 1024];
    Arrays.fill(chunk, (byte) ' ');
    ByteArrayOutputStream chunked = new ByteArrayOutputStream();
    for (int i = 0; i < 5; i++) { // 5 MB in 1 MB chunks, then the last chunk
      chunked.writeBytes(("100000\r\n").getBytes(StandardCharsets.US_ASCII));
      chunked.writeBytes(chunk);
      chunked.writeBytes("\r\n".getBytes(StandardCharsets.US_ASCII));
    }
    chunked.writeBytes("0\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
    String streamed = send("Transfer-Encoding: chunked", chunked.toByteArray(), key);
    assertThat(streamed).startsWith("HTTP/1.1 413 ").contains("\"status\":413");
    assertThat(charged(key)).isFalse();
  }

  /**
   * Sends a chat request with {@code Connection: close} on a socket, the body from another thread
   * (the server may answer before reading it all, and then close), and returns all it answers.
   */
  private String send(String lengthHeader, byte[] body, String key) throws Exception {
    try (Socket socket = new Socket("localhost", port)) {
      socket.setSoTimeout(30_000);
      OutputStream out = socket.getOutputStream();
      out.write(("POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
          + "Content-Type: application/json\r\nAuthorization: Bearer " + key + "\r\n" + lengthHeader
          + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
      Thread writer = new Thread(() -> {
        try {
          out.write(body);
          out.flush();
        } catch (IOException e) {
          // the server answered and closed without reading the rest
        }
      });
      writer.setDaemon(true);
      writer.start();
      String response = new String(socket.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      writer.join(10_000);
      return response;
    }
  }

  /** The store's administration, which every store under test here offers. */
  private static StoreAdministration admin(RateLimitStore store) {
    return store.administration().orElseThrow();
  }
}

package io.github.llmratelimiter.sample;

import static org.assertj.core.api.Assertions.assertThat;

import com.jayway.jsonpath.JsonPath;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;

/**
 * What a client that calls a path, a method or a model the gateway does not serve, or sends a
 * multipart body the container cannot parse or take, gets: a 4xx
 * problem ({@code application/problem+json}) that also carries OpenAI's {@code error} object, as
 * every other error of the sample does, never Spring's default error body.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = "ratelimiter.policies.chat.concurrency.limit=1000")
class GatewayErrorShapeTests {

  @LocalServerPort
  int port;

  private final HttpClient http = HttpClient.newHttpClient();

  private HttpResponse<String> send(String method, String path, String body) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://localhost:" + port + path))
        .header("Authorization", "Bearer sk-error-shape-0000001")
        .header("Content-Type", "application/json")
        .method(method, body == null ? HttpRequest.BodyPublishers.noBody()
            : HttpRequest.BodyPublishers.ofString(body));
    return http.send(b.timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString());
  }

  private static void assertProblem(HttpResponse<String> r, int status) {
    assertThat(r.statusCode()).isEqualTo(status);
    assertThat(r.headers().firstValue("Content-Type").orElse(""))
        .startsWith("application/problem+json");
    assertThat(JsonPath.<Integer>read(r.body(), "$.status")).isEqualTo(status);
    assertThat(JsonPath.<String>read(r.body(), "$.error.type")).isEqualTo("invalid_request_error");
    assertThat(JsonPath.<String>read(r.body(), "$.error.message"))
        .isEqualTo(JsonPath.<String>read(r.body(), "$.detail"));
  }

  @Test
  void anUnknownPathIsA404Problem() throws Exception {
    HttpResponse<String> r = send("POST", "/v1/chat/nope", "{}");
    assertProblem(r, 404);
    assertThat(JsonPath.<String>read(r.body(), "$.detail"))
        .isEqualTo("Invalid URL (POST /v1/chat/nope)");

    assertProblem(send("GET", "/v1/nothing-here", null), 404);
  }

  @Test
  void aMethodThePathDoesNotTakeIsA405ProblemNamingTheAllowedOnes() throws Exception {
    HttpResponse<String> get = send("GET", "/v1/chat/completions", null);
    assertProblem(get, 405);
    assertThat(get.headers().firstValue("Allow")).hasValue("POST");

    assertProblem(send("PUT", "/v1/chat/completions", "{}"), 405);
  }

  @Test
  void whatTomcatRejectsBeforeTheApplicationIsA400ProblemNotAnHtmlPage() throws Exception {
    HttpResponse<String> slash = send("POST", "/v1/chat%2Fcompletions", "{}");
    assertProblem(slash, 400);

    HttpRequest huge = HttpRequest.newBuilder(URI.create("http://localhost:" + port + "/v1/models"))
        .header("Authorization", "Bearer sk-error-shape-0000001")
        .header("X-Padding", "x".repeat(16 * 1024)).timeout(Duration.ofSeconds(30)).build();
    assertProblem(http.send(huge, HttpResponse.BodyHandlers.ofString()), 400);
  }

  private HttpResponse<String> sendForm(String contentType, byte[] body) throws Exception {
    HttpRequest r = HttpRequest.newBuilder(
            URI.create("http://localhost:" + port + "/v1/chat/completions"))
        .header("Authorization", "Bearer sk-error-shape-0000001")
        .header("Content-Type", contentType)
        .POST(HttpRequest.BodyPublishers.ofByteArray(body)).timeout(Duration.ofSeconds(30)).build();
    return http.send(r, HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void aMultipartBodyTheContainerCannotParseIsA400ProblemAndOnePastItsLimitsA413()
      throws Exception {
    assertProblem(sendForm("multipart/form-data", "--x\r\n".getBytes()), 400);
    assertProblem(sendForm("multipart/form-data; boundary=zz", "--zz\r\ngarbage".getBytes()), 400);

    String file = "--zz\r\nContent-Disposition: form-data; name=\"file\"; filename=\"f.txt\"\r\n"
        + "Content-Type: text/plain\r\n\r\n" + "a".repeat(2 * 1024 * 1024) + "\r\n--zz--\r\n";
    assertProblem(sendForm("multipart/form-data; boundary=zz", file.getBytes()), 413);
  }

  @Test
  void aModelTheGatewayDoesNotServeIsA404ModelNotFound() throws Exception {
    HttpResponse<String> r = send("POST", "/v1/chat/completions",
        "{\"model\":\"gpt-9\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
    assertProblem(r, 404);
    assertThat(JsonPath.<String>read(r.body(), "$.error.code")).isEqualTo("model_not_found");
    assertThat(JsonPath.<String>read(r.body(), "$.error.param")).isEqualTo("model");
  }

  @Test
  void aNullMessageIsA400ProblemNotAnUpstreamError() throws Exception {
    HttpResponse<String> r = send("POST", "/v1/chat/completions",
        "{\"model\":\"gpt-4o-mini\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"},null]}");
    assertProblem(r, 400);
    assertThat(JsonPath.<String>read(r.body(), "$.detail"))
        .isEqualTo("messages[1] must be an object, but was null");
  }

  @Test
  void aLongUnknownModelNameIsNotEchoedWhole() throws Exception {
    String model = "m".repeat(100_000);
    HttpResponse<String> r = send("POST", "/v1/chat/completions",
        "{\"model\":\"" + model + "\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
    assertProblem(r, 404);
    assertThat(r.body()).hasSizeLessThan(2_000).doesNotContain(model);
  }

  /** Sends raw bytes, optionally closing the sending side, and reads the whole answer. */
  private String raw(String request, boolean halfClose) throws Exception {
    try (Socket socket = new Socket("localhost", port)) {
      socket.setSoTimeout(30_000);
      socket.getOutputStream().write(request.getBytes(StandardCharsets.ISO_8859_1));
      socket.getOutputStream().flush();
      if (halfClose) {
        socket.shutdownOutput();
      }
      return new String(socket.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  @Test
  void aBodyCutMidChunkOrWithABadChunkSizeIsA400ProblemNotSpringsDefaultErrorBody()
      throws Exception {
    String head = "POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\n"
        + "Authorization: Bearer sk-error-shape-0000002\r\nContent-Type: application/json\r\n"
        + "Connection: close\r\n";
    for (String[] broken : new String[][] {
        {head + "Transfer-Encoding: chunked\r\n\r\n40\r\n{\"model\":\"gpt-4o-mini\",", "cut mid-chunk"},
        {head + "Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n", "a bad chunk size"},
        {head + "Content-Length: 100\r\n\r\n{\"model\":\"gpt-4o-mini\"", "shorter than declared"}}) {
      String answer = raw(broken[0], true);
      assertThat(answer).as(broken[1]).startsWith("HTTP/1.1 400");
      assertThat(answer).as(broken[1]).containsIgnoringCase("Content-Type: application/problem+json")
          .contains("\"invalid_request_error\"").doesNotContain("timestamp")
          .doesNotContain("sk-error-shape");
    }
    // the gateway still answers
    assertThat(send("GET", "/v1/models", null).statusCode()).isEqualTo(200);
  }
}

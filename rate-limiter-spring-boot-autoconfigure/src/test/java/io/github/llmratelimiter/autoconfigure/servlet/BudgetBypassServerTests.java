package io.github.llmratelimiter.autoconfigure.servlet;

import static io.github.llmratelimiter.autoconfigure.RawHttp.header;
import static org.assertj.core.api.Assertions.assertThat;

import com.jayway.jsonpath.JsonPath;
import io.github.llmratelimiter.autoconfigure.ManualTicker;
import io.github.llmratelimiter.autoconfigure.RawHttp.Header;
import io.github.llmratelimiter.autoconfigure.RawHttp.Response;
import io.github.llmratelimiter.autoconfigure.RawHttp;
import io.github.llmratelimiter.core.KeySnapshot;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.StoreAdministration;
import io.github.llmratelimiter.gateway.RateLimitKey;
import io.github.llmratelimiter.gateway.RateLimitObserver;
import io.github.llmratelimiter.gateway.RateLimitOutcome;
import io.github.llmratelimiter.gateway.RateLimitPolicies;
import io.github.llmratelimiter.gateway.RateLimitPolicy;
import io.github.llmratelimiter.gateway.RateLimited;
import jakarta.servlet.AsyncContext;
import jakarta.servlet.ReadListener;
import jakarta.servlet.ServletInputStream;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.skyscreamer.jsonassert.JSONAssert;
import org.skyscreamer.jsonassert.JSONCompareMode;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.boot.web.servlet.ServletRegistrationBean;
import org.springframework.context.annotation.Bean;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/**
 * A client that tries to be charged to a budget other than the one it uses, on a real server over
 * plain sockets: a query parameter beside the body's model, two credentials, estimate fields the
 * handler reads otherwise, bodies larger than the limiter accepts (declared, chunked, or too large
 * to read the model from). Every rejection is checked to have charged nothing: no decision reached
 * the store for the request's keys. gpt-4o has 3 calls a minute, every other model 100; time stands
 * still (a manual ticker).
 */
@SpringBootTest(classes = BudgetBypassServerTests.App.class,
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {
        "ratelimiter.rpm.limit=1000",
        "ratelimiter.policies.chat.scope=api-key-and-model",
        "ratelimiter.policies.chat.rpm.limit=100",
        "ratelimiter.policies.chat.tpm.limit=100000000",
        "ratelimiter.policies.chat.models.gpt-4o.rpm.limit=3",
        "ratelimiter.web.max-body=64KB",
        "ratelimiter.web.max-body-peek=16KB",
        "ratelimiter.web.routes[0].include=/v1/chat/**",
        "ratelimiter.web.routes[0].policy=chat",
        "ratelimiter.web.routes[1].include=/v1/query/**",
        "ratelimiter.web.routes[1].policy=chat",
        "ratelimiter.web.routes[1].model-source=query",
        "ratelimiter.web.routes[2].include=/v1/body/**",
        "ratelimiter.web.routes[2].policy=chat",
        "ratelimiter.web.routes[2].model-source=body",
        "ratelimiter.web.routes[3].include=/v1/upload/**",
        "ratelimiter.web.routes[3].policy=chat",
        "ratelimiter.web.routes[3].model-source=none"})
@DirtiesContext
class BudgetBypassServerTests {

  private static final int MAX_BODY = 64 * 1024;
  private static final String JSON = "application/json";

  @LocalServerPort
  int port;

  @Autowired
  Decisions decisions;

  @Autowired
  RateLimitStore store;

  @Autowired
  RateLimitPolicies policies;

  @SpringBootConfiguration
  @EnableAutoConfiguration
  static class App {

    @Bean
    ManualTicker ticker() {
      return new ManualTicker();
    }

    @Bean
    Decisions decisions() {
      return new Decisions();
    }

    @Bean
    Handlers handlers() {
      return new Handlers();
    }

    @Bean
    ServletRegistrationBean<CountingServlet> countingServlet() {
      ServletRegistrationBean<CountingServlet> servlet =
          new ServletRegistrationBean<>(new CountingServlet(), "/async/count");
      servlet.setAsyncSupported(true);
      return servlet;
    }
  }

  /** A servlet outside Spring MVC that reads its body asynchronously and answers its length. */
  static final class CountingServlet extends HttpServlet {

    @Override
    protected void doPost(HttpServletRequest request, HttpServletResponse response) throws IOException {
      AsyncContext async = request.startAsync();
      ServletInputStream in = request.getInputStream();
      long[] count = {0};
      in.setReadListener(new ReadListener() {
        @Override
        public void onDataAvailable() throws IOException {
          byte[] buf = new byte[8192];
          while (in.isReady() && !in.isFinished()) {
            int n = in.read(buf);
            if (n < 0) {
              break;
            }
            count[0] += n;
          }
        }

        @Override
        public void onAllDataRead() throws IOException {
          response.setContentType("text/plain");
          response.getWriter().write(Long.toString(count[0]));
          async.complete();
        }

        @Override
        public void onError(Throwable t) {
          response.setStatus(500);
          async.complete();
        }
      });
    }
  }

  /** Every decision's key, in order. */
  static final class Decisions implements RateLimitObserver {

    final Queue<RateLimitKey> keys = new ConcurrentLinkedQueue<>();

    @Override
    public void onDecision(RateLimitOutcome outcome, long nanos) {
      keys.add(outcome.key());
    }

    long of(String apiKey) {
      return keys.stream().filter(k -> k.apiKey().equals(apiKey)).count();
    }
  }

  /** The handlers: each answers with the model it serves. */
  @RestController
  static class Handlers {

    @PostMapping({"/v1/chat/completions", "/v1/body/completions"})
    Map<String, Object> chat(@RequestBody Map<String, Object> body) {
      return Map.of("served", String.valueOf(body.get("model")));
    }

    @GetMapping("/v1/chat/models")
    Map<String, Object> describe(@RequestParam("model") String model) {
      return Map.of("served", model);
    }

    @PostMapping("/v1/query/completions")
    Map<String, Object> byQuery(@RequestParam("model") String model, @RequestBody Map<String, Object> body) {
      return Map.of("served", model);
    }

    @RateLimited(policy = "chat")
    @PostMapping("/v1/query/annotated")
    Map<String, Object> annotatedByQuery(@RequestParam("model") String model,
        @RequestBody Map<String, Object> body) {
      return Map.of("served", model);
    }

    @PostMapping(path = "/v1/chat/form", consumes = "application/x-www-form-urlencoded")
    Map<String, Object> form(@RequestParam("model") String model) {
      return Map.of("served", model);
    }

    @PostMapping({"/v1/upload", "/free/upload"})
    Map<String, Object> upload(@RequestBody byte[] bytes) {
      return Map.of("bytes", bytes.length);
    }

    @RateLimited(policy = "chat")
    @PostMapping("/annotated/upload")
    Map<String, Object> annotatedUpload(@RequestBody byte[] bytes) {
      return Map.of("bytes", bytes.length);
    }

    @RateLimited(policy = "chat")
    @PostMapping("/annotated/completions")
    Map<String, Object> annotated(@RequestBody Map<String, Object> body) {
      return Map.of("served", String.valueOf(body.get("model")));
    }
  }

  private Response post(String path, String contentType, String body, Header... headers) throws Exception {
    return post(path, contentType, body.getBytes(StandardCharsets.UTF_8), headers);
  }

  private Response post(String path, String contentType, byte[] body, Header... headers) throws Exception {
    List<Header> all = new ArrayList<>(Arrays.asList(headers));
    all.add(header("Content-Type", contentType));
    all.add(header("Content-Length", Integer.toString(body.length)));
    return RawHttp.send(port, "POST " + path + " HTTP/1.1", all, body);
  }

  private Response postChunked(String path, String contentType, byte[] body, Header... headers)
      throws Exception {
    List<Header> all = new ArrayList<>(Arrays.asList(headers));
    all.add(header("Content-Type", contentType));
    all.add(header("Transfer-Encoding", "chunked"));
    return RawHttp.send(port, "POST " + path + " HTTP/1.1", all, RawHttp.chunked(body, 4096));
  }

  private static Header bearer(String key) {
    return header("Authorization", "Bearer " + key);
  }

  private static String chat(String model) {
    return "{\"model\":\"" + model + "\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
  }

  /** The calls the key's budget of that model counts in its window on the "chat" policy. */
  private long windowUsed(String apiKey, String model) {
    RateLimitPolicy chat = policies.policy("chat");
    RateLimitKey key = RateLimitKey.of(apiKey, model);
    return admin(store).inspect(chat.budgets(key).get(0), chat.keys(key).get(0))
        .map(KeySnapshot::windowUsed).orElse(0L);
  }

  private static void assertProblem(Response r, int status) {
    assertThat(r.status()).isEqualTo(status);
    assertThat(r.headers().get("content-type")).startsWith("application/problem+json");
    assertThat(JsonPath.<Integer>read(r.body(), "$.status")).isEqualTo(status);
  }

  @Test
  void aQueryParameterBesideTheBodysModelIsNotTheBudgetCharged() throws Exception {
    String key = "sk-bypass-query-000000001";
    int allowed = 0;
    for (int i = 0; i < 10; i++) {
      Response r = post("/v1/chat/completions?model=gpt-4o-mini", JSON, chat("gpt-4o"), bearer(key));
      if (r.status() == 200) {
        allowed++;
        assertThat(JsonPath.<String>read(r.body(), "$.served")).isEqualTo("gpt-4o");
      } else {
        assertThat(r.status()).isEqualTo(429);
        assertThat(JsonPath.<String>read(r.body(), "$.level")).isEqualTo("chat/gpt-4o");
      }
    }
    assertThat(allowed).isEqualTo(3);
    assertThat(windowUsed(key, "gpt-4o")).isEqualTo(3);
    assertThat(windowUsed(key, "gpt-4o-mini")).isZero();
  }

  @Test
  void theBodysModelIsReadAsTheHandlersJsonParserReadsIt() throws Exception {
    String key = "sk-bypass-json-0000000015";
    // a repeated name (the last wins, for Jackson as for the limiter) and an escaped character
    for (String body : List.of("{\"model\":\"gpt-4o-mini\",\"model\":\"gpt-4o\"}",
        "{\"model\":\"gpt\\u002d4o\"}", " {\n \"model\" : \"gpt-4o\" } ")) {
      Response r = post("/v1/chat/completions?model=gpt-4o-mini", JSON, body, bearer(key));
      assertThat(r.status()).as(body).isEqualTo(200);
      assertThat(JsonPath.<String>read(r.body(), "$.served")).isEqualTo("gpt-4o");
    }
    assertThat(windowUsed(key, "gpt-4o")).isEqualTo(3);
    assertThat(windowUsed(key, "gpt-4o-mini")).isZero();
  }

  @Test
  void aFreshQueryModelOnEveryCallIsNotAFreshBudget() throws Exception {
    String key = "sk-bypass-fresh-000000002";
    int allowed = 0;
    for (int i = 0; i < 10; i++) {
      if (post("/v1/chat/completions?model=m-" + i, JSON, chat("gpt-4o"), bearer(key)).status() == 200) {
        allowed++;
      }
    }
    assertThat(allowed).isEqualTo(3);
    for (int i = 0; i < 10; i++) {
      assertThat(windowUsed(key, "m-" + i)).isZero();
    }
  }

  @Test
  void theQueryParameterAppliesWhereTheBodyNamesNoModelOrThereIsNoBody() throws Exception {
    String key = "sk-bypass-nobody-00000003";
    assertThat(post("/v1/chat/completions?model=gpt-4o", JSON, "{\"messages\":[]}", bearer(key)).status())
        .isEqualTo(200);
    Response get = RawHttp.send(port, "GET /v1/chat/models?model=gpt-4o HTTP/1.1", List.of(bearer(key)),
        new byte[0]);
    assertThat(get.status()).isEqualTo(200);
    assertThat(post("/v1/chat/completions?model=gpt-4o", JSON, "{\"model\":null}", bearer(key)).status())
        .isEqualTo(200);
    assertThat(windowUsed(key, "gpt-4o")).isEqualTo(3);
  }

  @Test
  void eachRouteReadsTheModelFromTheSourceItChose() throws Exception {
    String key = "sk-bypass-sources-0000004";
    // query: the handler serves the query's model, so the query's budget is charged
    Response query = post("/v1/query/completions?model=gpt-4o", JSON, chat("gpt-4o-mini"), bearer(key));
    assertThat(JsonPath.<String>read(query.body(), "$.served")).isEqualTo("gpt-4o");
    assertThat(windowUsed(key, "gpt-4o")).isEqualTo(1);
    // an annotated handler on the route: the annotation charges, the route's source still applies
    assertThat(post("/v1/query/annotated?model=gpt-4o", JSON, chat("gpt-4o-mini"), bearer(key)).status())
        .isEqualTo(200);
    assertThat(windowUsed(key, "gpt-4o")).isEqualTo(2);
    assertThat(windowUsed(key, "gpt-4o-mini")).isZero();
    // body: a query parameter never counts, even when the body names no model
    assertThat(post("/v1/body/completions?model=gpt-4o", JSON, "{}", bearer(key)).status()).isEqualTo(200);
    assertThat(windowUsed(key, "gpt-4o")).isEqualTo(2);
    assertThat(windowUsed(key, null)).isEqualTo(1);
    // none: no model at all
    assertThat(post("/v1/upload?model=gpt-4o", "application/octet-stream", "abc", bearer(key)).status())
        .isEqualTo(200);
    assertThat(windowUsed(key, "gpt-4o")).isEqualTo(2);
    assertThat(windowUsed(key, null)).isEqualTo(2);
  }

  @Test
  void aFormBodysModelWinsOverTheQueryAndTwoFormModelsAreRejected() throws Exception {
    String key = "sk-bypass-form-000000005";
    String form = "application/x-www-form-urlencoded";
    int allowed = 0;
    for (int i = 0; i < 5; i++) {
      if (post("/v1/chat/form?model=gpt-4o-mini", form, "model=gpt-4o", bearer(key)).status() == 200) {
        allowed++;
      }
    }
    assertThat(allowed).isEqualTo(3);
    assertThat(windowUsed(key, "gpt-4o-mini")).isZero();
    String other = "sk-bypass-form-000000006";
    assertProblem(post("/v1/chat/form", form, "model=gpt-4o-mini&model=gpt-4o", bearer(other)), 400);
    assertThat(decisions.of(other)).isZero();
  }

  @ParameterizedTest
  @ValueSource(strings = {
      "/v1/chat/completions?model=gpt-4o-mini&model=gpt-4o|{}",
      "/v1/chat/completions|{\"model\":5}",
      "/v1/chat/completions|{\"model\":[\"gpt-4o\"]}",
      "/v1/chat/completions|{\"model\":{\"id\":\"gpt-4o\"}}",
      "/annotated/completions|{\"model\":true}"})
  void anAmbiguousOrMalformedModelIsA400AndChargesNothing(String request) throws Exception {
    String key = "sk-bypass-model-" + Integer.toHexString(request.hashCode());
    String[] parts = request.split("\\|");
    Response r = post(parts[0], JSON, parts[1], bearer(key));
    assertProblem(r, 400);
    assertThat(JsonPath.<String>read(r.body(), "$.detail")).contains("model");
    assertThat(decisions.of(key)).isZero();
  }

  @Test
  void twoDifferentCredentialsAreA400ChargedToNeither() throws Exception {
    String a = "sk-bypass-cred-a-0000007";
    String b = "sk-bypass-cred-b-0000008";
    List<Header[]> conflicting = List.of(
        new Header[] {bearer(a), header("X-API-Key", b)},
        new Header[] {header("X-API-Key", a), header("X-API-Key", b)},
        new Header[] {bearer(a), bearer(b)},
        new Header[] {header("authorization", "bearer " + a), header("x-api-key", b)});
    for (Header[] headers : conflicting) {
      Response r = post("/v1/chat/completions", JSON, chat("gpt-4o-mini"), headers);
      assertProblem(r, 400);
      JSONAssert.assertEquals("""
          {"title":"Bad Request","status":400,"instance":"/v1/chat/completions",
           "detail":"The request carries more than one API key (Authorization: Bearer and X-API-Key, or one of them twice, with different values): send one"}
          """, r.body(), JSONCompareMode.STRICT);
    }
    assertThat(decisions.of(a)).isZero();
    assertThat(decisions.of(b)).isZero();
    // the bypass: a fixed X-API-Key with a new Bearer on every call passes none
    for (int i = 0; i < 6; i++) {
      assertThat(post("/v1/chat/completions", JSON, chat("gpt-4o"), header("X-API-Key", a),
          bearer("sk-random-" + i + "-000000000")).status()).isEqualTo(400);
    }
    assertThat(decisions.keys).noneMatch(k -> k.apiKey().startsWith("sk-random-"));
  }

  @Test
  void theSameCredentialTwiceOrAnEmptyBearerIsOneKey() throws Exception {
    String a = "sk-bypass-same-00000009";
    assertThat(post("/v1/chat/completions", JSON, chat("gpt-4o-mini"), bearer(a), header("X-API-Key", a))
        .status()).isEqualTo(200);
    assertThat(decisions.of(a)).isEqualTo(1);
    assertThat(post("/v1/chat/completions", JSON, chat("gpt-4o-mini"),
        header("Authorization", "Bearer "), header("X-API-Key", a)).status()).isEqualTo(200);
    assertThat(decisions.of(a)).isEqualTo(2);
    assertThat(windowUsed(a, "gpt-4o-mini")).isEqualTo(2);
    // a Bearer without a token and nothing else is no key at all
    assertProblem(post("/v1/chat/completions", JSON, chat("gpt-4o-mini"), header("Authorization", "Bearer")), 401);
  }

  @ParameterizedTest
  @ValueSource(strings = {
      "\"max_tokens\":-1", "\"max_completion_tokens\":-5", "\"max_output_tokens\":-1", "\"n\":-3",
      "\"n\":0", "\"max_tokens\":\"100000\"", "\"max_tokens\":1.5", "\"max_tokens\":1e30",
      "\"n\":99999999999999999999", "\"max_tokens\":2147483648", "\"max_tokens\":true",
      "\"n\":[2]"})
  void anEstimateFieldTheHandlerWouldReadOtherwiseIsA400AndChargesNothing(String field) throws Exception {
    String key = "sk-bypass-field-" + Integer.toHexString(field.hashCode());
    String body = "{\"model\":\"gpt-4o\",\"messages\":[]," + field + "}";
    Response routed = post("/v1/chat/completions", JSON, body, bearer(key));
    assertProblem(routed, 400);
    String name = field.substring(1, field.indexOf('"', 1));
    assertThat(JsonPath.<String>read(routed.body(), "$.detail")).startsWith(name + " must be an integer from ");
    assertProblem(post("/annotated/completions", JSON, body, bearer(key)), 400);
    assertThat(decisions.of(key)).isZero();
  }

  @Test
  void validEstimateFieldsPass() throws Exception {
    String key = "sk-bypass-fields-ok-00010";
    for (String field : List.of("\"max_tokens\":0", "\"n\":1", "\"max_tokens\":10.0",
        "\"max_tokens\":null", "\"max_completion_tokens\":5,\"max_tokens\":7,\"n\":3")) {
      assertThat(post("/v1/chat/completions", JSON,
          "{\"model\":\"gpt-4o-mini\",\"messages\":[]," + field + "}", bearer(key)).status())
          .as(field).isEqualTo(200);
    }
    // the largest caps are valid, and their product does not overflow the estimate: it is simply
    // more than the model-token budget can ever hold
    Response largest = post("/v1/chat/completions", JSON,
        "{\"model\":\"gpt-4o-mini\",\"max_tokens\":2147483647,\"n\":2147483647}", bearer(key));
    assertProblem(largest, 429);
    assertThat(JsonPath.<String>read(largest.body(), "$.reason")).isEqualTo("COST_EXCEEDS_CAPACITY");
    assertThat(JsonPath.<Long>read(largest.body(), "$.estimatedModelTokens"))
        .isGreaterThanOrEqualTo(2147483647L * 2147483647L);
  }

  @Test
  void aDeclaredLengthAboveMaxBodyIsA413BeforeTheBodyIsRead() throws Exception {
    String key = "sk-bypass-declared-00011";
    // 10 MB declared: the server answers from the header, whatever of the body arrives
    byte[] body = new byte[10 * 1024 * 1024];
    Arrays.fill(body, (byte) ' ');
    Response r = post("/v1/chat/completions", JSON, body, bearer(key));
    assertProblem(r, 413);
    JSONAssert.assertEquals("""
        {"title":"Content Too Large","status":413,"instance":"/v1/chat/completions",
         "detail":"The request body is larger than the 65536 bytes the rate limiter accepts (ratelimiter.web.max-body)",
         "maxBodyBytes":65536}
        """, r.body(), JSONCompareMode.STRICT);
    assertProblem(post("/v1/upload", "application/octet-stream", new byte[MAX_BODY + 1], bearer(key)), 413);
    assertThat(decisions.of(key)).isZero();
    assertThat(post("/v1/upload", "application/octet-stream", new byte[MAX_BODY], bearer(key)).status())
        .isEqualTo(200);
  }

  @Test
  void aChunkedBodyThatStreamsPastMaxBodyIsA413AndChargesNothing() throws Exception {
    String key = "sk-bypass-chunked-000012";
    assertProblem(postChunked("/v1/chat/completions", JSON, padded(chat("gpt-4o"), MAX_BODY + 1), bearer(key)), 413);
    assertProblem(postChunked("/v1/upload", "application/octet-stream", new byte[MAX_BODY + 1], bearer(key)), 413);
    assertProblem(postChunked("/annotated/completions", JSON, padded(chat("gpt-4o"), MAX_BODY + 1), bearer(key)), 413);
    assertProblem(postChunked("/annotated/upload", "application/octet-stream", new byte[MAX_BODY + 1], bearer(key)), 413);
    assertThat(decisions.of(key)).isZero();
    // a path the limiter does not charge is not its business: a large upload streams through
    Response free = postChunked("/free/upload", "application/octet-stream", new byte[4 * MAX_BODY], bearer(key));
    assertThat(free.status()).isEqualTo(200);
    assertThat(JsonPath.<Integer>read(free.body(), "$.bytes")).isEqualTo(4 * MAX_BODY);
    // a chunked body within the limits is read for its model like any other
    Response ok = postChunked("/v1/chat/completions?model=gpt-4o-mini", JSON, padded(chat("gpt-4o"), 10_000), bearer(key));
    assertThat(ok.status()).isEqualTo(200);
    assertThat(windowUsed(key, "gpt-4o")).isEqualTo(1);
    assertThat(postChunked("/v1/upload", "application/octet-stream", new byte[MAX_BODY], bearer(key)).status())
        .isEqualTo(200);
  }

  @Test
  void aJsonBodyTooLargeToReadItsModelIsA413WhereTheRouteReadsTheModelFromTheBody() throws Exception {
    String key = "sk-bypass-peek-00000013";
    byte[] body = padded(chat("gpt-4o"), 20 * 1024); // above max-body-peek (16KB), within max-body
    Response r = post("/v1/chat/completions?model=gpt-4o-mini", JSON, body, bearer(key));
    assertProblem(r, 413);
    assertThat(JsonPath.<String>read(r.body(), "$.detail")).contains("ratelimiter.web.max-body-peek");
    assertProblem(postChunked("/v1/chat/completions?model=gpt-4o-mini", JSON, body, bearer(key)), 413);
    assertThat(decisions.of(key)).isZero();
    // a route that takes its model from the query does not need to read the body
    assertThat(post("/v1/query/completions?model=gpt-4o-mini", JSON, body, bearer(key)).status()).isEqualTo(200);
    assertThat(windowUsed(key, "gpt-4o-mini")).isEqualTo(1);
  }

  @Test
  void anUnchargedBodyStaysReadableAsynchronously() throws Exception {
    byte[] body = new byte[3 * MAX_BODY];
    Response r = postChunked("/async/count", "application/octet-stream", body, bearer("sk-async-0000000000014"));
    assertThat(r.status()).isEqualTo(200);
    assertThat(r.body()).isEqualTo(Integer.toString(body.length));
  }

  /** The JSON object padded with spaces before its closing brace to {@code size} bytes. */
  private static byte[] padded(String json, int size) {
    String open = json.substring(0, json.length() - 1);
    return (open + " ".repeat(size - json.length()) + "}").getBytes(StandardCharsets.UTF_8);
  }

  /** The store's administration, which every store under test here offers. */
  private static StoreAdministration admin(RateLimitStore store) {
    return store.administration().orElseThrow();
  }
}

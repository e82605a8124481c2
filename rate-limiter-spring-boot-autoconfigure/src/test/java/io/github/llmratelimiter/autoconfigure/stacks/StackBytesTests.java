package io.github.llmratelimiter.autoconfigure.stacks;

import static io.github.llmratelimiter.autoconfigure.RawHttp.header;
import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.autoconfigure.RawHttp.Header;
import io.github.llmratelimiter.autoconfigure.RawHttp.Response;
import io.github.llmratelimiter.autoconfigure.RawHttp;
import io.github.llmratelimiter.autoconfigure.tokens.TokenGateway;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.springframework.boot.WebApplicationType;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The same requests, sent over plain sockets to the scenario application on Spring MVC (Tomcat) and
 * on WebFlux (Netty), get the same status, the same body, byte for byte, and the same rate-limit
 * headers: allowed calls, 429s of a route and of annotated {@code Mono} and {@code Flux} handlers,
 * 401, 400s and 413s.
 */
class StackBytesTests {

  /**
   * The headers the limiter writes, compared by value; the content type only of the limiter's own
   * responses (a handler's differs between stacks: Spring MVC adds a charset to an event stream).
   */
  private static final List<String> HEADERS = List.of("ratelimit", "ratelimit-policy",
      "x-ratelimit-limit-requests", "x-ratelimit-remaining-requests", "x-ratelimit-reset-requests",
      "x-ratelimit-limit-tokens", "x-ratelimit-remaining-tokens", "x-ratelimit-reset-tokens",
      "retry-after", "retry-after-ms", "www-authenticate");

  private record Call(String requestLine, String body, List<Header> headers) {}

  private static Call call(String requestLine, String body, Header... headers) {
    List<Header> all = new ArrayList<>(List.of(headers));
    if (!body.isEmpty()) {
      all.add(header("Content-Type", "application/json"));
      all.add(header("Content-Length",
          Integer.toString(body.getBytes(StandardCharsets.UTF_8).length)));
    }
    return new Call(requestLine, body, all);
  }

  private static List<Call> calls() {
    Header key = header("Authorization", "Bearer sk-bytes-0123456789");
    List<Call> calls = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      calls.add(call("GET /v1/routed HTTP/1.1", "", key));
    }
    calls.add(call("GET /v1/routed HTTP/1.1", ""));
    calls.add(call("GET /v1/routed HTTP/1.1", "", key, header("X-API-Key", "sk-other-0123456789")));
    for (int i = 0; i < 3; i++) {
      calls.add(call("GET /annotated HTTP/1.1", "", key));
      calls.add(call("GET /annotated/flux HTTP/1.1", "", header("X-API-Key", "sk-flux-0123456789")));
    }
    calls.add(call("GET /cost?tokens=-1 HTTP/1.1", "", key));
    calls.add(call("GET /cost?tokens=11 HTTP/1.1", "", key));
    for (int i = 0; i < 2; i++) {
      calls.add(call("GET /v1/final HTTP/1.1", "", key));
    }
    calls.add(call("POST /v1/chat HTTP/1.1", "{\"model\":42}", key));
    calls.add(call("POST /v1/chat HTTP/1.1", "{\"model\":\"gpt-4o\"}", key));
    calls.add(call("POST /v1/chat HTTP/1.1", "{\"model\":\"gpt-4o\"}", key));
    calls.add(call("POST /v1/chat HTTP/1.1",
        "{\"model\":\"gpt-4o\",\"pad\":\"" + "x".repeat(20_000) + "\"}", key));
    calls.add(call("POST /v1/chat HTTP/1.1",
        "{\"model\":\"gpt-4o\",\"pad\":\"" + "x".repeat(70_000) + "\"}", key));
    calls.add(call("POST /llm/chat?usage=9 HTTP/1.1", TokenGateway.BODY_OF_20, key));
    calls.add(call("POST /llm/chat HTTP/1.1",
        "{\"model\":\"m\",\"messages\":[],\"max_tokens\":-5}", key));
    return calls;
  }

  @Test
  void theSameRequestsGetTheSameBytesOnBothStacks() throws Exception {
    try (ConfigurableApplicationContext servlet = AbstractWebStackScenarioTests.start(WebApplicationType.SERVLET);
        ConfigurableApplicationContext reactive = AbstractWebStackScenarioTests.start(WebApplicationType.REACTIVE)) {
      int statuses429 = 0;
      for (Call c : calls()) {
        Response mvc = send(servlet, c);
        Response flux = send(reactive, c);
        String what = c.requestLine();
        assertThat(flux.status()).as(what).isEqualTo(mvc.status());
        assertThat(flux.body()).as(what).isEqualTo(mvc.body());
        assertThat(limiterHeaders(flux)).as(what).isEqualTo(limiterHeaders(mvc));
        statuses429 += mvc.status() == 429 ? 1 : 0;
      }
      assertThat(statuses429).as("the calls include denies of every kind").isEqualTo(6);
    }
  }

  private static Response send(ConfigurableApplicationContext app, Call c) throws Exception {
    return RawHttp.send(AbstractWebStackScenarioTests.port(app), c.requestLine(), c.headers(),
        c.body().getBytes(StandardCharsets.UTF_8));
  }

  private static Map<String, String> limiterHeaders(Response response) {
    Map<String, String> found = new TreeMap<>();
    if (response.status() >= 400) {
      found.put("content-type", response.headers().get("content-type"));
    }
    for (String name : HEADERS) {
      String value = response.headers().get(name);
      if (value != null) {
        found.put(name, value);
      }
    }
    return found;
  }
}

package io.github.llmratelimiter.autoconfigure.stacks;

import static io.github.llmratelimiter.autoconfigure.RawHttp.header;
import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.autoconfigure.RawHttp;
import io.github.llmratelimiter.autoconfigure.RawHttp.Response;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * A url-encoded form above WebFlux's default form limit (256 KB) and within {@code max-body} (1 MB
 * here) on each stack: the scenario application with a larger {@code max-body}, in a class of its
 * own (closing a second WebFlux application stops the shared Reactor Netty event loops).
 */
class LargeFormStackTests {

  @ParameterizedTest
  @EnumSource(value = WebApplicationType.class, names = {"SERVLET", "REACTIVE"})
  void aUrlEncodedFormAbove256KbWithinMaxBodyReachesTheHandlerAndIsCharged(WebApplicationType stack)
      throws Exception {
    String[] args = Stream.concat(Stream.of("server.port=0"), Stream.concat(Arrays.stream(ScenarioApp.PROPERTIES)
            .filter(p -> !p.startsWith("ratelimiter.web.max-body=")), Stream.of("ratelimiter.web.max-body=1MB")))
        .map(p -> "--" + p).toArray(String[]::new);
    try (ConfigurableApplicationContext app = new SpringApplicationBuilder(ScenarioApp.class).web(stack).run(args)) {
      byte[] form = ("model=gpt-4o&pad=" + "x".repeat(300_000)).getBytes(StandardCharsets.ISO_8859_1);
      Response ok = RawHttp.send(AbstractWebStackScenarioTests.port(app), "POST /v1/form HTTP/1.1",
          List.of(header("X-API-Key", "sk-large-form-0123456789"),
              header("Content-Type", "application/x-www-form-urlencoded"),
              header("Content-Length", Integer.toString(form.length))), form);
      assertThat(ok.status()).isEqualTo(200);
      assertThat(ok.body()).isEqualTo("{\"echo\":\"gpt-4o\"}");
      assertThat(ok.headers().get("x-ratelimit-remaining-requests")).isEqualTo("0");
    }
  }
}

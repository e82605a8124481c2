package io.github.llmratelimiter.autoconfigure;

import static io.github.llmratelimiter.autoconfigure.RawHttp.header;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.core.env.StandardEnvironment;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * A caller's API key in a header line the server rejects stays out of the log: on a real Tomcat,
 * a request whose {@code Authorization} value carries a control character is answered 400 and
 * the key does not appear in the output; an application that asks for Tomcat's {@code INFO} line
 * gets it (its own level wins), which shows what the default keeps out.
 */
@ExtendWith(OutputCaptureExtension.class)
class CredentialSafeLoggingTests {

  private static final String KEY = "sk-live-4f0c2e9b7d1a";

  @Test
  void aRejectedHeaderLineWithAnApiKeyIsNotLogged(CapturedOutput output) throws IOException {
    try (ConfigurableApplicationContext app = start()) {
      assertThat(sendMalformedKey(app).status()).isEqualTo(400);
    }
    assertThat(output.getAll()).doesNotContain(KEY);
  }

  @Test
  void anApplicationsOwnLevelForTheLoggerWins(CapturedOutput output) throws IOException {
    try (ConfigurableApplicationContext app = start(
        "logging.level.org.apache.coyote.http11.Http11Processor=INFO")) {
      assertThat(sendMalformedKey(app).status()).isEqualTo(400);
    }
    assertThat(output.getAll()).contains("Error parsing HTTP request header").contains(KEY);
  }

  @Test
  void runWhenTheEnvironmentIsPreparedShouldAddTheLevelsBelowEveryOtherSource() {
    StandardEnvironment environment = new StandardEnvironment();
    environment.getPropertySources().addLast(new org.springframework.core.env.MapPropertySource(
        "defaults", Map.of("other", "x")));
    CredentialSafeLogging logging = new CredentialSafeLogging();
    logging.postProcessEnvironment(environment, new SpringApplication());
    logging.postProcessEnvironment(environment, new SpringApplication()); // once only

    assertThat(environment.getProperty("logging.level.org.apache.coyote.http11.Http11Processor"))
        .isEqualTo("WARN");
    assertThat(environment.getPropertySources().stream().map(s -> s.getName()).toList())
        .endsWith("defaults", CredentialSafeLogging.SOURCE)
        .containsOnlyOnce(CredentialSafeLogging.SOURCE);
  }

  private static ConfigurableApplicationContext start(String... properties) {
    return new SpringApplicationBuilder(App.class)
        .properties("server.port=0", "server.address=127.0.0.1", "ratelimiter.rpm.limit=100",
            "ratelimiter.web.routes[0].include=/v1/chat/**")
        .properties(properties)
        .run();
  }

  private static RawHttp.Response sendMalformedKey(ConfigurableApplicationContext app)
      throws IOException {
    int port = app.getEnvironment().getRequiredProperty("local.server.port", Integer.class);
    byte[] body = "{\"model\":\"gpt-4o\"}".getBytes(StandardCharsets.UTF_8);
    return RawHttp.send(port, "POST /v1/chat/completions HTTP/1.1", List.of(
        header("Content-Type", "application/json"),
        header("Content-Length", Integer.toString(body.length)),
        header("Authorization", "Bearer " + KEY + "\u0001")), body);
  }

  /** A gateway with one limited route. */
  @SpringBootConfiguration
  @EnableAutoConfiguration
  static class App {

    @RestController
    static class Chat {

      @PostMapping("/v1/chat/completions")
      String complete() {
        return "{}";
      }
    }
  }
}

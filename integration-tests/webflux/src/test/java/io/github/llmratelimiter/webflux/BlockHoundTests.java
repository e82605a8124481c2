package io.github.llmratelimiter.webflux;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.llmratelimiter.autoconfigure.reactive.RateLimiterBlockHoundIntegration;
import java.lang.reflect.Method;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.test.web.reactive.server.WebTestClient;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;
import reactor.blockhound.BlockingOperationError;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * BlockHound is active in this test JVM: a blocking call on a Reactor non-blocking thread and on a
 * Netty event loop (a handler that yields its thread) is caught, fails there, and is recorded; the record is
 * what fails a test in which our own code blocks ({@link NoBlockingCalls}).
 */
class BlockHoundTests {

  @Test
  void aBlockingCallOnAReactorParallelThreadIsCaught() {
    assertThatThrownBy(() -> Mono.fromCallable(() -> {
      Thread.yield();
      return "slept";
    }).subscribeOn(Schedulers.parallel()).block(Duration.ofSeconds(10)))
        .hasRootCauseInstanceOf(BlockingOperationError.class)
        .rootCause().hasMessageContaining("java.lang.Thread.yield");
    assertThat(BlockingCalls.takeAll()).singleElement().asString()
        .contains("java.lang.Thread.yield").contains("parallel-");
  }

  @Test
  void aBlockingCallOnANettyEventLoopFailsTheRequestAndIsRecorded() {
    try (ConfigurableApplicationContext app = new SpringApplicationBuilder(Sleeper.class)
        .run("--server.port=0", "--spring.main.banner-mode=off")) {
      WebTestClient client = WebTestClient.bindToServer()
          .baseUrl("http://localhost:" + app.getEnvironment().getProperty("local.server.port"))
          .build();
      client.get().uri("/sleep").exchange().expectStatus().is5xxServerError();
      assertThat(BlockingCalls.takeAll()).singleElement().asString()
          .contains("java.lang.Thread.yield").contains("reactor-http-");
    }
  }

  @Test
  void everyMethodTheLimiterAllowsAWaitInsideExists() throws Exception {
    // the allowances name methods, some of them compiler-generated: a renamed one would silently
    // stop allowing its wait, so each must be declared where the integration says
    for (List<String> method : RateLimiterBlockHoundIntegration.ALLOWED) {
      Class<?> type = Class.forName(method.get(0));
      assertThat(Arrays.stream(type.getDeclaredMethods()).map(Method::getName))
          .as(method.toString()).contains(method.get(1));
    }
  }

  /** An application whose handler blocks its event loop. */
  @SpringBootConfiguration
  @EnableAutoConfiguration
  static class Sleeper {

    @RestController
    static class Sleeping {
      @GetMapping("/sleep")
      String sleep() throws InterruptedException {
        Thread.yield();
        return "slept";
      }
    }
  }
}

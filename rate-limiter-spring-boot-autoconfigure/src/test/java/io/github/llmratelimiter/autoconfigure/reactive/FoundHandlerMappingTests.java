package io.github.llmratelimiter.autoconfigure.reactive;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.mock.http.server.reactive.MockServerHttpRequest;
import org.springframework.mock.web.server.MockServerWebExchange;
import org.springframework.web.reactive.HandlerMapping;
import reactor.core.publisher.Mono;
import reactor.util.context.Context;

/**
 * The look-up of a request's handler without a server: a mapping that throws instead of signalling,
 * whatever it throws short of a fatal error, fails the look-up as the dispatcher's operators would
 * (the filter then charges nothing), and the mappings after one that has no handler are asked.
 */
class FoundHandlerMappingTests {

  private final MockServerWebExchange exchange =
      MockServerWebExchange.from(MockServerHttpRequest.post("/v1/chat"));

  /** The error a look-up signals; else "no failure" for a handler, {@code null} for none. */
  private static Object failure(Mono<Object> found) {
    return found.map(handler -> (Object) "no failure").onErrorResume(Mono::just).block();
  }

  @Test
  void aMappingThatThrowsAnErrorFailsTheLookUpInsteadOfThrowing() {
    HandlerMapping throwing = e -> {
      throw new AssertionError("a broken mapping");
    };
    assertThat(failure(FoundHandlerMapping.find(List.of(throwing), exchange, Context.empty())))
        .isInstanceOf(AssertionError.class);

    HandlerMapping failing = e -> {
      throw new IllegalStateException("a broken mapping");
    };
    assertThat(failure(FoundHandlerMapping.find(List.of(failing), exchange, Context.empty())))
        .isInstanceOf(IllegalStateException.class);
  }

  @Test
  void theMappingsAfterOneWithoutAHandlerAreAsked() {
    Object handler = new Object();
    HandlerMapping none = e -> Mono.empty();
    HandlerMapping some = e -> Mono.just(handler);
    assertThat(FoundHandlerMapping.find(List.of(none, some), exchange, Context.empty()).block())
        .isSameAs(handler);
    assertThat(FoundHandlerMapping.find(List.of(none), exchange, Context.empty()).block()).isNull();
  }
}

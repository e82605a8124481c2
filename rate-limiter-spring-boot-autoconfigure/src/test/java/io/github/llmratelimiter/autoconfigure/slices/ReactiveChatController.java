package io.github.llmratelimiter.autoconfigure.slices;

import io.github.llmratelimiter.gateway.RateLimited;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;
import reactor.core.publisher.Mono;

/** {@link ChatController} as a WebFlux application writes it. */
@RestController
public class ReactiveChatController {

  /**
   * A limited method: per user, charged when its {@code Mono} is subscribed to.
   *
   * @param user the caller
   * @return a greeting
   */
  @RateLimited(policy = "chat", key = "#user")
  @GetMapping("/reactive/hello")
  public Mono<String> hello(@RequestParam String user) {
    return Mono.just("hello " + user);
  }

  /**
   * A handler that a route limits.
   *
   * @return a completion stand-in
   */
  @GetMapping("/reactive/chat")
  public Mono<String> chat() {
    return Mono.just("chat");
  }
}

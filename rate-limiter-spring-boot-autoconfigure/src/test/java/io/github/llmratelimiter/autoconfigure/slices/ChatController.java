package io.github.llmratelimiter.autoconfigure.slices;

import io.github.llmratelimiter.gateway.RateLimited;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/**
 * A user's Spring MVC controller: a method limited by {@code @RateLimited} with a key expression,
 * and a handler that the tests' route limits with a per-route key expression.
 */
@RestController
public class ChatController {

  /**
   * A limited method: per user.
   *
   * @param user the caller
   * @return a greeting
   */
  @RateLimited(policy = "chat", key = "#user")
  @GetMapping("/v1/hello")
  public String hello(@RequestParam String user) {
    return "hello " + user;
  }

  /**
   * A handler that a route limits.
   *
   * @return a completion stand-in
   */
  @GetMapping("/v1/chat")
  public String chat() {
    return "chat";
  }
}

package io.github.llmratelimiter.gateway.scg;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

/**
 * A Spring Cloud Gateway Server MVC application with no code of its own: its routes (proxy
 * {@code /v1/**} to an OpenAI-compatible upstream) and its rate limits are properties only, in
 * {@code application.yml}, and the upstream's URI is set by the tests.
 */
@SpringBootApplication
public class ScgMvcGatewayApplication {

  /**
   * Starts the gateway.
   *
   * @param args command-line arguments
   */
  public static void main(String[] args) {
    SpringApplication.run(ScgMvcGatewayApplication.class, args);
  }
}

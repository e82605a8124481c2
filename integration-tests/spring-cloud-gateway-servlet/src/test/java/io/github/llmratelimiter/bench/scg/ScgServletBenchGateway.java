package io.github.llmratelimiter.bench.scg;

import io.github.llmratelimiter.gateway.scg.BenchRoute;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;

/**
 * A Spring Cloud Gateway Server Web MVC application in front of a real OpenAI-compatible
 * provider, for the benchmarks that launch it from this module's test class path: one route
 * proxies {@code POST /v1/chat/completions} to {@code bench.provider.base-url} with {@code
 * Authorization: Bearer <bench.provider.api-key>} in place of the caller's key, and the limiter's
 * servlet filters ({@code ratelimiter.web.routes}, policy {@code chat}) charge each call before
 * the gateway proxies it and read the provider's usage and rate-limit headers from the proxied
 * response. The provider's answers, 429s included, reach the caller as the provider wrote them.
 *
 * <p>The limits, the store and the upstreams are the application arguments. This module's {@code
 * application.yml} (the tests' routes) is not read ({@link BenchRoute}).
 */
@SpringBootConfiguration
@EnableAutoConfiguration
public class ScgServletBenchGateway {

  /** Creates the configuration (Spring does). */
  public ScgServletBenchGateway() {}

  /**
   * Starts the gateway.
   *
   * @param args application arguments: {@code --bench.provider.base-url}, {@code
   *     --bench.provider.api-key}, the store, the limits and the upstreams
   */
  public static void main(String[] args) {
    application().run(args);
  }

  /**
   * Returns the gateway's application, with the properties of {@link BenchRoute}.
   *
   * @return a builder to run with the application arguments
   */
  public static SpringApplicationBuilder application() {
    return new SpringApplicationBuilder(ScgServletBenchGateway.class)
        .properties(BenchRoute.properties("webmvc"));
  }
}

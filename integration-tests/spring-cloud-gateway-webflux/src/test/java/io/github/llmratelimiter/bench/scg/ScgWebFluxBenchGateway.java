package io.github.llmratelimiter.bench.scg;

import io.github.llmratelimiter.gateway.scg.BenchRoute;
import io.github.llmratelimiter.webflux.bench.BenchBlockHound;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.annotation.Import;

/**
 * A Spring Cloud Gateway Server WebFlux application in front of a real OpenAI-compatible
 * provider, for the benchmarks that launch it from this module's test class path, under BlockHound
 * ({@link BenchBlockHound}): one route proxies {@code POST /v1/chat/completions} to {@code
 * bench.provider.base-url} with {@code Authorization: Bearer <bench.provider.api-key>} in place of
 * the caller's key, and the limiter's reactive filter ({@code ratelimiter.web.routes}, policy
 * {@code chat}) charges each call before the gateway proxies it and reads the provider's usage and
 * rate-limit headers from the proxied response. The provider's answers, 429s included, reach the
 * caller as the provider wrote them.
 *
 * <p>The limits, the store and the upstreams are the application arguments. This module's {@code
 * application.yml} (the tests' routes) is not read ({@link BenchRoute}).
 */
@SpringBootConfiguration
@EnableAutoConfiguration
@Import(BenchBlockHound.class)
public class ScgWebFluxBenchGateway {

  /** Creates the configuration (Spring does). */
  public ScgWebFluxBenchGateway() {}

  /**
   * Installs BlockHound, then starts the gateway.
   *
   * @param args application arguments: {@code --bench.provider.base-url}, {@code
   *     --bench.provider.api-key}, the store, the limits and the upstreams
   */
  public static void main(String[] args) {
    BenchBlockHound.install();
    application().run(args);
  }

  /**
   * Returns the gateway's application, with the properties of {@link BenchRoute}.
   *
   * @return a builder to run with the application arguments
   */
  public static SpringApplicationBuilder application() {
    return new SpringApplicationBuilder(ScgWebFluxBenchGateway.class)
        .properties(BenchRoute.properties("webflux"))
        .properties("spring.cloud.gateway.server.webflux.httpclient.response-timeout="
            + "${bench.provider.timeout:30s}");
  }
}

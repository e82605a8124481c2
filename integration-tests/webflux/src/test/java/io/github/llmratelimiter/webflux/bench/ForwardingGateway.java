package io.github.llmratelimiter.webflux.bench;

import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Locale;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.annotation.Import;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.reactive.function.client.WebClient;
import reactor.core.publisher.Mono;

/**
 * A reactive gateway in front of a real OpenAI-compatible provider, for the benchmarks that
 * launch it from this module's test class path: WebFlux on Netty under BlockHound ({@link
 * BenchBlockHound}), {@code POST /v1/chat/completions} forwarded as it came with {@link
 * WebClient} to {@code <bench.provider.base-url>/v1/chat/completions} with {@code Authorization:
 * Bearer <bench.provider.api-key>} in place of the caller's key, and the provider's status, body
 * and headers {@code content-type}, {@code x-ratelimit-*}, {@code retry-after} and {@code
 * retry-after-ms} passed back. The limiter's reactive filter ({@code ratelimiter.web.routes})
 * charges each call before it goes and reads the provider's usage and rate-limit headers from the
 * response: a provider's 429 reaches the caller as the provider wrote it, and closes the call's
 * upstream until its retry time. A provider that does not answer within {@code
 * bench.provider.timeout} (default 30 s), or cannot be reached, gives a 502.
 *
 * <p>The limits, the store and the upstreams are the application arguments; only the route
 * {@code /v1/chat/**} to the policy {@code chat} is set here.
 */
@SpringBootConfiguration
@EnableAutoConfiguration
@Import(BenchBlockHound.class)
public class ForwardingGateway {

  /** Creates the configuration (Spring does). */
  public ForwardingGateway() {}

  /** The forwarding handler. */
  @RestController
  static class Forward {

    private final WebClient provider;
    private final String authorization;
    private final Duration timeout;

    Forward(@Value("${bench.provider.base-url}") URI base,
        @Value("${bench.provider.api-key}") String apiKey,
        @Value("${bench.provider.timeout:30s}") Duration timeout) {
      if (apiKey.isBlank()) {
        throw new IllegalArgumentException("bench.provider.api-key must not be blank");
      }
      this.provider = WebClient.builder()
          .baseUrl(base.toString().replaceFirst("/+$", "")).build();
      this.authorization = "Bearer " + apiKey;
      this.timeout = timeout;
    }

    /** Forwards a chat call and passes the provider's answer back. */
    @PostMapping("/v1/chat/completions")
    Mono<ResponseEntity<byte[]>> complete(@RequestBody byte[] body) {
      return provider.post().uri("/v1/chat/completions")
          .header(HttpHeaders.AUTHORIZATION, authorization)
          .contentType(MediaType.APPLICATION_JSON)
          .accept(MediaType.APPLICATION_JSON)
          .bodyValue(body)
          .exchangeToMono(response -> response.toEntity(byte[].class))
          .timeout(timeout)
          .map(ForwardingGateway::relayed)
          .onErrorResume(e -> Mono.just(ResponseEntity.status(HttpStatus.BAD_GATEWAY)
              .contentType(MediaType.APPLICATION_JSON)
              .body(("{\"error\":{\"message\":\"the provider failed to answer\",\"type\":"
                  + "\"api_error\",\"code\":\"upstream_error\"}}").getBytes(StandardCharsets.UTF_8))));
    }
  }

  /** The provider's answer with only the headers a client of the gateway is meant to see. */
  static ResponseEntity<byte[]> relayed(ResponseEntity<byte[]> answer) {
    HttpHeaders headers = new HttpHeaders();
    answer.getHeaders().forEach((name, values) -> {
      String n = name.toLowerCase(Locale.ROOT);
      if (n.equals("content-type") || n.startsWith("x-ratelimit-") || n.equals("retry-after")
          || n.equals("retry-after-ms")) {
        headers.addAll(name, values);
      }
    });
    return ResponseEntity.status(answer.getStatusCode()).headers(headers)
        .body(answer.getBody() == null ? new byte[0] : answer.getBody());
  }

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
   * Returns the gateway's application, with the route {@code /v1/chat/**} to the policy {@code
   * chat}.
   *
   * @return a builder to run with the application arguments
   */
  static SpringApplicationBuilder application() {
    return new SpringApplicationBuilder(ForwardingGateway.class)
        .properties("ratelimiter.web.routes[0].include=/v1/chat/**",
            "ratelimiter.web.routes[0].policy=chat");
  }
}

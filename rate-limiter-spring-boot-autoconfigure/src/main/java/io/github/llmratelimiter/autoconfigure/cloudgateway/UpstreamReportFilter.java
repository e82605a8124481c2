package io.github.llmratelimiter.autoconfigure.cloudgateway;

import io.github.llmratelimiter.gateway.RateLimitGateway;
import io.github.llmratelimiter.gateway.RateLimitOutcome;
import java.util.concurrent.atomic.AtomicReference;
import org.springframework.cloud.gateway.filter.GatewayFilterChain;
import org.springframework.cloud.gateway.filter.GlobalFilter;
import org.springframework.core.Ordered;
import org.springframework.http.HttpStatusCode;
import org.springframework.web.server.ServerWebExchange;
import reactor.core.publisher.Mono;

/**
 * Reports the proxied response of every call that {@link LlmRateLimiter} admitted to an upstream
 * ({@code ratelimiter.upstreams}) to that upstream, once the response is written, without
 * blocking ({@link RateLimitGateway#reportAsync(RateLimitOutcome, int, java.util.function.Function)}):
 * its status and the provider's rate-limit headers the gateway passed on (OpenAI's and Azure
 * OpenAI's {@code x-ratelimit-*} of requests and tokens, {@code retry-after}, {@code
 * retry-after-ms}; see {@link io.github.llmratelimiter.gateway.ProviderHeaders}). A 429 from the
 * provider closes the upstream until its retry time. The limiter's own headers on the response are
 * not read as the provider's.
 *
 * <p>It runs first in the filter chain and hands the limiter, through the Reactor context, the
 * place where it leaves an admitted outcome; a call the limiter did not admit, or that went to no
 * upstream, reports nothing.
 */
final class UpstreamReportFilter implements GlobalFilter, Ordered {

  /** The Reactor context key under which the limiter finds where to leave its outcome. */
  static final String OUTCOME_KEY = UpstreamReportFilter.class.getName() + ".outcome";

  private final RateLimitGateway gateway;

  UpstreamReportFilter(RateLimitGateway gateway) {
    this.gateway = gateway;
  }

  @Override
  public Mono<Void> filter(ServerWebExchange exchange, GatewayFilterChain chain) {
    if (gateway.enforcer().upstreamRoutes().isEmpty()) {
      return chain.filter(exchange);
    }
    AtomicReference<RateLimitOutcome> admitted = new AtomicReference<>();
    return chain.filter(exchange)
        .doFinally(signal -> {
          RateLimitOutcome outcome = admitted.getAndSet(null);
          HttpStatusCode status = exchange.getResponse().getStatusCode();
          if (outcome != null && status != null) {
            gateway.reportAsync(outcome, status.value(), exchange.getResponse().getHeaders()::get);
          }
        })
        .contextWrite(context -> context.put(OUTCOME_KEY, admitted));
  }

  @Override
  public int getOrder() {
    return Ordered.HIGHEST_PRECEDENCE;
  }
}

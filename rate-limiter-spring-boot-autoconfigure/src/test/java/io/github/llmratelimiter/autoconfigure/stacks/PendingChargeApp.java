package io.github.llmratelimiter.autoconfigure.stacks;

import io.github.llmratelimiter.gateway.RateLimitObserver;
import io.github.llmratelimiter.gateway.RateLimitPlanResolver;
import io.github.llmratelimiter.gateway.RateLimitPolicies;
import io.github.llmratelimiter.gateway.RateLimited;
import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServletRequest;
import java.io.IOException;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.Ordered;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.WebFilter;
import org.springframework.web.server.WebFilterChain;
import reactor.core.publisher.Mono;
import reactor.core.publisher.SignalType;

/**
 * An application whose charges stay pending until a gate opens: the plan of an API key that starts
 * with {@value #GATED} is answered only when its gate opens ({@link Gates}). On Spring MVC the gate
 * opens once the request's thread has left the filter chain (the charge then completes after every
 * filter's own code ran); on WebFlux, when the exchange is cancelled (its client went away), or when
 * a test opens it. The plan of a key that starts with {@value #FAILING} fails to be read, with a
 * message that names the key; an observer fails on the decisions of a key that starts with {@value
 * #THROWING}.
 */
@SpringBootConfiguration
@EnableAutoConfiguration
public class PendingChargeApp {

  /** The prefix of the API keys whose plan waits for their gate. */
  public static final String GATED = "gated-";

  /** The prefix of the API keys whose plan the resolver fails to read. */
  public static final String FAILING = "failing-";

  /** The prefix of the API keys whose decisions an observer fails on. */
  public static final String THROWING = "throwing-";

  /** The properties: a policy of one call in flight, on a route and on an annotated handler. */
  public static final String[] PROPERTIES = {
      "ratelimiter.policies.held.rpm.limit=100000",
      "ratelimiter.policies.held.concurrency.limit=1",
      "ratelimiter.web.routes[0].include=/held/routed",
      "ratelimiter.web.routes[0].policy=held"};

  @Bean
  Gates gates() {
    return new Gates();
  }

  @Bean
  RateLimitPlanResolver gatedPlans(RateLimitPolicies policies, Gates gates) {
    String plan = policies.defaultPlan();
    return new RateLimitPlanResolver() {
      @Override
      public String plan(String apiKey) {
        return plan;
      }

      @Override
      public CompletionStage<String> planAsync(String apiKey) {
        if (apiKey.startsWith(FAILING)) { // as an application's lookup fails, naming the key
          return CompletableFuture.failedFuture(new IllegalStateException("no tenant for key " + apiKey));
        }
        return apiKey.startsWith(GATED) ? gates.asked(apiKey).thenApply(open -> plan)
            : CompletableFuture.completedFuture(plan);
      }
    };
  }

  /** An observer that fails on the decisions of the keys that start with {@value #THROWING}. */
  @Bean
  RateLimitObserver throwingObserver() {
    return (outcome, nanos) -> {
      if (outcome.key().apiKey().startsWith(THROWING)) {
        throw new IllegalStateException("the observer failed");
      }
    };
  }

  @Bean
  WebFilter gateOnCancel(Gates gates) {
    return new GateOnCancel(gates);
  }

  /** The gates of the API keys whose plan waits, each opened at most once. */
  public static final class Gates {

    private final Map<String, CompletableFuture<Boolean>> gates = new ConcurrentHashMap<>();
    private final Map<String, Boolean> asked = new ConcurrentHashMap<>();

    private CompletableFuture<Boolean> gate(String apiKey) {
      return gates.computeIfAbsent(apiKey, k -> new CompletableFuture<>());
    }

    CompletableFuture<Boolean> asked(String apiKey) {
      asked.put(apiKey, true);
      return gate(apiKey);
    }

    /**
     * Returns whether the plan of a key was asked for: its charge is pending at its gate.
     *
     * @param apiKey the key
     * @return whether it was asked for
     */
    public boolean wasAsked(String apiKey) {
      return asked.containsKey(apiKey);
    }

    /**
     * Opens a key's gate: its pending charge goes on, on the calling thread.
     *
     * @param apiKey the key, or {@code null} (nothing opens)
     */
    public void open(@Nullable String apiKey) {
      if (apiKey != null) {
        gate(apiKey).complete(true);
      }
    }

    static @Nullable String bearer(@Nullable String authorization) {
      return authorization == null || !authorization.startsWith("Bearer ") ? null
          : authorization.substring(7);
    }
  }

  /** On WebFlux: opens a request's gate once its exchange was cancelled. */
  static final class GateOnCancel implements WebFilter, Ordered {

    private final Gates gates;

    GateOnCancel(Gates gates) {
      this.gates = gates;
    }

    @Override
    public Mono<Void> filter(ServerWebExchange exchange, WebFilterChain chain) {
      String key = Gates.bearer(exchange.getRequest().getHeaders().getFirst("Authorization"));
      // once the cancel went through every filter: the charge then completes after all of them
      return chain.filter(exchange).doFinally(signal -> {
        if (signal == SignalType.CANCEL) {
          gates.open(key);
        }
      });
    }

    @Override
    public int getOrder() {
      return Ordered.HIGHEST_PRECEDENCE;
    }
  }

  /** On Spring MVC: opens a request's gate once its thread has left every filter. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "jakarta.servlet.Filter")
  static class ServletGate {

    @Bean
    Filter gateOnReturn(Gates gates) {
      return new GateOnReturn(gates);
    }
  }

  /** The servlet filter that runs around every other: opens the gate once the chain returned. */
  static final class GateOnReturn implements Filter, Ordered {

    private final Gates gates;

    GateOnReturn(Gates gates) {
      this.gates = gates;
    }

    @Override
    public void doFilter(ServletRequest request, ServletResponse response, FilterChain chain)
        throws IOException, ServletException {
      try {
        chain.doFilter(request, response);
      } finally {
        gates.open(Gates.bearer(((HttpServletRequest) request).getHeader("Authorization")));
      }
    }

    @Override
    public int getOrder() {
      return Ordered.HIGHEST_PRECEDENCE;
    }
  }

  /** The handlers: one a route charges, one its annotation charges. */
  @RestController
  public static class Handlers {

    @GetMapping("/held/routed")
    public String routed() {
      return "routed";
    }

    @RateLimited(policy = "held")
    @GetMapping("/held/annotated")
    public Mono<String> annotated() {
      return Mono.just("annotated");
    }
  }
}

package io.github.llmratelimiter.gateway.scg;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.llmratelimiter.autoconfigure.InvalidRateLimitPropertyException;
import io.github.llmratelimiter.gateway.scg.reactive.ScgReactiveGatewayApplication;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

/**
 * A route whose {@code RequestRateLimiter} filter gives {@code llmRateLimiter} an invalid argument
 * (an unknown policy, or one that limits calls in flight, whose slots the filter could never give
 * back), or none while the default policy limits calls in flight, fails the gateway's start-up, with
 * a message that names the argument (rather than a route that fails every call).
 */
class RequestRateLimiterArgumentsTests {

  private static final String ROUTE = "--spring.cloud.gateway.server.webflux.routes[0].";

  @Test
  @ExtendWith(OutputCaptureExtension.class)
  void unknownPolicyFailsTheStartUpNamingTheArgument(CapturedOutput output) {
    assertThatThrownBy(() -> new SpringApplicationBuilder(ScgReactiveGatewayApplication.class,
        OwnNettyResources.class).run(
        "--server.port=0",
        ROUTE + "id=bad-policy",
        ROUTE + "uri=http://127.0.0.1:9",
        ROUTE + "predicates[0]=Path=/v1/**",
        ROUTE + "filters[0].name=RequestRateLimiter",
        ROUTE + "filters[0].args[rate-limiter]=#{@llmRateLimiter}",
        ROUTE + "filters[0].args[key-resolver]=#{@llmApiKeyResolver}",
        ROUTE + "filters[0].args[llm-rate-limiter.policy]=nope")
        .close())
        .isInstanceOfSatisfying(InvalidRateLimitPropertyException.class, e -> assertThat(e.property())
            .isEqualTo("spring.cloud.gateway.server.webflux.routes[id=bad-policy]"
                + ".filters[RequestRateLimiter].args.llm-rate-limiter.policy"))
        .hasMessageContaining("'nope'").hasMessageContaining("[default, chat]");
    assertThat(output.getAll()).contains("Invalid rate-limiter configuration: property "
        + "'spring.cloud.gateway.server.webflux.routes[id=bad-policy].filters[RequestRateLimiter]"
        + ".args.llm-rate-limiter.policy'");
  }

  @Test
  void aPolicyLimitingCallsInFlightFailsTheStartUpNamingTheArgument() {
    // the filter never sees a call end: it could not give the call's slot back
    assertThatThrownBy(() -> new SpringApplicationBuilder(ScgReactiveGatewayApplication.class,
        OwnNettyResources.class).run(
        "--server.port=0",
        "--ratelimiter.policies.chat.concurrency.limit=2",
        ROUTE + "id=slots",
        ROUTE + "uri=http://127.0.0.1:9",
        ROUTE + "predicates[0]=Path=/v1/**",
        ROUTE + "filters[0].name=RequestRateLimiter",
        ROUTE + "filters[0].args[rate-limiter]=#{@llmRateLimiter}",
        ROUTE + "filters[0].args[key-resolver]=#{@llmApiKeyResolver}",
        ROUTE + "filters[0].args[llm-rate-limiter.policy]=chat")
        .close())
        .isInstanceOfSatisfying(InvalidRateLimitPropertyException.class, e -> assertThat(e.property())
            .isEqualTo("spring.cloud.gateway.server.webflux.routes[id=slots]"
                + ".filters[RequestRateLimiter].args.llm-rate-limiter.policy"))
        .hasMessageContaining("'chat'").hasMessageContaining("concurrency.limit");
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"named", "the filter's default", "default filter"})
  void aFilterWithoutArgumentsWhoseDefaultPolicyLimitsCallsInFlightFailsTheStartUp(String how) {
    // no llm-rate-limiter arguments: the calls go to the default policy, whose slots the filter
    // could never give back either
    String filters = how.equals("default filter")
        ? "--spring.cloud.gateway.server.webflux.default-filters[0]." : ROUTE + "filters[0].";
    List<String> args = new ArrayList<>(List.of(
        "--server.port=0",
        "--ratelimiter.default-policy=chat",
        "--ratelimiter.policies.chat.concurrency.limit=2",
        ROUTE + "id=defaults",
        ROUTE + "uri=http://127.0.0.1:9",
        ROUTE + "predicates[0]=Path=/v1/**",
        filters + "name=RequestRateLimiter",
        filters + "args[key-resolver]=#{@llmApiKeyResolver}"));
    if (how.equals("named")) {
      args.add(filters + "args[rate-limiter]=#{@llmRateLimiter}");
    } else {
      // without the gateway's RedisRateLimiter, the starter's is the filter's default limiter
      args.add("--spring.autoconfigure.exclude="
          + "org.springframework.cloud.gateway.config.GatewayRedisAutoConfiguration");
    }
    String id = how.equals("default filter") ? "defaultFilters" : "defaults";
    assertThatThrownBy(() -> new SpringApplicationBuilder(ScgReactiveGatewayApplication.class,
        OwnNettyResources.class).run(args.toArray(String[]::new)).close())
        .isInstanceOfSatisfying(InvalidRateLimitPropertyException.class, e -> assertThat(e.property())
            .isEqualTo("spring.cloud.gateway.server.webflux.routes[id=" + id + "]"
                + ".filters[RequestRateLimiter].args.llm-rate-limiter.policy"))
        .hasMessageContaining("'chat'").hasMessageContaining("concurrency.limit")
        .hasMessageContaining("default policy");
  }

  @Test
  void aFilterWithoutArgumentsThatUsesAnotherRateLimiterIsNotTheStartersToCheck() {
    // the gateway's RedisRateLimiter is the filter's default here: the starter's is reached by name
    new SpringApplicationBuilder(ScgReactiveGatewayApplication.class, OwnNettyResources.class).run(
        "--server.port=0",
        "--ratelimiter.default-policy=chat",
        "--ratelimiter.policies.chat.concurrency.limit=2",
        ROUTE + "id=theirs",
        ROUTE + "uri=http://127.0.0.1:9",
        ROUTE + "predicates[0]=Path=/v1/**",
        ROUTE + "filters[0].name=RequestRateLimiter",
        ROUTE + "filters[0].args[key-resolver]=#{@llmApiKeyResolver}",
        ROUTE + "filters[0].args[redis-rate-limiter.replenishRate]=1").close();
  }
}

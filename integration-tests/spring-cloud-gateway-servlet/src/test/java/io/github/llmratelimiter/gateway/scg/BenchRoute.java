package io.github.llmratelimiter.gateway.scg;

/**
 * The properties of the benchmark gateways of Spring Cloud Gateway (both servers' modules use it):
 * a route that proxies {@code POST /v1/chat/completions} to {@code bench.provider.base-url} with
 * {@code Authorization: Bearer <bench.provider.api-key>} in place of the caller's key, the
 * limiter's route {@code /v1/chat/**} to the policy {@code chat}, and a configuration name of
 * which no file exists, so that the module's {@code application.yml} (the tests' routes and
 * limits) is not read.
 */
public final class BenchRoute {

  /** The name of the configuration files read ({@code spring.config.name}); none exist. */
  public static final String CONFIG_NAME = "scg-bench-gateway";

  private BenchRoute() {}

  /**
   * Returns the properties for one server.
   *
   * @param server {@code webflux} or {@code webmvc}, as in {@code spring.cloud.gateway.server.*}
   * @return {@code name=value} pairs
   */
  public static String[] properties(String server) {
    String route = "spring.cloud.gateway.server." + server + ".routes[0].";
    return new String[] {"spring.config.name=" + CONFIG_NAME,
        route + "id=provider",
        route + "uri=${bench.provider.base-url}",
        route + "predicates[0]=Path=/v1/chat/completions",
        route + "filters[0]=SetRequestHeader=Authorization, Bearer ${bench.provider.api-key}",
        "ratelimiter.web.routes[0].include=/v1/chat/**",
        "ratelimiter.web.routes[0].policy=chat"};
  }
}

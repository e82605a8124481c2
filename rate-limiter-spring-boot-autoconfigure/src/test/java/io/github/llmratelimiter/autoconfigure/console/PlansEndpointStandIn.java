package io.github.llmratelimiter.autoconfigure.console;

import io.github.llmratelimiter.autoconfigure.endpoint.RateLimiterEndpoint;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.actuate.endpoint.annotation.DeleteOperation;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.boot.actuate.endpoint.annotation.Selector;
import org.springframework.boot.actuate.endpoint.annotation.WriteOperation;
import tools.jackson.databind.json.JsonMapper;

/**
 * The endpoint {@code ratelimiter} as it reads once plans are assigned through it: the real
 * endpoint's output with a {@code plan} for each key (null until assigned), and {@code POST
 * /actuator/ratelimiter/{key}} with {@code {"plan":"pro"}} ({@code {"plan":null}} clears it), the
 * contract the console implements. It records every assignment it receives, by key id.
 */
@Endpoint(id = "ratelimiter")
public class PlansEndpointStandIn {

  private static final JsonMapper JSON = JsonMapper.builder().build();

  private final RateLimiterEndpoint real;
  private final Map<String, String> plans = new ConcurrentHashMap<>();
  private final List<String> assignments = new ArrayList<>();

  /**
   * Wraps the real endpoint.
   *
   * @param real the endpoint
   */
  public PlansEndpointStandIn(RateLimiterEndpoint real) {
    this.real = real;
  }

  /**
   * Returns the real report, each key with its plan.
   *
   * @param top how many keys per budget
   * @return the report
   */
  @ReadOperation
  @SuppressWarnings("unchecked")
  public Map<String, Object> report(@Nullable Integer top) {
    Map<String, Object> report = JSON.convertValue(real.report(top), Map.class);
    report.put("plans", Map.of("free", Map.of(), "pro", Map.of()));
    for (Map<String, Object> budget : (List<Map<String, Object>>) report.get("budgets")) {
      ((List<Map<String, Object>>) budget.get("top")).forEach(this::withPlan);
    }
    return report;
  }

  /**
   * Returns the real key report, with the key's plan.
   *
   * @param key the key or its id
   * @param model a model, or null
   * @return the report, or null
   */
  @ReadOperation
  @SuppressWarnings("unchecked")
  public @Nullable Map<String, Object> key(@Selector String key, @Nullable String model) {
    RateLimiterEndpoint.KeyReport report = real.key(key, model);
    if (report == null) {
      return null;
    }
    Map<String, Object> out = withPlan(JSON.convertValue(report, Map.class));
    ((List<Map<String, Object>>) out.get("budgets")).forEach(this::withPlan);
    return out;
  }

  /**
   * Resets the key, as the real endpoint does.
   *
   * @param key the key or its id
   * @param model a model, or null
   * @return the reset report
   */
  @DeleteOperation
  public RateLimiterEndpoint.ResetReport reset(@Selector String key, @Nullable String model) {
    return real.reset(key, model);
  }

  /**
   * Assigns a plan to a key by its id, or clears it.
   *
   * @param key the key's id
   * @param plan the plan, or null to clear it
   * @return the key's id and plan
   */
  @WriteOperation
  public Map<String, Object> assign(@Selector String key, @Nullable String plan) {
    synchronized (assignments) {
      assignments.add(key + "=" + plan);
    }
    if (plan == null) {
      plans.remove(key);
    } else {
      plans.put(key, plan);
    }
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("id", key);
    out.put("plan", plan);
    return out;
  }

  /**
   * Returns the assignments received, as {@code id=plan}.
   *
   * @return the assignments, oldest first
   */
  public List<String> assignments() {
    synchronized (assignments) {
      return List.copyOf(assignments);
    }
  }

  private Map<String, Object> withPlan(Map<String, Object> state) {
    Object id = state.get("id");
    state.put("plan", id == null ? null : plans.get(id));
    return state;
  }
}

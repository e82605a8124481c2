package io.github.llmratelimiter.sample;

import io.github.llmratelimiter.gateway.RateLimited;
import java.util.List;
import java.util.Map;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;

/** {@code GET /v1/models}, limited by its annotation (no route covers it). */
@RestController
class ModelsController {

  private static final long CREATED = 1_700_000_000L;

  private final GatewayProperties gateway;

  ModelsController(GatewayProperties gateway) {
    this.gateway = gateway;
  }

  @RateLimited(policy = "models")
  @GetMapping("/v1/models")
  Map<String, Object> models() {
    List<Map<String, Object>> data = gateway.models().stream()
        .map(id -> Map.<String, Object>of("id", id, "object", "model", "created", CREATED,
            "owned_by", "sample-gateway"))
        .toList();
    return Map.of("object", "list", "data", data);
  }
}

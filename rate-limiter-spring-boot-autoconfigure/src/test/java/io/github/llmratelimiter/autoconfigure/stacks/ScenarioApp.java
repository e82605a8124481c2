package io.github.llmratelimiter.autoconfigure.stacks;

import io.github.llmratelimiter.autoconfigure.ManualTicker;
import io.github.llmratelimiter.autoconfigure.Reconciliations;
import io.github.llmratelimiter.gateway.RateLimited;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.CrossOrigin;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.ModelAttribute;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RequestMethod;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * A small LLM gateway that runs unchanged on either web stack (Spring MVC on Tomcat, WebFlux on
 * Netty): routed handlers, handlers annotated with {@code @RateLimited} that return {@code Mono} and
 * {@code Flux}, an OpenAI-shaped completion and stream whose usage and failures the test picks in
 * query parameters; routes keyed on the client address, the principal and expressions ({@link
 * KeyFixtures} stands in for authentication on each stack). Time stands still (a manual ticker);
 * every reconciliation is queued for the tests to await. Nothing in its handlers names a servlet or
 * a reactive server type.
 */
@SpringBootConfiguration
@EnableAutoConfiguration
@Import(KeyFixtures.class)
public class ScenarioApp {

  /** The properties of the scenarios: the policies, body limits and routes. */
  public static final String[] PROPERTIES = {
      "ratelimiter.policies.routed.rpm.limit=3",
      "ratelimiter.policies.annotated.rpm.limit=2",
      "ratelimiter.policies.annotated.burst.capacity=10",
      "ratelimiter.policies.annotated.burst.refill-per-second=10",
      "ratelimiter.policies.bursty.rpm.limit=100",
      "ratelimiter.policies.bursty.burst.capacity=1",
      "ratelimiter.policies.bursty.burst.refill-per-second=4",
      "ratelimiter.policies.retry.rpm.limit=5",
      "ratelimiter.policies.retry.burst.capacity=4",
      "ratelimiter.policies.retry.burst.refill-per-second=0.1",
      "ratelimiter.policies.final.burst.capacity=1",
      "ratelimiter.policies.final.burst.refill-per-second=0",
      "ratelimiter.policies.per-key.rpm.limit=3",
      "ratelimiter.policies.chat.parent=per-key",
      "ratelimiter.policies.chat.scope=api-key-and-model",
      "ratelimiter.policies.chat.rpm.limit=10",
      "ratelimiter.policies.chat.models.gpt-4o.rpm.limit=1",
      "ratelimiter.policies.llm.rpm.limit=100000",
      "ratelimiter.policies.llm.tpm.limit=100",
      "ratelimiter.web.max-body=64KB",
      "ratelimiter.web.max-body-peek=16KB",
      "ratelimiter.web.routes[0].include=/v1/chat,/v1/form",
      "ratelimiter.web.routes[0].policy=chat",
      "ratelimiter.web.routes[1].include=/v1/query/**",
      "ratelimiter.web.routes[1].policy=chat",
      "ratelimiter.web.routes[1].model-source=query",
      "ratelimiter.web.routes[2].include=/v1/upload",
      "ratelimiter.web.routes[2].policy=chat",
      "ratelimiter.web.routes[2].model-source=none",
      "ratelimiter.web.routes[3].include=/v1/bursty",
      "ratelimiter.web.routes[3].policy=bursty",
      "ratelimiter.web.routes[4].include=/v1/final",
      "ratelimiter.web.routes[4].policy=final",
      "ratelimiter.web.routes[5].include=/llm/**",
      "ratelimiter.web.routes[5].policy=llm",
      "ratelimiter.web.routes[6].include=/deferred/**",
      "ratelimiter.web.routes[6].policy=routed",
      "ratelimiter.web.routes[7].include=/v1/retry",
      "ratelimiter.web.routes[7].policy=retry",
      "ratelimiter.web.routes[8].include=/v1/**",
      "ratelimiter.web.routes[8].exclude=/v1/free",
      "ratelimiter.web.routes[8].policy=routed",
      "ratelimiter.policies.keyed.rpm.limit=2",
      "ratelimiter.web.routes[9].include=/keyed/ip",
      "ratelimiter.web.routes[9].policy=keyed",
      "ratelimiter.web.routes[9].key=client-ip",
      "ratelimiter.web.routes[10].include=/keyed/principal",
      "ratelimiter.web.routes[10].policy=keyed",
      "ratelimiter.web.routes[10].key=principal",
      "ratelimiter.web.routes[11].include=/keyed/tenant",
      "ratelimiter.web.routes[11].methods=post",
      "ratelimiter.web.routes[11].policy=keyed",
      "ratelimiter.web.routes[11].key-expression=header('X-Tenant')",
      "ratelimiter.web.routes[12].include=/keyed/tenant",
      "ratelimiter.web.routes[12].methods=GET",
      "ratelimiter.web.routes[12].policy=routed",
      "ratelimiter.web.routes[13].include=/keyed/bean",
      "ratelimiter.web.routes[13].policy=keyed",
      "ratelimiter.web.routes[13].key-expression=@tenantKeys.of(#request, header('x-tenant'))",
      "ratelimiter.web.routes[14].include=/keyed/broken",
      "ratelimiter.web.routes[14].policy=keyed",
      "ratelimiter.web.routes[14].key-expression=header('X-Tenant').toUpperCase()",
      "ratelimiter.policies.items.rpm.limit=3",
      "ratelimiter.policies.items.burst.capacity=5",
      "ratelimiter.policies.items.burst.refill-per-second=1",
      "ratelimiter.policies.items.concurrency.limit=2",
      "ratelimiter.policies.items.tpm.limit=500",
      "ratelimiter.web.routes[19].include=/items/**",
      "ratelimiter.web.routes[19].policy=items",
      "ratelimiter.policies.slots.rpm.limit=100000",
      "ratelimiter.policies.slots.concurrency.limit=1",
      "ratelimiter.web.routes[15].include=/slots/**",
      "ratelimiter.web.routes[15].policy=slots",
      "ratelimiter.web.routes[16].include=/keyed/annotated/principal",
      "ratelimiter.web.routes[16].policy=keyed",
      "ratelimiter.web.routes[16].key=principal",
      "ratelimiter.web.routes[17].include=/keyed/annotated/tenant",
      "ratelimiter.web.routes[17].policy=keyed",
      "ratelimiter.web.routes[17].key-expression=header('X-Tenant')",
      "ratelimiter.web.routes[18].include=/keyed/throwing",
      "ratelimiter.web.routes[18].policy=keyed",
      "ratelimiter.web.routes[18].key-expression=@tenantKeys.known(header('X-Tenant'))",
      "ratelimiter.plans.pro.policies.routed.rpm.limit=10",
      "management.endpoints.web.exposure.include=ratelimiter"};

  @Bean
  ManualTicker ticker() {
    return new ManualTicker();
  }

  @Bean
  Reconciliations reconciliations() {
    return new Reconciliations();
  }

  @Bean
  StreamGates streamGates() {
    return new StreamGates();
  }

  /** The gates that hold a stream after its first event until the test opens them. */
  public static final class StreamGates {

    private final Map<String, Sinks.Empty<Void>> gates = new ConcurrentHashMap<>();

    Mono<Void> gate(String name) {
      return gates.computeIfAbsent(name, n -> Sinks.empty()).asMono();
    }

    /**
     * Lets the stream held at a gate go on.
     *
     * @param name the gate's name
     */
    public void open(String name) {
      gates.computeIfAbsent(name, n -> Sinks.empty()).tryEmitEmpty();
    }
  }

  /** A form body that names a model. */
  public record ModelForm(String model) {}

  /** The handlers (a member component: registered with the configuration); each works on either stack. */
  @RestController
  public static class Handlers {

    private final StreamGates gates;

    Handlers(StreamGates gates) {
      this.gates = gates;
    }

    @GetMapping({"/v1/routed", "/v1/bursty", "/v1/final", "/v1/free", "/v1/retry"})
    public String routed() {
      return "routed";
    }

    @CrossOrigin(origins = "https://app.example")
    @PostMapping("/v1/chat")
    public Map<String, Object> chat(@RequestBody Map<String, Object> body) {
      return Map.of("echo", body.getOrDefault("model", "none"));
    }

    @PostMapping(path = "/v1/form", consumes = MediaType.APPLICATION_FORM_URLENCODED_VALUE)
    public Map<String, Object> form(@ModelAttribute ModelForm form) {
      return Map.of("echo", form.model());
    }

    @PostMapping("/v1/query/chat")
    public Map<String, Object> byQuery(@RequestParam("model") String model,
        @RequestBody Map<String, Object> body) {
      return Map.of("echo", model);
    }

    @PostMapping("/v1/upload")
    public Map<String, Object> upload(@RequestBody byte[] bytes) {
      return Map.of("bytes", bytes.length);
    }

    @RateLimited(policy = "annotated")
    @GetMapping("/annotated")
    public Mono<String> annotated() {
      return Mono.just("annotated");
    }

    @RateLimited(policy = "annotated")
    @GetMapping(path = "/annotated/flux", produces = MediaType.TEXT_EVENT_STREAM_VALUE)
    public Flux<String> annotatedFlux() {
      return Flux.just("a", "b");
    }

    @RateLimited(policy = "routed")
    @GetMapping("/v1/both")
    public Mono<String> both() {
      return Mono.just("both");
    }

    @RateLimited(policy = "annotated")
    @GetMapping("/deferred/annotated")
    public Mono<String> deferred() {
      return Mono.just("deferred");
    }

    @RequestMapping(path = {"/keyed/ip", "/keyed/principal", "/keyed/tenant", "/keyed/bean",
        "/keyed/broken", "/keyed/throwing"}, method = {RequestMethod.GET, RequestMethod.POST, RequestMethod.DELETE})
    public String keyed() {
      return "keyed";
    }

    @RateLimited(policy = "keyed")
    @GetMapping({"/keyed/annotated/principal", "/keyed/annotated/tenant"})
    public Mono<String> annotatedUnderAKeyedRoute() {
      return Mono.just("annotated");
    }

    @RateLimited(policy = "annotated", key = "#tenant")
    @GetMapping("/annotated/tenant")
    public Mono<String> annotatedTenant(@RequestParam(required = false) String tenant) {
      return Mono.just("tenant " + tenant);
    }

    @RateLimited(policy = "annotated", key = "@tenantKeys.known(#tenant)")
    @GetMapping("/annotated/throwing")
    public Mono<String> annotatedThrowing(@RequestParam(required = false) String tenant) {
      return Mono.just("tenant " + tenant);
    }

    @RateLimited(policy = "annotated", cost = "#tokens")
    @GetMapping("/cost")
    public Mono<String> cost(@RequestParam("tokens") double tokens) {
      return Mono.just("cost " + tokens);
    }

    /**
     * An OpenAI-shaped completion: with {@code usage} its usage; {@code fail=status} a 502 without
     * usage, {@code fail=throw} an error before the response; with {@code gate}, the answer waits for the
     * test to open the gate.
     */
    @PostMapping({"/llm/chat", "/slots/chat", "/items/chat"})
    public Mono<ResponseEntity<Map<String, Object>>> llmChat(@RequestBody Map<String, Object> body,
        @RequestParam(defaultValue = "-1") long usage, @RequestParam(defaultValue = "") String fail,
        @RequestParam(defaultValue = "") String gate) {
      if ("throw".equals(fail)) {
        return Mono.error(new IllegalStateException("upstream timed out"));
      }
      if ("status".equals(fail)) {
        return Mono.just(ResponseEntity.status(HttpStatus.BAD_GATEWAY)
            .body(Map.of("error", Map.of("message", "upstream failed"))));
      }
      Map<String, Object> reply = new LinkedHashMap<>();
      reply.put("object", "chat.completion");
      if (usage >= 0) {
        reply.put("usage", Map.of("prompt_tokens", usage / 2, "completion_tokens", usage - usage / 2,
            "total_tokens", usage));
      }
      return gate.isEmpty() ? Mono.just(ResponseEntity.ok(reply))
          : gates.gate(gate).timeout(Duration.ofSeconds(10)).then(Mono.just(ResponseEntity.ok(reply)));
    }

    /**
     * An SSE stream: one chunk, then (with {@code gate}) a wait for the test to open the gate, then
     * (with {@code flood}) chunks until the write fails, then two chunks, a usage chunk when {@code
     * usage >= 0}, and {@code [DONE]}; {@code fail=true} fails before the first event.
     */
    @PostMapping(path = {"/llm/stream", "/slots/stream"}, produces = MediaType.TEXT_EVENT_STREAM_VALUE)
    public Flux<String> stream(@RequestBody Map<String, Object> body,
        @RequestParam(defaultValue = "-1") long usage, @RequestParam(defaultValue = "") String gate,
        @RequestParam(defaultValue = "false") boolean flood,
        @RequestParam(defaultValue = "false") boolean fail) {
      if (fail) {
        return Flux.error(new IllegalStateException("upstream refused the stream"));
      }
      Flux<String> first = Flux.just("{\"choices\":[{\"delta\":{\"content\":\"a\"}}]}");
      Flux<String> rest = Flux.just("{\"choices\":[{\"delta\":{\"content\":\"b\"}}]}",
          "{\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":null}");
      if (usage >= 0) {
        rest = rest.concatWith(Mono.just("{\"choices\":[],\"usage\":{\"prompt_tokens\":1,"
            + "\"completion_tokens\":" + (usage - 1) + ",\"total_tokens\":" + usage + "}}"));
      }
      rest = rest.concatWith(Mono.just("[DONE]"));
      if (flood) {
        String big = "{\"choices\":[{\"delta\":{\"content\":\"" + "x".repeat(1000) + "\"}}]}";
        rest = Flux.range(0, 100_000).map(i -> big).concatWith(rest);
      }
      if (!gate.isEmpty()) {
        rest = gates.gate(gate).timeout(Duration.ofSeconds(10)).thenMany(rest);
      }
      return first.concatWith(rest);
    }
  }
}

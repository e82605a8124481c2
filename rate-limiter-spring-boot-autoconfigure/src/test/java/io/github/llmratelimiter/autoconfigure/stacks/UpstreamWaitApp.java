package io.github.llmratelimiter.autoconfigure.stacks;

import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/**
 * A gateway whose upstream {@code stand-in} takes one call at a time, and whose handler stands in
 * for the provider on either web stack: each call it receives is held (its slot taken) until the
 * test releases it by id, then answers with the usage the test named (a call whose body it cannot
 * read is answered 400 at once). Calls of policy {@code chat} ({@code /v1/**}) wait up to 20 s
 * for the upstream, those of policy {@code short} ({@code
 * /short/**}) up to 300 ms.
 */
@SpringBootConfiguration
@EnableAutoConfiguration
public class UpstreamWaitApp {

  /** The properties. */
  public static final String[] PROPERTIES = {
      "ratelimiter.policies.chat.rpm.limit=100",
      "ratelimiter.policies.chat.max-wait=20s",
      "ratelimiter.policies.short.rpm.limit=100",
      "ratelimiter.policies.short.max-wait=300ms",
      "ratelimiter.upstreams.stand-in.concurrency=1",
      "ratelimiter.upstreams.stand-in.tpm=1000000",
      "ratelimiter.upstreams.stand-in.models=gpt-4o*",
      "ratelimiter.web.routes[0].include=/short/**",
      "ratelimiter.web.routes[0].policy=short",
      "ratelimiter.web.routes[1].include=/v1/**",
      "ratelimiter.web.routes[1].policy=chat",
      "management.endpoints.web.exposure.include=ratelimiter"};

  @Bean
  Gate gate() {
    return new Gate();
  }

  /** The calls the provider received, in order, and the answers it holds back. */
  public static final class Gate {

    /** The ids of the calls received, in the order they came. */
    public final BlockingQueue<String> arrivals = new LinkedBlockingQueue<>();

    final Map<String, CompletableFuture<ResponseEntity<String>>> held = new ConcurrentHashMap<>();

    /**
     * Answers a held call.
     *
     * @param id the call's id
     */
    public void release(String id) {
      CompletableFuture<ResponseEntity<String>> call = held.remove(id);
      if (call == null) {
        throw new IllegalStateException("no call " + id + " is held");
      }
      call.complete(null); // replaced by the handler's answer
    }
  }

  /** The stand-in for the provider. */
  @RestController
  public static class Provider {

    private final Gate gate;

    Provider(Gate gate) {
      this.gate = gate;
    }

    @PostMapping({"/v1/chat/completions", "/short/chat/completions"})
    CompletableFuture<ResponseEntity<String>> chat(@RequestParam String id,
        @RequestParam(defaultValue = "1000") long tokens, @RequestBody String body) {
      if (!body.contains("\"model\":\"gpt-4o-mini\"")) { // the limiter read it first
        return CompletableFuture.completedFuture(ResponseEntity.badRequest().body(body));
      }
      CompletableFuture<ResponseEntity<String>> release = new CompletableFuture<>();
      gate.held.put(id, release);
      gate.arrivals.add(id);
      return release.thenApply(ignored -> ResponseEntity.ok()
          .header("Content-Type", "application/json")
          .body("{\"choices\":[],\"usage\":{\"total_tokens\":" + tokens + "}}"));
    }
  }
}

package io.github.llmratelimiter.autoconfigure.stacks;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.Socket;
import java.net.http.HttpResponse;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.springframework.boot.WebApplicationType;

/**
 * Waiting for an upstream on WebFlux (Netty), where a waiting call holds no thread and a client
 * that disconnects leaves the queue at once.
 */
class ReactiveUpstreamWaitServerTests extends AbstractUpstreamWaitServerTests {

  @Override
  protected WebApplicationType stack() {
    return WebApplicationType.REACTIVE;
  }

  @Test
  void aClientThatDisconnectsLeavesTheQueueAtOnceAndIsNeverAdmitted() throws Exception {
    long cancelledBefore = waits("cancelled");
    CompletableFuture<HttpResponse<String>> ahead = send(newKey(), "/v1", "ahead");
    assertThat(arrival()).isEqualTo("ahead");
    Socket gone = sendRaw(newKey(), "gone");
    awaitThat(() -> waiting() == 1);
    assertThat(view().waiting()).isEqualTo(1);

    gone.close();
    awaitThat(() -> waiting() == 0);
    assertThat(waits("cancelled")).isEqualTo(cancelledBefore + 1);
    gate().release("ahead");
    assertThat(ahead.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
    // the slot is free: a later call passes at once, and the call that left never came
    CompletableFuture<HttpResponse<String>> after = send(newKey(), "/v1", "after");
    assertThat(arrival()).isEqualTo("after");
    gate().release("after");
    assertThat(after.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
    assertThat(gate().arrivals).isEmpty();
  }
}

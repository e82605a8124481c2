package io.github.llmratelimiter.springai.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.llmratelimiter.gateway.RateLimitExceededException;
import io.github.llmratelimiter.redis.RunningRedis;
import io.github.llmratelimiter.springai.RateLimitAdvisor;
import io.github.llmratelimiter.springai.it.ChatApp.Settled;
import java.io.FileInputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.springframework.ai.chat.client.ChatClient;
import org.springframework.context.ConfigurableApplicationContext;
import reactor.blockhound.BlockHound;
import reactor.blockhound.BlockingOperationError;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * Under BlockHound (installed for this test JVM, with the limiter's own integration for the
 * in-memory store's per-key lock and Lettuce's writer lock): a {@code ChatClient} stream
 * subscribed on a Reactor non-blocking thread is charged, denied and settled through the advisor
 * without a blocking call on that thread, on the in-memory and on the Redis store. Every blocking
 * call BlockHound catches is recorded, so one that the code swallowed still fails the test.
 */
class StreamWithoutBlockingTests {

  @RegisterExtension
  static final RunningRedis REDIS = new RunningRedis();

  private static final Queue<String> BLOCKING = new ConcurrentLinkedQueue<>();

  private static OpenAiStub stub;
  private static ConfigurableApplicationContext memory;
  private static ConfigurableApplicationContext redis;

  @BeforeAll
  static void start() {
    BlockHound.install(builder -> builder
        // Netty's adaptive allocator locks a magazine for a few instructions when it grows them
        .allowBlockingCallsInside(
            "io.netty.buffer.AdaptivePoolingAllocator$MagazineGroup", "tryExpandMagazines")
        .allowBlockingCallsInside("io.netty.buffer.AdaptivePoolingAllocator$Magazine", "free")
        .blockingMethodCallback(method -> {
          BLOCKING.add(method + " on " + Thread.currentThread().getName());
          throw new BlockingOperationError(method);
        }));
    stub = OpenAiStub.start();
    memory = ChatApp.start(stub, "ratelimiter.policies.single.rpm.limit=1", "ratelimiter.tpm.limit=1000000");
    redis = ChatApp.start(stub, "ratelimiter.policies.single.rpm.limit=1", "ratelimiter.tpm.limit=1000000",
        "ratelimiter.store=redis", "ratelimiter.redis.key-prefix=blockhound:",
        "spring.data.redis.host=127.0.0.1", "spring.data.redis.port=" + REDIS.server().port());
    // Spring Data Redis connects on its first use: that happens here, off the non-blocking threads
    chat(redis).prompt("hello").advisors(RateLimitAdvisor.caller("warm-up")).call().content();
  }

  @AfterAll
  static void stop() {
    memory.close();
    redis.close();
    stub.close();
  }

  @AfterEach
  void noBlockingCall() {
    List<String> caught = List.copyOf(BLOCKING);
    BLOCKING.clear();
    assertThat(caught).as("blocking calls on non-blocking threads").isEmpty();
  }

  @Test
  void aBlockingCallOnANonBlockingThreadIsCaught() throws Exception {
    Path file = Files.createTempFile("blocking-read", ".txt");
    Files.writeString(file, "x");
    try {
      // a blocking file read, as a class loaded from a directory or a first SecureRandom does
      assertThatThrownBy(() -> Mono.fromCallable(() -> {
        try (FileInputStream in = new FileInputStream(file.toFile())) {
          return in.read(new byte[1]);
        }
      }).subscribeOn(Schedulers.parallel()).block(Duration.ofSeconds(10)))
          .hasRootCauseInstanceOf(BlockingOperationError.class);
    } finally {
      Files.delete(file);
    }
    assertThat(BLOCKING).singleElement().asString().contains("readBytes").contains("parallel-");
    BLOCKING.clear();
  }

  @ParameterizedTest
  @ValueSource(strings = {"memory", "redis"})
  void aStreamOnANonBlockingThreadIsChargedDeniedAndSettledWithoutBlocking(String store) {
    ConfigurableApplicationContext app = store.equals("memory") ? memory : redis;
    List<Settled> settled = settlements(app);
    settled.clear();
    @SuppressWarnings("unchecked")
    List<String> threads = app.getBean("decisionThreads", List.class);
    threads.clear();
    ChatClient chat = chat(app);
    List<String> parts = chat.prompt("hello").advisors(RateLimitAdvisor.caller("nb-" + store))
        .advisors(RateLimitAdvisor.policy("single")).stream().content()
        .subscribeOn(Schedulers.parallel()).collectList().block(Duration.ofSeconds(30));
    assertThat(String.join("", parts)).isEqualTo("hi");
    int calls = stub.calls();
    assertThatThrownBy(() -> chat.prompt("hello").advisors(RateLimitAdvisor.caller("nb-" + store))
        .advisors(RateLimitAdvisor.policy("single")).stream().content()
        .subscribeOn(Schedulers.parallel()).blockLast(Duration.ofSeconds(30)))
        .isInstanceOf(RateLimitExceededException.class);
    assertThat(stub.calls()).isEqualTo(calls);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (settled.isEmpty() && System.nanoTime() < deadline) {
      Thread.onSpinWait();
    }
    assertThat(settled).singleElement().extracting(Settled::actual).isEqualTo(18L);
    if (store.equals("memory")) {
      // the in-memory store decides on the thread that charges: the subscriber's, non-blocking
      assertThat(threads).hasSize(2).allSatisfy(t -> assertThat(t).startsWith("parallel-"));
    }
  }

  private static ChatClient chat(ConfigurableApplicationContext app) {
    return app.getBean(ChatClient.class);
  }

  @SuppressWarnings("unchecked")
  private static List<Settled> settlements(ConfigurableApplicationContext app) {
    return app.getBean("settlements", List.class);
  }
}

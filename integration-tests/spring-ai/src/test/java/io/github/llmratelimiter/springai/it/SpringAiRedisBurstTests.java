package io.github.llmratelimiter.springai.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.gateway.RateLimitExceededException;
import io.github.llmratelimiter.redis.RunningRedis;
import io.github.llmratelimiter.springai.RateLimitAdvisor;
import io.github.llmratelimiter.springai.it.ChatApp.Settled;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.ai.chat.client.ChatClient;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * Two applications that share one Redis store (a real redis-server) admit exactly the limit of a
 * burst of concurrent {@code ChatClient} calls of one tenant, split between them, and only the
 * admitted calls reach the model.
 */
class SpringAiRedisBurstTests {

  @RegisterExtension
  static final RunningRedis REDIS = new RunningRedis();

  private static final int LIMIT = 37;
  private static final int BURST = 100;

  @Test
  void aBurstOfOneTenantAcrossTwoApplicationsIsAdmittedExactlyUpToTheLimit() throws Exception {
    try (OpenAiStub stub = OpenAiStub.start();
        ConfigurableApplicationContext first = start(stub);
        ConfigurableApplicationContext second = start(stub)) {
      ChatClient[] clients = {first.getBean(ChatClient.class), second.getBean(ChatClient.class)};
      ExecutorService pool = Executors.newFixedThreadPool(BURST);
      CountDownLatch go = new CountDownLatch(1);
      List<Future<Boolean>> calls = new ArrayList<>();
      for (int i = 0; i < BURST; i++) {
        ChatClient client = clients[i % 2];
        calls.add(pool.submit(() -> {
          go.await();
          try {
            return "hi".equals(client.prompt("hello").advisors(RateLimitAdvisor.caller("burst-tenant"))
                .call().content());
          } catch (RateLimitExceededException e) {
            return false;
          }
        }));
      }
      go.countDown();
      int admitted = 0;
      for (Future<Boolean> call : calls) {
        admitted += call.get(60, TimeUnit.SECONDS) ? 1 : 0;
      }
      pool.shutdown();
      assertThat(admitted).isEqualTo(LIMIT);
      assertThat(stub.calls()).isEqualTo(LIMIT);
      List<Settled> settled = new ArrayList<>(settlements(first));
      settled.addAll(settlements(second));
      assertThat(settled).hasSize(LIMIT).allSatisfy(s -> assertThat(s.actual()).isEqualTo(18));
    }
  }

  @SuppressWarnings("unchecked")
  private static List<Settled> settlements(ConfigurableApplicationContext app) {
    return app.getBean("settlements", List.class);
  }

  private static ConfigurableApplicationContext start(OpenAiStub stub) {
    return ChatApp.start(stub,
        "ratelimiter.store=redis",
        "ratelimiter.redis.key-prefix=spring-ai:",
        "spring.data.redis.host=127.0.0.1",
        "spring.data.redis.port=" + REDIS.server().port(),
        "ratelimiter.rpm.limit=" + LIMIT,
        "ratelimiter.tpm.limit=1000000");
  }
}

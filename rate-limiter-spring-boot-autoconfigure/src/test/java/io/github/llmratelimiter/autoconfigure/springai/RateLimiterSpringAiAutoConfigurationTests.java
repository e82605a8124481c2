package io.github.llmratelimiter.autoconfigure.springai;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.autoconfigure.InvalidRateLimitPropertyException;
import io.github.llmratelimiter.autoconfigure.RateLimiterAutoConfiguration;
import io.github.llmratelimiter.core.Reason;
import io.github.llmratelimiter.gateway.RateLimitExceededException;
import io.github.llmratelimiter.springai.ChatClientKeyResolver;
import io.github.llmratelimiter.springai.RateLimitAdvisor;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.springframework.ai.chat.client.ChatClient;
import org.springframework.ai.chat.messages.AssistantMessage;
import org.springframework.ai.chat.model.ChatModel;
import org.springframework.ai.chat.model.ChatResponse;
import org.springframework.ai.chat.model.Generation;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

class RateLimiterSpringAiAutoConfigurationTests {

  private final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(
          RateLimiterAutoConfiguration.class, RateLimiterSpringAiAutoConfiguration.class));

  @Test
  void runWhenSpringAiIsPresentShouldConfigureTheAdvisorAndItsKeyResolver() {
    runner.run(context -> assertThat(context)
        .hasSingleBean(RateLimitAdvisor.class)
        .hasSingleBean(ChatClientKeyResolver.class));
  }

  @Test
  void runWhenDisabledShouldNotConfigureTheAdvisor() {
    runner.withPropertyValues("ratelimiter.spring-ai.enabled=false").run(context -> assertThat(context)
        .hasNotFailed()
        .doesNotHaveBean(RateLimitAdvisor.class)
        .doesNotHaveBean(ChatClientKeyResolver.class));
  }

  @Test
  void runWhenChatClientIsMissingShouldNotConfigureTheAdvisor() {
    runner.withClassLoader(new FilteredClassLoader(ChatClient.class)).run(context -> assertThat(context)
        .hasNotFailed()
        .doesNotHaveBean(RateLimitAdvisor.class));
  }

  @Test
  void runWhenUserDefinesTheKeyResolverShouldChargeItsCaller() {
    runner.withPropertyValues("ratelimiter.policies.chat.rpm.limit=1",
            "ratelimiter.default-policy=chat")
        .withBean(ChatClientKeyResolver.class, () -> request -> "tenant-a")
        .run(context -> {
          AtomicInteger calls = new AtomicInteger();
          ChatClient client = ChatClient.builder(model(calls))
              .defaultAdvisors(context.getBean(RateLimitAdvisor.class)).build();
          assertThat(client.prompt("hello").call().content()).isEqualTo("hi");
          try {
            client.prompt("hello").call().content();
            throw new AssertionError("the second call of tenant-a was admitted");
          } catch (RateLimitExceededException e) {
            assertThat(e.decision().reason()).isEqualTo(Reason.RPM_LIMIT);
            assertThat(e.outcome().key().apiKey()).isEqualTo("tenant-a");
          }
          assertThat(calls).hasValue(1);
        });
  }

  @Test
  void runWhenThePolicyIsSetShouldChargeTheAdvisorsCallsOnIt() {
    runner.withPropertyValues("ratelimiter.policies.chat.rpm.limit=1",
            "ratelimiter.policies.other.rpm.limit=100", "ratelimiter.spring-ai.policy=other")
        .run(context -> {
          AtomicInteger calls = new AtomicInteger();
          ChatClient client = ChatClient.builder(model(calls))
              .defaultAdvisors(context.getBean(RateLimitAdvisor.class)).build();
          for (int i = 0; i < 3; i++) {
            client.prompt("hello").advisors(RateLimitAdvisor.caller("tenant-b")).call().content();
          }
          assertThat(calls).hasValue(3);
        });
  }

  @Test
  void runWhenThePolicyIsUnknownShouldFailNamingTheProperty() {
    runner.withPropertyValues("ratelimiter.spring-ai.policy=nope").run(context -> {
      assertThat(context).hasFailed();
      assertThat(context.getStartupFailure()).rootCause()
          .isInstanceOf(InvalidRateLimitPropertyException.class)
          .hasMessageContaining("ratelimiter.spring-ai.policy").hasMessageContaining("nope");
    });
  }

  /** A chat model that answers "hi" and counts its calls. */
  private static ChatModel model(AtomicInteger calls) {
    return prompt -> {
      calls.incrementAndGet();
      return new ChatResponse(List.of(new Generation(new AssistantMessage("hi"))));
    };
  }
}

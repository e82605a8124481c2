package io.github.llmratelimiter.springai.it;

import io.github.llmratelimiter.gateway.RateLimitObserver;
import io.github.llmratelimiter.gateway.RateLimitOutcome;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import io.github.llmratelimiter.springai.RateLimitAdvisor;
import org.springframework.ai.chat.client.ChatClient;
import org.springframework.ai.chat.model.ChatModel;
import org.springframework.ai.openai.OpenAiChatModel;
import org.springframework.ai.openai.OpenAiChatOptions;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;

/**
 * A Spring Boot application that calls a model through Spring AI's {@code ChatClient} with the
 * limiter's advisor: Spring AI's real {@link OpenAiChatModel} (on the openai-java SDK) pointed at
 * {@code stub.url}, and an observer that records every settlement the enforcer reports and the thread of each decision.
 */
@SpringBootConfiguration
@EnableAutoConfiguration
class ChatApp {

  /** A settlement: the model tokens reserved before the call and those it was settled with. */
  record Settled(String policy, long estimate, long actual) {}

  @Bean
  OpenAiChatModel chatModel(@Value("${stub.url}") String url) {
    return OpenAiChatModel.builder().options(OpenAiChatOptions.builder()
        .baseUrl(url).apiKey("test-key").model("gpt-4o-mini").maxRetries(0)
        .timeout(Duration.ofSeconds(30)).build()).build();
  }

  // tag::chat-client[]
  @Bean
  ChatClient chatClient(ChatModel model, RateLimitAdvisor rateLimit) {
    return ChatClient.builder(model).defaultAdvisors(rateLimit).build();
  }
  // end::chat-client[]

  @Bean
  List<Settled> settlements() {
    return new CopyOnWriteArrayList<>();
  }

  /** The threads the enforcer told its observers of its decisions on, in order. */
  @Bean
  List<String> decisionThreads() {
    return new CopyOnWriteArrayList<>();
  }

  @Bean
  RateLimitObserver settlementRecorder(List<Settled> settlements, List<String> decisionThreads) {
    return new RateLimitObserver() {
      @Override
      public void onDecision(RateLimitOutcome outcome, long nanos) {
        decisionThreads.add(Thread.currentThread().getName());
      }

      @Override
      public void onReconcile(String policy, long estimate, long actual) {
        settlements.add(new Settled(policy, estimate, actual));
      }
    };
  }

  /** Starts the application with the stub's URL and the given properties ({@code name=value}). */
  static ConfigurableApplicationContext start(OpenAiStub stub, String... properties) {
    String[] args = new String[properties.length + 2];
    args[0] = "--stub.url=" + stub.baseUrl();
    args[1] = "--spring.main.banner-mode=off";
    for (int i = 0; i < properties.length; i++) {
      args[i + 2] = "--" + properties[i];
    }
    return new SpringApplicationBuilder(ChatApp.class).web(WebApplicationType.NONE).run(args);
  }

}

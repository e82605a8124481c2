package io.github.llmratelimiter.sample;

import java.time.InstantSource;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import tools.jackson.databind.json.JsonMapper;

/**
 * A runnable OpenAI-compatible LLM gateway, rate-limited by the starter. The "model" behind it is
 * a local stand-in ({@link EchoChatModel}), or a real OpenAI-compatible provider when {@code
 * gateway.provider.base-url} is set ({@link OpenAiChatModel}); replace the {@link ChatModel} bean
 * with another provider client to put it in front of one.
 */
@SpringBootApplication
@EnableConfigurationProperties(GatewayProperties.class)
public class SampleGatewayApplication {

  /**
   * Starts the gateway.
   *
   * @param args command-line arguments
   */
  public static void main(String[] args) {
    SpringApplication.run(SampleGatewayApplication.class, args);
  }

  @Bean
  ChatModel chatModel(GatewayProperties gateway, JsonMapper json) {
    if (gateway.provider().baseUrl() != null) {
      return new OpenAiChatModel(gateway.provider(), json);
    }
    return new EchoChatModel(new StandInProvider(gateway.standIn().requestsPerMinute(),
        gateway.standIn().tokensPerMinute(), InstantSource.system()));
  }

  @Bean
  OpenAiProblemFactory openAiProblemFactory() {
    return new OpenAiProblemFactory();
  }
}

package io.github.llmratelimiter.sample;

import java.time.Duration;
import java.util.List;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * The gateway's own settings, under {@code gateway}.
 *
 * @param models the models the gateway serves; a request naming another one gets a 400
 * @param standIn how the local stand-in model behaves
 */
@ConfigurationProperties("gateway")
public record GatewayProperties(
    @DefaultValue({"gpt-4o", "gpt-4o-mini"}) List<String> models,
    @DefaultValue StandIn standIn) {

  /**
   * The local stand-in model's behaviour.
   *
   * @param chunkDelay the pause before each chunk of a streamed reply, so that a stream lasts long
   *     enough to watch a limit on calls in flight with curl; 0 streams at once
   * @param requestsPerMinute the stand-in provider's own limit on the gateway's requests a minute,
   *     across every tenant (it answers a 429 above it); 0 for none
   * @param tokensPerMinute the stand-in provider's own limit on model tokens a minute; 0 for none
   */
  public record StandIn(@DefaultValue("100ms") Duration chunkDelay,
      @DefaultValue("0") long requestsPerMinute, @DefaultValue("0") long tokensPerMinute) {

    /**
     * Validates the settings.
     *
     * @throws IllegalArgumentException if the delay is negative or above a minute
     */
    public StandIn {
      if (chunkDelay == null || chunkDelay.isNegative() || chunkDelay.compareTo(Duration.ofMinutes(1)) > 0) {
        throw new IllegalArgumentException(
            "gateway.stand-in.chunk-delay must be from 0 to 1m, but was " + chunkDelay);
      }
      if (requestsPerMinute < 0) {
        throw new IllegalArgumentException(
            "gateway.stand-in.requests-per-minute must be >= 0, but was " + requestsPerMinute);
      }
      if (tokensPerMinute < 0) {
        throw new IllegalArgumentException(
            "gateway.stand-in.tokens-per-minute must be >= 0, but was " + tokensPerMinute);
      }
    }
  }
}

package io.github.llmratelimiter.sample;

import java.net.URI;
import java.time.Duration;
import java.util.List;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * The gateway's own settings, under {@code gateway}.
 *
 * @param models the models the gateway serves; a request naming another one gets a 400
 * @param standIn how the local stand-in model behaves
 * @param provider the real OpenAI-compatible provider the gateway forwards to instead of the
 *     stand-in, when its base URL is set
 */
@ConfigurationProperties("gateway")
public record GatewayProperties(
    @DefaultValue({"gpt-4o", "gpt-4o-mini"}) List<String> models,
    @DefaultValue StandIn standIn,
    @DefaultValue Provider provider) {

  /**
   * A real OpenAI-compatible provider: with a base URL, every chat call goes to its {@code POST
   * <base-url>/v1/chat/completions} (not streamed: the gateway streams the reply itself), and its
   * {@code x-ratelimit-*} and {@code retry-after} headers correct the upstream {@code stand-in}.
   *
   * @param baseUrl the provider's base URL, such as {@code https://api.openai.com}, without {@code
   *     /v1}; unset keeps the local stand-in model
   * @param apiKey the key sent as {@code Authorization: Bearer}; unset sends none. Never logged
   *     or shown ({@link #toString()} masks it)
   * @param timeout the longest a call to the provider may take, connecting included, before the
   *     gateway answers 502
   */
  public record Provider(@Nullable URI baseUrl, @Nullable String apiKey,
      @DefaultValue("60s") Duration timeout) {

    /**
     * Validates the settings.
     *
     * @throws IllegalArgumentException if the base URL carries credentials or is not an absolute
     *     http(s) URL, or the timeout is not positive
     */
    public Provider {
      if (baseUrl != null && baseUrl.getRawUserInfo() != null) { // never echoed: a secret
        throw new IllegalArgumentException("gateway.provider.base-url must not carry credentials"
            + " (set gateway.provider.api-key), but it has a user-info part");
      }
      if (baseUrl != null && (baseUrl.getHost() == null
          || !("http".equals(baseUrl.getScheme()) || "https".equals(baseUrl.getScheme())))) {
        throw new IllegalArgumentException(
            "gateway.provider.base-url must be an absolute http or https URL, but was " + baseUrl);
      }
      if (timeout == null || timeout.isNegative() || timeout.isZero()) {
        throw new IllegalArgumentException(
            "gateway.provider.timeout must be positive, but was " + timeout);
      }
    }

    /**
     * Returns the settings with the API key masked.
     *
     * @return the base URL, whether a key is set, and the timeout
     */
    @Override
    public String toString() {
      return "Provider[baseUrl=" + baseUrl + ", apiKey=" + (apiKey == null ? "unset" : "******")
          + ", timeout=" + timeout + "]";
    }
  }

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

package io.github.llmratelimiter.sample;

import java.util.List;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * The gateway's own settings, under {@code gateway}.
 *
 * @param models the models the gateway serves; a request naming another one gets a 400
 */
@ConfigurationProperties("gateway")
public record GatewayProperties(@DefaultValue({"gpt-4o", "gpt-4o-mini"}) List<String> models) {}

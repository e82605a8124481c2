package io.github.llmratelimiter.gateway.scg;

import io.github.llmratelimiter.gateway.scg.reactive.ScgReactiveGatewayApplication;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.context.ActiveProfiles;

/**
 * The MVC gateway's streaming scenario ({@link GatewayStreamingTests}) through the reactive
 * gateway's route limited by the {@code RequestRateLimiter} filter naming {@code llmRateLimiter}:
 * the stream passes chunk by chunk, with the starter's headers.
 */
@SpringBootTest(classes = ScgReactiveGatewayApplication.class,
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
@ActiveProfiles("filter")
class RequestRateLimiterStreamingTests extends GatewayStreamingTests {

  @Override
  String key(String name) {
    return "rrl-" + name;
  }
}

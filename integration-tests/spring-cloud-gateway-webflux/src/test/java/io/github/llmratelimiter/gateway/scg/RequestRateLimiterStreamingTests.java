package io.github.llmratelimiter.gateway.scg;

/**
 * The MVC gateway's streaming scenario ({@link GatewayStreamingTests}) through the reactive
 * gateway's route limited by the {@code RequestRateLimiter} filter naming {@code llmRateLimiter}:
 * the stream passes chunk by chunk, with the starter's headers.
 */
@ReactiveGatewayTest("filter")
class RequestRateLimiterStreamingTests extends GatewayStreamingTests {

  @Override
  String key(String name) {
    return "rrl-" + name;
  }
}

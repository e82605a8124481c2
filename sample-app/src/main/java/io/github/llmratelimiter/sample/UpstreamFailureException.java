package io.github.llmratelimiter.sample;

/** The model provider failed (an error or a timeout): the gateway answers 502. */
final class UpstreamFailureException extends RuntimeException {

  private static final long serialVersionUID = 1L;

  UpstreamFailureException(Throwable cause) {
    super("upstream call failed", cause);
  }
}

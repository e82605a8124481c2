package io.github.llmratelimiter.sample;

import org.jspecify.annotations.Nullable;

/** The model provider failed (an error or a timeout): the gateway answers 502. */
final class UpstreamFailureException extends RuntimeException {

  private static final long serialVersionUID = 1L;

  UpstreamFailureException(Throwable cause) {
    super("upstream call failed", cause);
  }

  /**
   * @param message what failed, without credentials
   * @param cause the underlying failure, or null
   */
  UpstreamFailureException(String message, @Nullable Throwable cause) {
    super(message, cause);
  }
}

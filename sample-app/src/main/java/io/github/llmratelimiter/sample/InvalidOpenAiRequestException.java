package io.github.llmratelimiter.sample;

import org.jspecify.annotations.Nullable;

/**
 * A request the gateway rejects in the OpenAI error shape: a 400, or a 404 for a model it does not
 * serve (as OpenAI answers {@code model_not_found}).
 */
final class InvalidOpenAiRequestException extends RuntimeException {

  private static final long serialVersionUID = 1L;

  private final @Nullable String param;
  private final @Nullable String code;
  private final int status;

  InvalidOpenAiRequestException(String message, @Nullable String param, @Nullable String code) {
    this(400, message, param, code);
  }

  InvalidOpenAiRequestException(int status, String message, @Nullable String param,
      @Nullable String code) {
    super(message, null, false, false);
    this.status = status;
    this.param = param;
    this.code = code;
  }

  int status() {
    return status;
  }

  @Nullable String param() {
    return param;
  }

  @Nullable String code() {
    return code;
  }
}

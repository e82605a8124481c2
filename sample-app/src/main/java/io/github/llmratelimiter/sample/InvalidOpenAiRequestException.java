package io.github.llmratelimiter.sample;

import org.jspecify.annotations.Nullable;

/** A request the gateway rejects with a 400 in the OpenAI error shape. */
final class InvalidOpenAiRequestException extends RuntimeException {

  private static final long serialVersionUID = 1L;

  private final @Nullable String param;
  private final @Nullable String code;

  InvalidOpenAiRequestException(String message, @Nullable String param, @Nullable String code) {
    super(message, null, false, false);
    this.param = param;
    this.code = code;
  }

  @Nullable String param() {
    return param;
  }

  @Nullable String code() {
    return code;
  }
}

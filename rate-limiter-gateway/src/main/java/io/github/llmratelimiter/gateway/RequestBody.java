package io.github.llmratelimiter.gateway;

import org.jspecify.annotations.Nullable;

/**
 * A request's body as the limiter reads it before the handler, which must then read the same bytes:
 * a front door buffers it (up to {@code max-body}) and hands it to the request's {@link
 * RateLimitContext}. It is read when the limiter first asks, not before.
 */
public interface RequestBody {

  /**
   * Returns the whole body, reading what is left of it now if nothing has yet.
   *
   * @return the body, or {@code null} when it is longer than {@code max-body}, could not be read,
   *     or streamed through to the handler without being kept
   */
  byte @Nullable [] bytes();

  /**
   * Returns whether the body is longer than {@code max-body}, reading it up to that size now.
   *
   * @return {@code true} if it is; {@code false} when it is not or could not be read
   */
  boolean tooLong();

  /**
   * Returns a body that was read already, for a front door that buffers bodies itself.
   *
   * @param bytes the whole body, or {@code null} when it was not kept
   * @param tooLong whether it was longer than {@code max-body}
   * @return the body
   */
  static RequestBody of(byte @Nullable [] bytes, boolean tooLong) {
    return new RequestBody() {
      @Override
      public byte @Nullable [] bytes() {
        return bytes;
      }

      @Override
      public boolean tooLong() {
        return tooLong;
      }
    };
  }
}

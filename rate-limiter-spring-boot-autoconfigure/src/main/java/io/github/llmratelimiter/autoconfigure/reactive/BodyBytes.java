package io.github.llmratelimiter.autoconfigure.reactive;

import java.util.Arrays;
import org.springframework.core.io.buffer.DataBuffer;
import org.springframework.core.io.buffer.DataBufferLimitException;
import org.springframework.core.io.buffer.DataBufferUtils;

/**
 * A request body read into one array as its buffers arrive, up to a limit: each buffer's bytes are
 * copied out and the buffer released at once, so nothing is held when the read stops early. A
 * body that passes the limit fails its read with {@link DataBufferLimitException}, which stops
 * it, as {@link DataBufferUtils#join(org.reactivestreams.Publisher, int)} does.
 */
final class BodyBytes {

  private static final byte[] EMPTY = new byte[0];
  /**
   * The most bytes held before any arrive: a declared length is the client's word, and a client
   * that declares megabytes and sends nothing must not hold them.
   */
  static final int FIRST_ARRAY = 64 * 1024;

  private final int max;
  private byte[] bytes;
  private int length;

  /**
   * Creates a body read up to {@code max} bytes.
   *
   * @param declared the request's declared length (its array's first size, up to {@link
   *     #FIRST_ARRAY}), or -1
   * @param max the most bytes read
   */
  BodyBytes(long declared, int max) {
    this.max = max;
    this.bytes = declared > 0 ? new byte[(int) Math.min(declared, Math.min(max, FIRST_ARRAY))]
        : EMPTY;
  }

  /**
   * Copies a buffer's readable bytes and releases it.
   *
   * @param buffer the next buffer of the body
   * @throws DataBufferLimitException when the body passes the limit
   */
  void add(DataBuffer buffer) {
    try {
      int n = buffer.readableByteCount();
      if (n > max - length) {
        throw new DataBufferLimitException("Exceeded limit on max bytes to buffer : " + max);
      }
      if (length + n > bytes.length) {
        bytes = Arrays.copyOf(bytes, Math.min(max, Math.max(length + n, 2 * bytes.length)));
      }
      buffer.read(bytes, length, n);
      length += n;
    } finally {
      DataBufferUtils.release(buffer);
    }
  }

  /** The size of the array the bytes are read into now. */
  int capacity() {
    return bytes.length;
  }

  /** The bytes read, in an array of their length. */
  byte[] bytes() {
    return length == bytes.length ? bytes : Arrays.copyOf(bytes, length);
  }
}

package io.github.llmratelimiter.autoconfigure.reactive;

import java.util.Arrays;
import org.springframework.core.io.buffer.DataBuffer;
import org.springframework.core.io.buffer.DataBufferLimitException;
import org.springframework.core.io.buffer.DataBufferUtils;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * A request body read into one array as its buffers arrive, up to a limit: each buffer's bytes are
 * copied out and the buffer released at once, so nothing is held when the read stops early; each
 * buffer is released exactly once, whoever else holds a reference to it (Reactor Netty does). A
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
   * Reads a body into one array, up to {@code max} bytes: each buffer is released once its bytes
   * are copied, and one the read refuses (past the limit) or fails on is released by the read's
   * discard hook, once, as are those operators still hold when it stops.
   *
   * @param body the body's buffers
   * @param declared the declared length, or -1
   * @param max the most bytes read
   * @return the bytes read; a {@link DataBufferLimitException} past the limit
   */
  static Mono<BodyBytes> read(Flux<DataBuffer> body, long declared, int max) {
    return body
        .collect(() -> new BodyBytes(declared, max), BodyBytes::add)
        .doOnDiscard(DataBuffer.class, DataBufferUtils::release);
  }

  /**
   * Copies a buffer's readable bytes and releases it. A buffer it refuses is not released: the
   * read's discard hook does ({@link #read}), as it does for any buffer its accumulator throws on.
   *
   * @param buffer the next buffer of the body
   * @throws DataBufferLimitException when the body passes the limit
   */
  void add(DataBuffer buffer) {
    int n = buffer.readableByteCount();
    if (n > max - length) {
      throw new DataBufferLimitException("Exceeded limit on max bytes to buffer : " + max);
    }
    if (length + n > bytes.length) {
      bytes = Arrays.copyOf(bytes, Math.min(max, Math.max(length + n, 2 * bytes.length)));
    }
    buffer.read(bytes, length, n);
    length += n;
    DataBufferUtils.release(buffer);
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

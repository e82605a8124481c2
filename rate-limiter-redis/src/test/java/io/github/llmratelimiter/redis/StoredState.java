package io.github.llmratelimiter.redis;

import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.codec.ByteArrayCodec;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;

/**
 * A level's state as the standalone test server holds it (layout 2, see {@code lib.lua}), decoded
 * independently of the scripts: a header {@code <BdddI4d} (16 plus the entry width, tokens, last
 * refill, base, index of the first entry in the window, monitoring mark), or the same without the
 * mark and with the width itself in its first byte, then the admissions as little-endian offsets
 * from the base.
 *
 * @param width the width of an entry, 4 or 8 bytes
 * @param tokens the bucket's tokens as of {@code refilledAt}
 * @param refilledAt the time of the last refill
 * @param base the time the offsets count from
 * @param first the index of the first entry the last write counted in the window
 * @param mark the monitoring mark (0: none, or a header without it)
 * @param offsets every entry's offset from {@code base}, oldest first, those before {@code first}
 *     included
 */
record StoredState(int width, double tokens, double refilledAt, double base, long first,
    double mark, long[] offsets) {

  /** The times of the admissions from {@code first} on, oldest first. */
  long[] admissions() {
    long[] times = new long[offsets.length - (int) first];
    for (int i = 0; i < times.length; i++) {
      times[i] = (long) base + offsets[(int) first + i];
    }
    return times;
  }

  /** Reads and decodes {@code key}, which must exist. */
  static StoredState read(String key) {
    try (StatefulRedisConnection<byte[], byte[]> c =
        TestRedis.standaloneClient().connect(ByteArrayCodec.INSTANCE, TestRedis.standaloneUri())) {
      byte[] value = c.sync().get(key.getBytes(StandardCharsets.UTF_8));
      if (value == null) {
        throw new IllegalStateException("no state at " + key);
      }
      return decode(value);
    }
  }

  /** Writes raw bytes to {@code key}, as another layout or a broken writer might. */
  static void write(String key, byte[] value) {
    try (StatefulRedisConnection<byte[], byte[]> c =
        TestRedis.standaloneClient().connect(ByteArrayCodec.INSTANCE, TestRedis.standaloneUri())) {
      c.sync().set(key.getBytes(StandardCharsets.UTF_8), value);
    }
  }

  static StoredState decode(byte[] value) {
    ByteBuffer b = ByteBuffer.wrap(value).order(ByteOrder.LITTLE_ENDIAN);
    int width = b.get() & 0xFF;
    double tokens = b.getDouble();
    double refilledAt = b.getDouble();
    double base = b.getDouble();
    long first = Integer.toUnsignedLong(b.getInt());
    double mark = 0;
    if (width == 20 || width == 24) {
      width -= 16;
      mark = b.getDouble();
    }
    if (width != 4 && width != 8 || b.remaining() % width != 0) {
      throw new IllegalStateException("not a state of layout 2: width " + width + ", "
          + b.remaining() + " bytes of entries");
    }
    long[] offsets = new long[b.remaining() / width];
    for (int i = 0; i < offsets.length; i++) {
      offsets[i] = width == 4 ? Integer.toUnsignedLong(b.getInt()) : (long) b.getDouble();
    }
    if (first > offsets.length) {
      throw new IllegalStateException("first entry " + first + " of " + offsets.length);
    }
    return new StoredState(width, tokens, refilledAt, base, first, mark, offsets);
  }
}

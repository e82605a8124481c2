package io.github.llmratelimiter.redis;

import io.github.llmratelimiter.core.Reason;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.output.CommandOutput;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import org.jspecify.annotations.Nullable;

/**
 * The reply of {@code acquire.lua}, read as Lettuce parses it, without a list, boxed numbers or
 * strings: {allowed, reason, level, remaining, retryAfterMs, resetAfterMs, retryable, reservation
 * id, remaining model tokens, model-token reset ms, the time the script ran, the id numbered for
 * the call}. Numbers arrive as
 * integers, or as the text of a double ({@code inf} and fractions), which saturates as a Java cast
 * does. A call that arrived after its deadline has the reason {@code EXPIRED}: {@link #expired},
 * and no {@link #reason}.
 */
final class AcquireReply extends CommandOutput<String, String, AcquireReply> {

  private static final Reason[] REASONS = Reason.values();
  private static final byte[][] REASON_NAMES = new byte[REASONS.length][];
  private static final byte[] INF = "inf".getBytes(StandardCharsets.US_ASCII);
  private static final byte[] EXPIRED = "EXPIRED".getBytes(StandardCharsets.US_ASCII);
  /** The position of the time the script ran, in its time units. */
  static final int NOW = 10;
  /** The position of the id numbered for the call (0: none), whatever the decision. */
  static final int NUMBERED_ID = 11;

  static {
    for (int i = 0; i < REASONS.length; i++) {
      REASON_NAMES[i] = REASONS[i].name().getBytes(StandardCharsets.US_ASCII);
    }
  }

  /** The reply's numbers by position; position 1 (the reason) is in {@link #reason}. */
  final long[] values = new long[12];

  @Nullable Reason reason;
  /** Whether the script ran after the call's deadline, and so charged nothing. */
  boolean expired;
  private int index;

  AcquireReply() {
    super(StringCodec.UTF8, null);
    output = this;
  }

  /** Takes an integer of the reply, at the next position. */
  @Override
  public void set(long integer) {
    values[index++] = integer;
  }

  /** Takes a string of the reply: the reason at position 1, else a number as text. */
  @Override
  public void set(@Nullable ByteBuffer bytes) {
    if (bytes == null) {
      throw new IllegalStateException("acquire.lua replied nil at position " + index);
    }
    if (index == 1) {
      if (same(bytes, EXPIRED)) {
        expired = true;
      } else {
        reason = reason(bytes);
      }
    } else {
      values[index] = number(bytes);
    }
    index++;
  }

  /** Checks that the reply has the expected number of values. */
  @Override
  public void multi(int count) {
    if (count != values.length) {
      throw new IllegalStateException(
          "acquire.lua replied " + count + " values, not " + values.length);
    }
  }

  private static Reason reason(ByteBuffer bytes) {
    for (int i = 0; i < REASONS.length; i++) {
      if (same(bytes, REASON_NAMES[i])) {
        return REASONS[i];
      }
    }
    return Reason.valueOf(StandardCharsets.US_ASCII.decode(bytes).toString());
  }

  private static boolean same(ByteBuffer bytes, byte[] ascii) {
    if (bytes.remaining() != ascii.length) {
      return false;
    }
    int p = bytes.position();
    for (int i = 0; i < ascii.length; i++) {
      if (bytes.get(p + i) != ascii[i]) {
        return false;
      }
    }
    return true;
  }

  /** A number a script sent as text: {@code inf} saturates, others are cut as a Java cast. */
  static long number(ByteBuffer bytes) {
    int n = bytes.remaining();
    int p = bytes.position();
    if (n >= 3 && bytes.get(p + n - 1) == INF[2] && bytes.get(p + n - 2) == INF[1]
        && bytes.get(p + n - 3) == INF[0]) {
      return bytes.get(p) == '-' ? Long.MIN_VALUE : Long.MAX_VALUE;
    }
    return (long) Double.parseDouble(StandardCharsets.US_ASCII.decode(bytes).toString());
  }
}

package io.github.llmratelimiter.redis;

import io.github.llmratelimiter.core.Reason;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.output.CommandOutput;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import org.jspecify.annotations.Nullable;

/**
 * The reply of {@code acquire.lua}, read as Lettuce parses it, without a list, boxed numbers or
 * strings: one bulk string of eleven little-endian doubles followed by the reason's name, giving
 * {allowed, reason, level, remaining, retryAfterMs, resetAfterMs, retryable, reservation id,
 * remaining model tokens, model-token reset ms, the time the script ran, the id numbered for the
 * call} by position. Each number is cut to a {@code long} as a Java cast does ({@code inf}
 * saturates). A call that arrived after its deadline has the reason {@code EXPIRED}: {@link
 * #expired}, and no {@link #reason}. A call on levels with quotas has the quota part after the
 * reason, behind a {@code |}: {@link #quotas} (read by {@link QuotaFrame#statuses}). Last, on
 * every reply but {@code EXPIRED}, {@value #FIGURES} doubles per level: what each of its
 * components admits after the decision, {@link #components}. A call whose upstream's id the root's
 * counter has reached (on a Cluster, acquire.lua's mode 2) has the reason {@code CONFLICT}:
 * {@link #conflict}, with the root's counter as the numbered id.
 */
final class AcquireReply extends CommandOutput<String, String, AcquireReply> {

  private static final Reason[] REASONS = Reason.values();
  private static final byte[][] REASON_NAMES = new byte[REASONS.length][];
  private static final byte[] EXPIRED = "EXPIRED".getBytes(StandardCharsets.US_ASCII);
  private static final byte[] CONFLICT = "CONFLICT".getBytes(StandardCharsets.US_ASCII);
  /** The position of the time the script ran, in its time units. */
  static final int NOW = 10;
  /** The position of the id numbered for the call (0: none), whatever the decision. */
  static final int NUMBERED_ID = 11;
  /** The bytes of the reply's numbers, before the reason. */
  private static final int NUMBERS = 11 * Double.BYTES;
  /**
   * The figures per level at the end of the reply: the window's remaining and reset ms, the
   * bucket's, the free slots, the model tokens' remaining and reset ms.
   */
  static final int FIGURES = 7;

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
  /** Whether the call charged nothing since the root's counter had reached the upstream's id. */
  boolean conflict;
  /**
   * What {@code upstream-acquire.lua} decided and charged at the call's upstream on its own slot
   * (a Cluster), or null: the charge a late reply's refund gives back there.
   */
  @Nullable UpstreamCharge upstream;
  /** Whether the reply may carry a quota part (the call had quotas). */
  private final boolean quotasExpected;
  /** The quota part of the reply, little-endian doubles; null when it has none. */
  @Nullable ByteBuffer quotas;
  private static final long[] NO_FIGURES = new long[0];
  /** The levels whose figures end the reply (0: a reply read without them). */
  private final int levels;
  /** Whether the figures are read into {@link #components}, or only skipped. */
  private final boolean figures;
  /**
   * Per level, root first, its {@value #FIGURES} figures, each cut to a {@code long} ({@code inf}:
   * {@link Long#MAX_VALUE}, a component the level does not have); empty when expired or read
   * without them.
   */
  long[] components = NO_FIGURES;

  /** The reply of a call without quotas, read without the levels' figures. */
  AcquireReply() {
    this(false, 0, false);
  }

  /**
   * The reply of a call on {@code levels} levels that may carry quotas (see {@link #quotas}),
   * its levels' figures read into {@link #components} when {@code figures} (a reservation reports
   * them; a plain decision skips them).
   */
  AcquireReply(boolean quotasExpected, int levels, boolean figures) {
    super(StringCodec.UTF8, null);
    output = this;
    this.quotasExpected = quotasExpected;
    this.levels = levels;
    this.figures = figures;
  }

  /** Takes the reply: the numbers, then the reason. */
  @Override
  public void set(@Nullable ByteBuffer bytes) {
    if (bytes == null || bytes.remaining() <= NUMBERS) {
      throw new IllegalStateException("acquire.lua replied "
          + (bytes == null ? "nil" : bytes.remaining() + " bytes") + ", not a decision");
    }
    int p = bytes.position();
    boolean little = bytes.order() == ByteOrder.LITTLE_ENDIAN;
    for (int i = 0, at = p; i < values.length; i++) {
      if (i != 1) {
        long bits = bytes.getLong(at);
        values[i] = (long) Double.longBitsToDouble(little ? bits : Long.reverseBytes(bits));
        at += Double.BYTES;
      }
    }
    int from = p + NUMBERS;
    int end = bytes.limit();
    if (same(bytes, from, end, EXPIRED)) {
      expired = true;
      return;
    }
    if (same(bytes, from, end, CONFLICT)) {
      conflict = true;
      return;
    }
    if (levels > 0) {
      int size = levels * FIGURES * Double.BYTES;
      if (end - from < size) {
        throw new IllegalStateException("acquire.lua replied " + bytes.remaining()
            + " bytes, without the figures of " + levels + " levels");
      }
      end -= size;
      if (figures) {
        components = new long[levels * FIGURES];
        for (int i = 0, at = end; i < components.length; i++, at += Double.BYTES) {
          long bits = bytes.getLong(at);
          components[i] = (long) Double.longBitsToDouble(little ? bits : Long.reverseBytes(bits));
        }
      }
    }
    if (quotasExpected) {
      for (int i = from; i < end; i++) {
        if (bytes.get(i) == '|') {
          ByteBuffer part = ByteBuffer.allocate(end - i - 1);
          part.put(bytes.duplicate().position(i + 1).limit(end)).flip();
          quotas = part;
          end = i;
          break;
        }
      }
    }
    reason = reason(bytes, from, end);
  }

  /** Rejects an integer: the reply is one string. */
  @Override
  public void set(long integer) {
    throw new IllegalStateException("acquire.lua replied the integer " + integer + ", not a decision");
  }

  /** Rejects an array: the reply is one string. */
  @Override
  public void multi(int count) {
    throw new IllegalStateException("acquire.lua replied an array of " + count + ", not a decision");
  }

  private static Reason reason(ByteBuffer bytes, int from, int end) {
    for (int i = 0; i < REASONS.length; i++) {
      if (same(bytes, from, end, REASON_NAMES[i])) {
        return REASONS[i];
      }
    }
    return Reason.valueOf(StandardCharsets.US_ASCII.decode(
        bytes.duplicate().position(from).limit(end)).toString());
  }

  /** Whether the bytes from {@code from} to {@code end} are {@code ascii}. */
  private static boolean same(ByteBuffer bytes, int from, int end, byte[] ascii) {
    if (end - from != ascii.length) {
      return false;
    }
    for (int i = 0; i < ascii.length; i++) {
      if (bytes.get(from + i) != ascii[i]) {
        return false;
      }
    }
    return true;
  }
}

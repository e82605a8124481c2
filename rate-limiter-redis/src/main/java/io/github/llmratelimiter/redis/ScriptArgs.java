package io.github.llmratelimiter.redis;

import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.protocol.CommandArgs;
import io.netty.buffer.ByteBuf;
import java.nio.charset.StandardCharsets;

/**
 * The arguments of one script call ({@code EVALSHA sha numkeys key... arg...}, or {@code EVAL} with
 * the source), written straight into Lettuce's output buffer: the keys as Lettuce's own key
 * arguments (so that a Cluster connection routes the call by its first key), then {@code ARGV[1]},
 * the call's numbers packed as little-endian doubles ({@code struct.unpack('<ddd...')} in the
 * scripts), then one argument per level, packed once per budget ({@link ScriptBudget#levelArg}).
 * No argument is formatted as text or held in an object of its own.
 */
final class ScriptArgs extends CommandArgs<String, String> {

  private static final byte[] CRLF = {'\r', '\n'};

  private final double[] numbers;
  private final byte[][] levels;
  private final int levelCount;

  /**
   * @param shaOrSource the script's SHA-1 (for {@code EVALSHA}) or source (for {@code EVAL})
   * @param keys the keys, all in one hash slot
   * @param numbers {@code ARGV[1]}
   * @param levels the levels' packed arguments, {@code ARGV[2]} on, from index 0
   * @param levelCount how many of {@code levels} to send
   */
  ScriptArgs(String shaOrSource, String[] keys, double[] numbers, byte[][] levels, int levelCount) {
    super(StringCodec.UTF8);
    add(shaOrSource);
    add(keys.length);
    for (String key : keys) {
      addKey(key);
    }
    this.numbers = numbers;
    this.levels = levels;
    this.levelCount = levelCount;
  }

  /** The number of arguments: Lettuce's own, then {@code ARGV[1]} and one per level. */
  @Override
  public int count() {
    return super.count() + 1 + levelCount;
  }

  /** Writes every argument as a bulk string: Lettuce's own, then the packed ones. */
  @Override
  public void encode(ByteBuf buf) {
    super.encode(buf);
    writeBulkLength(buf, 8 * numbers.length);
    for (double d : numbers) {
      buf.writeLongLE(Double.doubleToRawLongBits(d));
    }
    buf.writeBytes(CRLF);
    for (int i = 0; i < levelCount; i++) {
      buf.writeBytes(levels[i]);
    }
  }

  /** A bulk string argument of little-endian doubles, whole ({@code $<len>\r\n<bytes>\r\n}). */
  static byte[] bulkOfDoubles(double[] values) {
    byte[] length = ("$" + 8 * values.length + "\r\n").getBytes(StandardCharsets.US_ASCII);
    byte[] bulk = new byte[length.length + 8 * values.length + 2];
    System.arraycopy(length, 0, bulk, 0, length.length);
    int at = length.length;
    for (double d : values) {
      long bits = Double.doubleToRawLongBits(d);
      for (int b = 0; b < 8; b++) {
        bulk[at++] = (byte) (bits >>> (8 * b));
      }
    }
    bulk[at++] = '\r';
    bulk[at] = '\n';
    return bulk;
  }

  /** A bulk string argument of a string's UTF-8 bytes, whole ({@code $<len>\r\n<bytes>\r\n}). */
  static byte[] bulkOfString(String value) {
    byte[] text = value.getBytes(StandardCharsets.UTF_8);
    byte[] length = ("$" + text.length + "\r\n").getBytes(StandardCharsets.US_ASCII);
    byte[] bulk = new byte[length.length + text.length + 2];
    System.arraycopy(length, 0, bulk, 0, length.length);
    System.arraycopy(text, 0, bulk, length.length, text.length);
    bulk[bulk.length - 2] = '\r';
    bulk[bulk.length - 1] = '\n';
    return bulk;
  }

  /** Writes {@code $<length>\r\n}, the head of a bulk string. */
  private static void writeBulkLength(ByteBuf buf, int length) {
    buf.writeByte('$');
    int digits = 1;
    for (int rest = length / 10; rest > 0; rest /= 10) {
      digits *= 10;
    }
    for (; digits > 0; digits /= 10) {
      buf.writeByte('0' + length / digits % 10);
    }
    buf.writeBytes(CRLF);
  }
}

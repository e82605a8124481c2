package io.github.llmratelimiter.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;

import io.github.llmratelimiter.core.Reason;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** The script call's wire form and the reading of acquire.lua's reply. */
class ScriptArgsTests {

  @Test
  void argumentsAreTheShaTheKeysThenPackedNumbersAndLevels() {
    byte[] level = ScriptArgs.bulkOfDoubles(new double[] {7, 0.5});
    byte[][] levels = {level, level, null};
    ScriptArgs args = new ScriptArgs("abc", new String[] {"k1", "k2"}, new double[] {Double.NaN, 1000},
        levels, 2);
    assertThat(args.count()).isEqualTo(2 + 2 + 1 + 2);
    ByteBuf buf = Unpooled.buffer();
    args.encode(buf);
    byte[] wire = new byte[buf.readableBytes()];
    buf.readBytes(wire);
    String head = "$3\r\nabc\r\n$1\r\n2\r\n$2\r\nk1\r\n$2\r\nk2\r\n$16\r\n";
    assertThat(new String(wire, 0, head.length(), StandardCharsets.ISO_8859_1)).isEqualTo(head);
    ByteBuffer numbers = ByteBuffer.wrap(wire, head.length(), 16).order(ByteOrder.LITTLE_ENDIAN);
    assertThat(numbers.getDouble()).isNaN();
    assertThat(numbers.getDouble()).isEqualTo(1000.0);
    String levelHead = "\r\n$16\r\n";
    assertThat(new String(wire, head.length() + 16, levelHead.length(), StandardCharsets.ISO_8859_1))
        .isEqualTo(levelHead);
    assertThat(wire).hasSize(head.length() + 16 + 2 + 2 * level.length);
    ByteBuffer packed = ByteBuffer.wrap(level, 5, 16).order(ByteOrder.LITTLE_ENDIAN);
    assertThat(packed.getDouble()).isEqualTo(7.0);
    assertThat(packed.getDouble()).isEqualTo(0.5);
    assertThat(args.getFirstEncodedKey()).isEqualTo(StandardCharsets.UTF_8.encode("k1"));
  }

  @Test
  void packedNumbersOfAnyLengthHaveTheirLengthWritten() {
    for (int count : new int[] {1, 2, 12, 13, 130}) {
      ScriptArgs args = new ScriptArgs("s", new String[0], new double[count], new byte[0][], 0);
      ByteBuf buf = Unpooled.buffer();
      args.encode(buf);
      String wire = buf.toString(StandardCharsets.ISO_8859_1);
      String head = "$1\r\ns\r\n$1\r\n0\r\n$" + 8 * count + "\r\n";
      assertThat(wire).startsWith(head).hasSize(head.length() + 8 * count + 2).endsWith("\r\n");
    }
  }

  @Test
  void aStringArgumentIsItsUtf8BytesWithTheirLength() {
    assertThat(new String(ScriptArgs.bulkOfString(""), StandardCharsets.ISO_8859_1))
        .isEqualTo("$0\r\n\r\n");
    assertThat(new String(ScriptArgs.bulkOfString("w-1é"), StandardCharsets.UTF_8))
        .isEqualTo("$5\r\nw-1é\r\n");
  }

  @Test
  void aReplyIsReadIntoNumbersAndAReasonWithInfinitySaturating() {
    AcquireReply r = new AcquireReply();
    r.set(reply("BURST_LIMIT", 0, 2, Double.POSITIVE_INFINITY, 2.5, Double.NEGATIVE_INFINITY, 0, 0,
        1.0000000000000001e+20, 7, 1_764_547_200_123_456L, 4_503_599_627_370_497L));
    assertThat(r.get()).isSameAs(r);
    assertThat(r.reason).isEqualTo(Reason.BURST_LIMIT);
    assertThat(r.expired).isFalse();
    assertThat(r.values).containsExactly(0, 0, 2, Long.MAX_VALUE, 2, Long.MIN_VALUE, 0, 0,
        Long.MAX_VALUE, 7, 1_764_547_200_123_456L, 4_503_599_627_370_497L);
  }

  @Test
  void aReplyIsReadWhateverItsBuffersByteOrderAndPosition() {
    ByteBuffer packed = reply("TPM_LIMIT", 0, 3, 0, 1500, 60_000, 1, 0, 12, 59_000, 42, 7);
    byte[] wire = new byte[5 + packed.remaining()];
    packed.get(wire, 5, wire.length - 5);
    ByteBuffer bigEndian = ByteBuffer.wrap(wire).position(5); // Netty's default order
    AcquireReply r = new AcquireReply();
    r.set(bigEndian);
    assertThat(r.reason).isEqualTo(Reason.TPM_LIMIT);
    assertThat(r.values).containsExactly(0, 0, 3, 0, 1500, 60_000, 1, 0, 12, 59_000, 42, 7);
  }

  @Test
  void aCallThatRanAfterItsDeadlineReadsAsExpiredWithoutAReason() {
    AcquireReply r = new AcquireReply();
    r.set(reply("EXPIRED", 0, 1, 0, 0, 0, 0, 0, 0, 0, 42, 0));
    assertThat(r.expired).isTrue();
    assertThat(r.reason).isNull();
    assertThat(r.values[AcquireReply.NOW]).isEqualTo(42);
  }

  @Test
  void aReplyOfAnotherShapeIsRejected() {
    assertThatIllegalStateException().isThrownBy(() -> new AcquireReply().multi(7))
        .withMessageContaining("7");
    assertThatIllegalStateException().isThrownBy(() -> new AcquireReply().set(7))
        .withMessageContaining("7");
    assertThatIllegalStateException().isThrownBy(() -> new AcquireReply().set(ascii("OK")))
        .withMessageContaining("2 bytes");
    assertThatIllegalStateException().isThrownBy(() -> new AcquireReply().set((ByteBuffer) null))
        .withMessageContaining("nil");
  }

  /** A reply as acquire.lua packs it: the numbers but the reason's, then the reason. */
  private static ByteBuffer reply(String reason, double... numbers) {
    ByteBuffer b = ByteBuffer.allocate(8 * numbers.length + reason.length())
        .order(ByteOrder.LITTLE_ENDIAN);
    for (double d : numbers) {
      b.putDouble(d);
    }
    b.put(reason.getBytes(StandardCharsets.US_ASCII));
    return b.flip();
  }

  private static ByteBuffer ascii(String s) {
    return ByteBuffer.wrap(s.getBytes(StandardCharsets.US_ASCII));
  }
}

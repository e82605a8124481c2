package io.github.llmratelimiter.autoconfigure.servlet;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.Test;

/**
 * The limiter's peek and the handler's reads see the same bytes in either order, with the length
 * declared or not, in reads of any size; a body past the limit is not kept but still read whole.
 */
class PeekableBodyTests {

  private static final byte[] BODY =
      "{\"model\":\"gpt-4o\",\"messages\":[{\"role\":\"user\",\"content\":\"héllo\"}]}"
          .getBytes(StandardCharsets.UTF_8);

  /** A stream that hands out at most {@code chunk} bytes a read, as a socket may. */
  private static InputStream trickle(byte[] bytes, int chunk) {
    return new ByteArrayInputStream(bytes) {
      @Override
      public synchronized int read(byte[] b, int off, int len) {
        return super.read(b, off, Math.min(len, chunk));
      }
    };
  }

  private static byte[] readAll(PeekableBody body, int chunk) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    byte[] b = new byte[chunk];
    for (int n = body.read(b, 0, chunk); n >= 0; n = body.read(b, 0, chunk)) {
      out.write(b, 0, n);
    }
    return out.toByteArray();
  }

  @ParameterizedTest
  @CsvSource({"1, 1, true", "7, 3, true", "1000, 1000, true", "5, 64, false", "3, 2, false"})
  void peekFirstThenTheHandlerReadsTheSameBytes(int socketChunk, int readChunk, boolean declared)
      throws IOException {
    PeekableBody body = new PeekableBody(trickle(BODY, socketChunk), 1024, declared ? BODY.length : -1);

    assertThat(body.peek()).isEqualTo(BODY);
    assertThat(body.peek()).isSameAs(body.peek());
    assertThat(readAll(body, readChunk)).isEqualTo(BODY);
    assertThat(body.finished()).isTrue();
  }

  @ParameterizedTest
  @CsvSource({"1, 1, true", "7, 3, false", "1000, 5, true"})
  void theHandlerReadsFirstPartlyOrWhollyThenThePeekSeesTheWholeBody(
      int socketChunk, int readChunk, boolean declared) throws IOException {
    PeekableBody body = new PeekableBody(trickle(BODY, socketChunk), 1024, declared ? BODY.length : -1);
    byte[] first = new byte[readChunk];
    int n = body.read(first, 0, readChunk);

    assertThat(body.peek()).isEqualTo(BODY);
    ByteArrayOutputStream all = new ByteArrayOutputStream();
    all.write(first, 0, n);
    all.write(readAll(body, 16));
    assertThat(all.toByteArray()).isEqualTo(BODY);
  }

  @ParameterizedTest
  @CsvSource({"10, true", "10, false", "64, false"})
  void aBodyPastTheLimitIsNotKeptButTheHandlerStillReadsAllOfIt(int max, boolean peekFirst)
      throws IOException {
    PeekableBody body = new PeekableBody(trickle(BODY, 4), max, -1);
    if (peekFirst) {
      assertThat(body.peek()).isNull();
    }
    assertThat(readAll(body, 5)).isEqualTo(BODY);
    assertThat(body.peek()).isNull();
    assertThat(body.finished()).isTrue();
  }

  @Test
  void aBodyOfExactlyTheLimitIsKept() {
    assertThat(new PeekableBody(trickle(BODY, 3), BODY.length, -1).peek()).isEqualTo(BODY);
    assertThat(new PeekableBody(trickle(BODY, 3), BODY.length - 1, -1).peek()).isNull();
  }

  @Test
  void anEmptyBodyIsEmpty() throws IOException {
    PeekableBody body = new PeekableBody(new ByteArrayInputStream(new byte[0]), 16, 0);
    assertThat(body.peek()).isEmpty();
    assertThat(body.read(new byte[4], 0, 4)).isEqualTo(-1);
  }

  @Test
  void aFailedPeekIsReportedToTheHandlersRead() {
    InputStream broken = new InputStream() {
      @Override
      public int read() throws IOException {
        throw new IOException("connection reset");
      }
    };
    PeekableBody body = new PeekableBody(broken, 16, -1);
    assertThat(body.peek()).isNull();
    assertThatThrownBy(() -> body.read(new byte[4], 0, 4)).hasMessage("connection reset");
  }

  @ParameterizedTest
  @CsvSource({"0, false, true", "1, true, true", "4096, true, true",
      "0, false, false", "1, true, false", "4096, true, false"})
  void aBodyPastTheLimitIsTooLongAndTheHandlerStillReadsItWhole(int past, boolean tooLong, boolean kept)
      throws IOException {
    int max = 64;
    byte[] bytes = new byte[max + past];
    java.util.Arrays.fill(bytes, (byte) 'x');
    // kept: the limiter checks before the handler reads; not kept: the handler reads first and the
    // body streams through, measured once read to its end
    PeekableBody body = new PeekableBody(trickle(bytes, 5), max, -1, () -> kept);
    if (kept) {
      assertThat(body.tooLong()).isEqualTo(tooLong);
      assertThat(body.peek()).isEqualTo(tooLong ? null : bytes);
    }
    assertThat(readAll(body, 7)).isEqualTo(bytes);
    assertThat(body.tooLong()).isEqualTo(tooLong);
    assertThat(body.finished()).isTrue();
    if (!kept) {
      assertThat(body.peek()).isNull();
    }
  }
}

package io.github.llmratelimiter.autoconfigure.reactive;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.springframework.core.io.buffer.DataBufferLimitException;
import org.springframework.core.io.buffer.NettyDataBuffer;
import org.springframework.core.io.buffer.NettyDataBufferFactory;

/**
 * A request body read into one array: the bytes in order and in an array of their length, each
 * buffer released once read, a body past the limit stopped with the exception {@code
 * DataBufferUtils.join} raises, and a declared length that holds no more than a first array
 * before its bytes arrive.
 */
class BodyBytesTests {

  private final NettyDataBufferFactory buffers = new NettyDataBufferFactory(Unpooled.buffer().alloc());

  private NettyDataBuffer buffer(String text) {
    return buffers.wrap(Unpooled.copiedBuffer(text, StandardCharsets.UTF_8));
  }

  @Test
  void readsTheBuffersInOrderReleasingEachAndTrimsToTheirLength() {
    BodyBytes body = new BodyBytes(100, 1_000);
    NettyDataBuffer first = buffer("{\"model\":");
    NettyDataBuffer second = buffer("\"gpt-4o\"}");

    body.add(first);
    body.add(second);

    assertThat(new String(body.bytes(), StandardCharsets.UTF_8)).isEqualTo("{\"model\":\"gpt-4o\"}");
    assertThat(first.getNativeBuffer().refCnt()).isZero();
    assertThat(second.getNativeBuffer().refCnt()).isZero();
  }

  @Test
  void aBodyLongerThanDeclaredOrUndeclaredGrowsUpToTheLimit() {
    BodyBytes declaredShort = new BodyBytes(2, 10);
    declaredShort.add(buffer("abcdef"));
    declaredShort.add(buffer("ghij"));
    assertThat(declaredShort.bytes()).hasSize(10);

    BodyBytes undeclared = new BodyBytes(-1, 10);
    assertThat(undeclared.bytes()).isEmpty();
    undeclared.add(buffer("abc"));
    assertThat(new String(undeclared.bytes(), StandardCharsets.UTF_8)).isEqualTo("abc");
  }

  @Test
  void aBodyPastTheLimitStopsWithTheLimitExceptionAndReleasesTheBufferThatPassedIt() {
    BodyBytes body = new BodyBytes(-1, 10);
    body.add(buffer("0123456789")); // exactly the limit
    NettyDataBuffer past = buffer("!");

    assertThatThrownBy(() -> body.add(past)).isInstanceOf(DataBufferLimitException.class);
    ByteBuf nativeBuffer = past.getNativeBuffer();
    assertThat(nativeBuffer.refCnt()).isZero();
  }

  @Test
  void aDeclaredLengthHoldsNoMoreThanTheFirstArrayBeforeItsBytesArrive() {
    BodyBytes body = new BodyBytes(4L * 1024 * 1024, 4 * 1024 * 1024);

    assertThat(body.capacity()).isEqualTo(BodyBytes.FIRST_ARRAY);
    assertThat(new BodyBytes(300, 4 * 1024 * 1024).capacity()).isEqualTo(300);
    assertThat(new BodyBytes(300, 100).capacity()).isEqualTo(100);
  }
}

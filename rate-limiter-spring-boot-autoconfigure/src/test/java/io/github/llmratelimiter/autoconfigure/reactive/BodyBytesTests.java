package io.github.llmratelimiter.autoconfigure.reactive;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.netty.buffer.Unpooled;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.core.io.buffer.DataBufferLimitException;
import org.springframework.core.io.buffer.NettyDataBuffer;
import org.springframework.core.io.buffer.NettyDataBufferFactory;
import reactor.core.publisher.Flux;

/**
 * A request body read into one array: the bytes in order and in an array of their length, each
 * buffer released exactly once (also the one that passes the limit, and with the connection holding
 * a reference of its own, as Reactor Netty's does), a body past the limit stopped with the
 * exception {@code DataBufferUtils.join} raises, and a declared length that holds no more than a first array
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
  void aBodyPastTheLimitStopsWithTheLimitExceptionAndLeavesTheBufferThatPassedItToTheRead() {
    BodyBytes body = new BodyBytes(-1, 10);
    body.add(buffer("0123456789")); // exactly the limit
    NettyDataBuffer past = buffer("!");

    assertThatThrownBy(() -> body.add(past)).isInstanceOf(DataBufferLimitException.class);
    // not released by add: the read's discard hook releases what its accumulator refused
    assertThat(past.getNativeBuffer().refCnt()).isEqualTo(1);
  }

  /** Buffers as Reactor Netty hands them on: retained, so the connection still holds one reference. */
  private List<NettyDataBuffer> retained(String... parts) {
    List<NettyDataBuffer> list = new ArrayList<>();
    for (String p : parts) {
      NettyDataBuffer b = buffer(p);
      b.getNativeBuffer().retain();
      list.add(b);
    }
    return list;
  }

  @Test
  void theReadReleasesEveryBufferExactlyOnceWhetherItEndsOrStopsPastTheLimit() {
    List<NettyDataBuffer> whole = retained("{\"model\":", "\"gpt-4o\"}");
    BodyBytes read = BodyBytes.read(Flux.fromIterable(whole), -1, 100).block();
    assertThat(new String(read.bytes(), StandardCharsets.UTF_8)).isEqualTo("{\"model\":\"gpt-4o\"}");
    for (NettyDataBuffer b : whole) {
      assertThat(b.getNativeBuffer().refCnt()).isEqualTo(1); // the connection's reference is left
    }

    // past the limit on the second buffer; the third, still held upstream, is discarded
    List<NettyDataBuffer> tooLong = retained("0123456789", "abcdefghij", "xyz");
    assertThatThrownBy(() -> BodyBytes.read(Flux.fromIterable(tooLong), -1, 15).block())
        .isInstanceOf(DataBufferLimitException.class);
    assertThat(tooLong.get(0).getNativeBuffer().refCnt()).isEqualTo(1); // read and released once
    assertThat(tooLong.get(1).getNativeBuffer().refCnt()).isEqualTo(1); // refused, discarded once
    assertThat(tooLong.get(2).getNativeBuffer().refCnt()).isEqualTo(1); // discarded once
  }

  @Test
  void aDeclaredLengthHoldsNoMoreThanTheFirstArrayBeforeItsBytesArrive() {
    BodyBytes body = new BodyBytes(4L * 1024 * 1024, 4 * 1024 * 1024);

    assertThat(body.capacity()).isEqualTo(BodyBytes.FIRST_ARRAY);
    assertThat(new BodyBytes(300, 4 * 1024 * 1024).capacity()).isEqualTo(300);
    assertThat(new BodyBytes(300, 100).capacity()).isEqualTo(100);
  }
}

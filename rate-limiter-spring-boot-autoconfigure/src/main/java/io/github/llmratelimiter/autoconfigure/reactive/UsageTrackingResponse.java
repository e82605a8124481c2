package io.github.llmratelimiter.autoconfigure.reactive;

import io.github.llmratelimiter.gateway.ModelTokenReservation;
import io.github.llmratelimiter.gateway.ModelUsage;
import io.github.llmratelimiter.gateway.RateLimitContext;
import io.github.llmratelimiter.gateway.RateLimitGateway;

import io.github.llmratelimiter.gateway.internal.UsageScanner;
import java.nio.ByteBuffer;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Publisher;
import org.springframework.core.io.buffer.DataBuffer;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.MediaType;
import org.springframework.http.server.reactive.ServerHttpResponseDecorator;
import org.springframework.web.server.ServerWebExchange;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.SignalType;

/**
 * A response that releases the slots its request holds on limits on calls in flight, and settles
 * the model tokens it reserved, once it is over, the way the
 * servlet adapter's usage filter does, without blocking ({@link RateLimitGateway#settleAsync}):
 *
 * <ul>
 *   <li>the usage its body reports (a JSON body's {@code usage}, or the last {@code data:} event of
 *       a {@code text/event-stream} that carries one), read by a {@link UsageScanner} as the body
 *       is written, replaces the estimate;
 *   <li>without usage, a status of 400 or above, or an error before the response was committed, is
 *       refunded (the upstream call failed; its RPM slot stays charged);
 *   <li>otherwise the estimate stays charged: a client that goes away (a cancel), before the first
 *       byte of the response or mid-stream, leaves a call the upstream bills all the same.
 * </ul>
 *
 * <p>A call that went to an upstream ({@code ratelimiter.upstreams}) reports the response to it
 * when it is over ({@link RateLimitGateway#reportAsync(RateLimitContext, int,
 * java.util.function.Function)}): the status and the headers the handler wrote (for example copied
 * from the provider's response), read by {@link io.github.llmratelimiter.gateway.ProviderHeaders}
 * (OpenAI's and Azure OpenAI's {@code x-ratelimit-*} of requests and tokens, {@code retry-after},
 * {@code retry-after-ms}); a 429 closes the upstream until its retry time.
 *
 * <p>The body passes through unchanged, chunk by chunk; it is read only when the request reserved
 * model tokens by the time the response is written.
 */
final class UsageTrackingResponse extends ServerHttpResponseDecorator {

  private final ServerWebExchange exchange;
  private final RateLimitGateway gateway;
  private volatile @Nullable UsageScanner scanner;
  /** Whether the scanner was given the content type (it reads it on the first bytes only). */
  private boolean typed;
  /** Where a buffer's bytes are copied for the scanner, reused from buffer to buffer. */
  private byte[] scratch = new byte[0];
  private ByteBuffer scratchView = ByteBuffer.wrap(scratch);
  /** Hands each buffer to the scanner: one consumer for the whole body. */
  private final Consumer<DataBuffer> scan = this::scan;

  UsageTrackingResponse(ServerWebExchange exchange, RateLimitGateway gateway) {
    super(exchange.getResponse());
    this.exchange = exchange;
    this.gateway = gateway;
  }

  @Override
  public Mono<Void> writeWith(Publisher<? extends DataBuffer> body) {
    if (scanner() == null) {
      return super.writeWith(body);
    }
    // a Mono stays a Mono: the server writes a single buffer with its known length
    return super.writeWith(body instanceof Mono<? extends DataBuffer> mono
        ? mono.doOnNext(scan)
        : Flux.from(body).doOnNext(scan));
  }

  @Override
  public Mono<Void> writeAndFlushWith(Publisher<? extends Publisher<? extends DataBuffer>> body) {
    if (scanner() == null) {
      return super.writeAndFlushWith(body);
    }
    return super.writeAndFlushWith(
        Flux.from(body).map(chunk -> Flux.from(chunk).doOnNext(scan)));
  }

  /** The scanner of the body, created when the request has model tokens to settle. */
  private @Nullable UsageScanner scanner() {
    ModelTokenReservation reservation = reservation();
    if (reservation == null || reservation.settled()) {
      return null;
    }
    UsageScanner s = scanner;
    if (s == null) {
      s = gateway.usageScanner();
      scanner = s;
    }
    return s;
  }

  private @Nullable ModelTokenReservation reservation() {
    RateLimitContext context = ReactiveContexts.find(exchange);
    return context == null ? null : context.modelTokens();
  }

  /** Hands a buffer's readable bytes to the scanner, through a copy reused from buffer to buffer. */
  private void scan(DataBuffer buffer) {
    UsageScanner s = scanner;
    if (s == null) {
      return;
    }
    String type = null;
    if (!typed) {
      MediaType contentType = getHeaders().getContentType();
      type = contentType == null ? null : contentType.toString();
      typed = true;
    }
    int length = buffer.readableByteCount();
    if (length > scratch.length) {
      scratch = new byte[Math.max(length, 2 * scratch.length)];
      scratchView = ByteBuffer.wrap(scratch);
    }
    buffer.toByteBuffer(buffer.readPosition(), scratchView, 0, length);
    s.accept(type, scratch, 0, length);
  }

  /**
   * Ends the request's call once its response is over however it ended (completed, failed, or
   * cancelled by a client that disconnected): settles its model tokens and releases its slots
   * ({@link RateLimitGateway#finishAsync}); nothing when it holds neither or both are done.
   *
   * @param signal how the filter chain ended
   */
  void settle(SignalType signal) {
    RateLimitContext context = ReactiveContexts.find(exchange);
    if (context == null) {
      return;
    }
    HttpStatusCode status = getStatusCode();
    if (context.reports()) {
      gateway.reportAsync(context, status == null ? 200 : status.value(), getHeaders()::get);
    }
    if (!context.open()) {
      return;
    }
    UsageScanner s = scanner;
    ModelUsage usage = s == null ? null : s.modelUsage();
    boolean failedBeforeCommit = signal == SignalType.ON_ERROR && !isCommitted();
    gateway.finishUsageAsync(context, usage, failedBeforeCommit || (status != null && status.value() >= 400));
  }
}

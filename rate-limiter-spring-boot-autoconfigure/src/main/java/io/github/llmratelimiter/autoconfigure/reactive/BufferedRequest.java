package io.github.llmratelimiter.autoconfigure.reactive;

import org.springframework.core.io.buffer.DataBuffer;
import org.springframework.core.io.buffer.DataBufferFactory;
import org.springframework.http.server.reactive.ServerHttpRequest;
import org.springframework.http.server.reactive.ServerHttpRequestDecorator;
import reactor.core.publisher.Flux;

/**
 * A request whose body the limiter read whole: the handler (or a proxy) reads the same bytes, as
 * often as it subscribes, with the request's headers unchanged.
 */
final class BufferedRequest extends ServerHttpRequestDecorator {

  private final byte[] body;
  private final DataBufferFactory buffers;

  BufferedRequest(ServerHttpRequest request, byte[] body, DataBufferFactory buffers) {
    super(request);
    this.body = body;
    this.buffers = buffers;
  }

  @Override
  public Flux<DataBuffer> getBody() {
    return body.length == 0 ? Flux.empty() : Flux.defer(() -> Flux.just(buffers.wrap(body)));
  }
}

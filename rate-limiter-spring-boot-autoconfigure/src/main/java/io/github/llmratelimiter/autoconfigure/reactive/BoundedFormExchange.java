package io.github.llmratelimiter.autoconfigure.reactive;

import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.springframework.core.ResolvableType;
import org.springframework.core.io.buffer.DataBuffer;
import org.springframework.core.io.buffer.DataBufferLimitException;
import org.springframework.core.io.buffer.DataBufferUtils;
import org.springframework.http.MediaType;
import org.springframework.http.codec.FormHttpMessageReader;
import org.springframework.http.codec.multipart.DefaultPartHttpMessageReader;
import org.springframework.http.codec.multipart.MultipartHttpMessageReader;
import org.springframework.http.codec.multipart.Part;
import org.springframework.http.server.reactive.ServerHttpRequest;
import org.springframework.http.server.reactive.ServerHttpRequestDecorator;
import org.springframework.util.CollectionUtils;
import org.springframework.util.LinkedMultiValueMap;
import org.springframework.util.MultiValueMap;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.ServerWebExchangeDecorator;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * An exchange whose form body ({@code application/x-www-form-urlencoded} or {@code multipart/*}) is
 * parsed at most once, from at most {@code max-body} bytes: past them the parse fails with a
 * {@link DataBufferLimitException} as soon as the limit is passed, and nothing more is read. The
 * handler reads the same parsed form; {@link #cleanupMultipart} deletes the parts parsed here.
 */
final class BoundedFormExchange extends ServerWebExchangeDecorator {

  private static final ResolvableType FORM =
      ResolvableType.forClassWithGenerics(MultiValueMap.class, String.class, String.class);
  private static final ResolvableType PARTS =
      ResolvableType.forClassWithGenerics(MultiValueMap.class, String.class, Part.class);

  private final Mono<MultiValueMap<String, String>> form;
  private final Mono<MultiValueMap<String, Part>> parts;
  private volatile boolean partsRead;

  /** The readers of form bodies up to a size, shared by every request. */
  record Readers(long maxBody, FormHttpMessageReader form, MultipartHttpMessageReader multipart) {

    /** Readers that accept {@code maxBody} bytes in all (the form's fields in memory). */
    static Readers of(long maxBody) {
      FormHttpMessageReader form = new FormHttpMessageReader();
      form.setMaxInMemorySize((int) maxBody);
      return new Readers(maxBody, form, new MultipartHttpMessageReader(new DefaultPartHttpMessageReader()));
    }
  }

  BoundedFormExchange(ServerWebExchange exchange, Readers readers) {
    super(exchange);
    ServerHttpRequest request = exchange.getRequest();
    ServerHttpRequest bounded = new ServerHttpRequestDecorator(request) {
      @Override
      public Flux<DataBuffer> getBody() {
        return bounded(super.getBody(), readers.maxBody());
      }
    };
    MediaType type = request.getHeaders().getContentType();
    boolean multipart = type != null && "multipart".equalsIgnoreCase(type.getType());
    this.form = multipart ? Mono.just(CollectionUtils.unmodifiableMultiValueMap(new LinkedMultiValueMap<>()))
        : readers.form().readMono(FORM, bounded, Map.of()).cache();
    this.parts = !multipart ? Mono.just(CollectionUtils.unmodifiableMultiValueMap(new LinkedMultiValueMap<>()))
        : readers.multipart().readMono(PARTS, bounded, Map.of())
            .doOnSubscribe(s -> partsRead = true).cache();
  }

  /** A body that fails with a {@link DataBufferLimitException} once it passes {@code max} bytes. */
  private static Flux<DataBuffer> bounded(Flux<DataBuffer> body, long max) {
    return Flux.defer(() -> {
      long[] read = {0};
      return body.handle((buffer, sink) -> {
        read[0] += buffer.readableByteCount();
        if (read[0] > max) {
          DataBufferUtils.release(buffer);
          sink.error(new DataBufferLimitException("the body passed " + max + " bytes"));
        } else {
          sink.next(buffer);
        }
      });
    });
  }

  @Override
  public Mono<MultiValueMap<String, String>> getFormData() {
    return form;
  }

  @Override
  public Mono<MultiValueMap<String, Part>> getMultipartData() {
    return parts;
  }

  @Override
  public Mono<Void> cleanupMultipart() {
    if (!partsRead) {
      return Mono.empty();
    }
    return parts.onErrorComplete().flatMapIterable(Map::values)
        .flatMapIterable(Function.<List<Part>>identity())
        .flatMap(part -> part.delete().onErrorComplete())
        .then();
  }
}

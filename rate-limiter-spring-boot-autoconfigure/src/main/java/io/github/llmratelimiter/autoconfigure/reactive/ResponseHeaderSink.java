package io.github.llmratelimiter.autoconfigure.reactive;

import io.github.llmratelimiter.gateway.RateLimitHeaders;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.util.AsciiString;
import java.util.Map;
import java.util.function.BiConsumer;
import org.jspecify.annotations.Nullable;
import org.springframework.http.server.reactive.AbstractServerHttpResponse;
import org.springframework.http.server.reactive.ServerHttpResponse;
import org.springframework.util.ClassUtils;
import reactor.netty.http.server.HttpServerResponse;

/**
 * Where the limiter writes a response's headers: on Reactor Netty, straight into the server's
 * response headers, under names Netty has validated and hashed once ({@link AsciiString}), which it
 * also encodes by copying their bytes; elsewhere through the response's {@code HttpHeaders}. The
 * headers written are the same either way: Spring's headers of a Reactor Netty response are a view
 * of the server's own.
 */
final class ResponseHeaderSink {

  /** Spring's response on Reactor Netty, where Reactor Netty is: its headers are the server's. */
  private static final @Nullable Class<?> REACTOR_RESPONSE = ClassUtils.isPresent(
      "reactor.netty.http.server.HttpServerResponse", ResponseHeaderSink.class.getClassLoader())
      ? ClassUtils.resolveClassName(
          "org.springframework.http.server.reactive.ReactorServerHttpResponse",
          ResponseHeaderSink.class.getClassLoader()) : null;

  private ResponseHeaderSink() {}

  /**
   * The sink of a response's headers.
   *
   * @param response the exchange's response: the limiter's own decorator of the server's, or the
   *     server's
   * @return a sink of header names and values, each set (replacing any value it had)
   */
  static BiConsumer<String, String> of(ServerHttpResponse response) {
    ServerHttpResponse server = response instanceof UsageTrackingResponse tracking
        ? tracking.getDelegate() : response;
    if (REACTOR_RESPONSE != null && server.getClass() == REACTOR_RESPONSE) {
      BiConsumer<String, String> netty = Netty.of((AbstractServerHttpResponse) server);
      if (netty != null) {
        return netty;
      }
    }
    return response.getHeaders()::set;
  }

  /** The Reactor Netty side, loaded only where Reactor Netty is. */
  private static final class Netty {

    /** The limiter's header names, as Netty's. */
    private static final Map<String, AsciiString> NAMES = Map.of(
        RateLimitHeaders.POLICY, AsciiString.cached(RateLimitHeaders.POLICY),
        RateLimitHeaders.RATE_LIMIT, AsciiString.cached(RateLimitHeaders.RATE_LIMIT),
        RateLimitHeaders.LIMIT_REQUESTS, AsciiString.cached(RateLimitHeaders.LIMIT_REQUESTS),
        RateLimitHeaders.REMAINING_REQUESTS, AsciiString.cached(RateLimitHeaders.REMAINING_REQUESTS),
        RateLimitHeaders.RESET_REQUESTS, AsciiString.cached(RateLimitHeaders.RESET_REQUESTS),
        RateLimitHeaders.LIMIT_TOKENS, AsciiString.cached(RateLimitHeaders.LIMIT_TOKENS),
        RateLimitHeaders.REMAINING_TOKENS, AsciiString.cached(RateLimitHeaders.REMAINING_TOKENS),
        RateLimitHeaders.RESET_TOKENS, AsciiString.cached(RateLimitHeaders.RESET_TOKENS),
        RateLimitHeaders.RETRY_AFTER, AsciiString.cached(RateLimitHeaders.RETRY_AFTER),
        RateLimitHeaders.RETRY_AFTER_MS, AsciiString.cached(RateLimitHeaders.RETRY_AFTER_MS));

    static @Nullable BiConsumer<String, String> of(AbstractServerHttpResponse response) {
      if (!(response.getNativeResponse() instanceof HttpServerResponse server)) {
        return null;
      }
      HttpHeaders headers = server.responseHeaders();
      return (name, value) -> {
        AsciiString known = NAMES.get(name);
        headers.set(known != null ? known : name, value);
      };
    }
  }
}

package io.github.llmratelimiter.sample;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.springframework.test.context.DynamicPropertyRegistry;

/**
 * A provider on a loopback port (a JDK HTTP server) that answers every chat completion with one
 * status, rate-limit headers and JSON body, counting the calls it received; tests point the
 * sample's {@code gateway.provider.base-url} at it.
 */
final class LocalProvider {

  private final HttpServer server;
  private final AtomicInteger received = new AtomicInteger();

  private LocalProvider(int status, Map<String, String> headers, String body) {
    byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
    try {
      server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    server.createContext("/v1/chat/completions", exchange -> {
      try (exchange) {
        exchange.getRequestBody().readAllBytes();
        received.incrementAndGet();
        headers.forEach(exchange.getResponseHeaders()::add);
        exchange.getResponseHeaders().add("Content-Type", "application/json");
        exchange.sendResponseHeaders(status, bytes.length);
        exchange.getResponseBody().write(bytes);
      }
    });
    server.start();
  }

  /** Starts a provider answering every call with {@code status}, {@code headers} and {@code body}. */
  static LocalProvider answering(int status, Map<String, String> headers, String body) {
    return new LocalProvider(status, headers, body);
  }

  /** Points the sample's {@code gateway.provider.base-url} at this provider. */
  void register(DynamicPropertyRegistry registry) {
    registry.add("gateway.provider.base-url",
        () -> "http://127.0.0.1:" + server.getAddress().getPort());
  }

  /** The calls it received. */
  int received() {
    return received.get();
  }

  /** Stops it. */
  void stop() {
    server.stop(0);
  }
}

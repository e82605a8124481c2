package io.github.llmratelimiter.springai.it;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A local OpenAI-compatible chat completions server (the JDK's HTTP server on a free loopback port):
 * it counts the calls it receives and answers each with the usage it is told to report, as one JSON
 * body or as a {@code text/event-stream} whose last chunk carries the usage (OpenAI's {@code
 * stream_options.include_usage}). It can fail calls (a 500), or hold a stream after its first chunk
 * until the client goes away.
 */
final class OpenAiStub implements AutoCloseable {

  /** What the stub answers. */
  enum Mode { ANSWER, FAIL, HOLD_STREAM }

  private final HttpServer server;
  private final AtomicInteger calls = new AtomicInteger();
  private final AtomicInteger streams = new AtomicInteger();
  private volatile Mode mode = Mode.ANSWER;
  private volatile int promptTokens = 11;
  private volatile int completionTokens = 7;
  private volatile CountDownLatch held = new CountDownLatch(1);

  private OpenAiStub(HttpServer server) {
    this.server = server;
  }

  /** Starts a stub on a free loopback port. */
  static OpenAiStub start() {
    try {
      HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
      OpenAiStub stub = new OpenAiStub(server);
      server.createContext("/", stub::handle);
      server.setExecutor(Executors.newCachedThreadPool());
      server.start();
      return stub;
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  /** The base URL Spring AI's OpenAI options take. */
  String baseUrl() {
    return "http://127.0.0.1:" + server.getAddress().getPort() + "/v1";
  }

  /** The calls received (streamed or not). */
  int calls() {
    return calls.get();
  }

  /** The streamed calls received. */
  int streams() {
    return streams.get();
  }

  /** Sets the usage every answer reports. */
  void usage(int prompt, int completion) {
    this.promptTokens = prompt;
    this.completionTokens = completion;
  }

  void mode(Mode answer) {
    this.mode = answer;
    this.held = new CountDownLatch(1);
  }

  /** Gives back every stream held after its first chunk (they end without usage). */
  void releaseHeld() {
    held.countDown();
  }

  private void handle(HttpExchange exchange) throws IOException {
    try (exchange) {
      String body = new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
      calls.incrementAndGet();
      if (mode == Mode.FAIL) {
        send(exchange, 500, "application/json",
            "{\"error\":{\"message\":\"the stub fails\",\"type\":\"server_error\",\"code\":null,\"param\":null}}");
        return;
      }
      if (!body.replace(" ", "").contains("\"stream\":true")) {
        send(exchange, 200, "application/json", "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion\","
            + "\"created\":1,\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"message\":{\"role\":"
            + "\"assistant\",\"content\":\"hi\",\"refusal\":null},\"logprobs\":null,\"finish_reason\":\"stop\"}],"
            + "\"usage\":" + usage() + "}");
        return;
      }
      streams.incrementAndGet();
      exchange.getResponseHeaders().set("Content-Type", "text/event-stream");
      exchange.sendResponseHeaders(200, 0);
      OutputStream out = exchange.getResponseBody();
      event(out, chunk("{\"role\":\"assistant\",\"content\":\"h\"}", "null"));
      if (mode == Mode.HOLD_STREAM) {
        // held like a model still thinking: an SSE comment every 100 ms, so that a client that
        // went away is noticed (the write fails) and its connection closed, as a provider does
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!held.await(100, TimeUnit.MILLISECONDS) && System.nanoTime() < deadline) {
          out.write(": still thinking\n\n".getBytes(StandardCharsets.UTF_8));
          out.flush();
        }
        return;
      }
      event(out, chunk("{\"content\":\"i\"}", "null"));
      event(out, chunk("{}", "\"stop\""));
      event(out, "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,"
          + "\"model\":\"gpt-4o-mini\",\"choices\":[],\"usage\":" + usage() + "}");
      event(out, "[DONE]");
    } catch (IOException | InterruptedException e) {
      // the client went away
    }
  }

  private String usage() {
    return "{\"prompt_tokens\":" + promptTokens + ",\"completion_tokens\":" + completionTokens
        + ",\"total_tokens\":" + (promptTokens + completionTokens) + "}";
  }

  private static String chunk(String delta, String finish) {
    return "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":"
        + "\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"delta\":" + delta + ",\"logprobs\":null,"
        + "\"finish_reason\":" + finish + "}]}";
  }

  private static void event(OutputStream out, String data) throws IOException {
    out.write(("data: " + data + "\n\n").getBytes(StandardCharsets.UTF_8));
    out.flush();
  }

  private static void send(HttpExchange exchange, int status, String type, String body) throws IOException {
    byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
    exchange.getResponseHeaders().set("Content-Type", type);
    exchange.sendResponseHeaders(status, bytes.length);
    exchange.getResponseBody().write(bytes);
  }

  @Override
  public void close() {
    releaseHeld();
    server.stop(0);
  }
}

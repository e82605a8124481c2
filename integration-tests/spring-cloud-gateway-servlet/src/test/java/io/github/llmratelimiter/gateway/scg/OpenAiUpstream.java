package io.github.llmratelimiter.gateway.scg;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * An OpenAI-compatible upstream on a free loopback port: {@code POST /v1/chat/completions} answers
 * a JSON completion with a {@code usage} object, or, for {@code "stream": true}, a server-sent
 * event stream of chunks that ends with a usage chunk (when {@code stream_options.include_usage}
 * is true) and {@code data: [DONE]}. It records every request it receives.
 *
 * <p>Its usage is exact and known to the tests: {@code prompt_tokens} is the number of
 * whitespace-separated words in the messages' contents, {@code completion_tokens} the
 * {@value #REPLY_TOKENS} words of its reply, {@value #REPLY}.
 */
final class OpenAiUpstream implements AutoCloseable {

  /** The reply's text; every word is one completion token and one streamed chunk. */
  static final String REPLY = "Hello from the upstream stub";

  /** The completion tokens of every reply. */
  static final int REPLY_TOKENS = 5;

  /** How long a held stream waits for {@link StreamGate#release()} before it goes on anyway. */
  static final Duration HOLD_LIMIT = Duration.ofSeconds(5);

  private static final JsonMapper JSON = JsonMapper.builder().build();

  private final HttpServer server;
  private final ExecutorService executor = Executors.newCachedThreadPool(r -> {
    Thread t = new Thread(r, "openai-upstream");
    t.setDaemon(true);
    return t;
  });
  private final Queue<Received> received = new ConcurrentLinkedQueue<>();
  private final Map<String, StreamGate> gates = new ConcurrentHashMap<>();
  private final AtomicLong ids = new AtomicLong();

  private OpenAiUpstream(HttpServer server) {
    this.server = server;
    server.setExecutor(executor);
    server.createContext("/", this::handle);
    server.start();
  }

  /**
   * Starts an upstream on a free port of the loopback interface.
   *
   * @return the running upstream
   */
  static OpenAiUpstream start() {
    try {
      return new OpenAiUpstream(
          HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Returns the base URI the gateway proxies to, {@code http://127.0.0.1:PORT}. */
  String uri() {
    return "http://" + server.getAddress().getAddress().getHostAddress() + ":"
        + server.getAddress().getPort();
  }

  /** Returns every request received so far, in arrival order. */
  List<Received> received() {
    return List.copyOf(received);
  }

  /** Returns the requests received whose body contains the marker. */
  List<Received> receivedContaining(String marker) {
    return received.stream().filter(r -> r.body().contains(marker)).toList();
  }

  /** Returns the requests received with {@code Authorization: Bearer <apiKey>}. */
  List<Received> receivedFor(String apiKey) {
    String bearer = "Bearer " + apiKey;
    return received.stream().filter(r -> bearer.equals(r.authorization())).toList();
  }

  /**
   * Makes the next stream of one API key stop after its first chunk until the gate is released (at
   * most {@link #HOLD_LIMIT}).
   *
   * @param apiKey the key whose next stream is held
   * @return the gate
   */
  StreamGate holdNextStream(String apiKey) {
    StreamGate gate = new StreamGate();
    gates.put("Bearer " + apiKey, gate);
    return gate;
  }

  @Override
  public void close() {
    server.stop(0);
    executor.shutdownNow();
  }

  private void handle(HttpExchange exchange) throws IOException {
    try (exchange) {
      String body = new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
      String authorization = exchange.getRequestHeaders().getFirst("Authorization");
      received.add(new Received(exchange.getRequestMethod(), exchange.getRequestURI().getPath(),
          authorization, exchange.getRequestHeaders().getFirst("Content-Type"), body));
      if (!"POST".equals(exchange.getRequestMethod())
          || !"/v1/chat/completions".equals(exchange.getRequestURI().getPath())) {
        send(exchange, 404, "application/json", "{\"error\":{\"message\":\"not found\"}}");
        return;
      }
      JsonNode request;
      try {
        request = JSON.readTree(body);
      } catch (RuntimeException e) {
        send(exchange, 400, "application/json", "{\"error\":{\"message\":\"malformed JSON\"}}");
        return;
      }
      String model = request.path("model").asString("");
      String id = "chatcmpl-stub-" + ids.incrementAndGet();
      ObjectNode usage = usage(promptTokens(request));
      if (request.path("stream").asBoolean(false)) {
        boolean includeUsage = request.path("stream_options").path("include_usage").asBoolean(false);
        stream(exchange, id, model, includeUsage ? usage : null,
            authorization == null ? null : gates.remove(authorization));
      } else {
        ObjectNode completion = JSON.createObjectNode()
            .put("id", id).put("object", "chat.completion").put("created", 1_700_000_000L)
            .put("model", model);
        ObjectNode choice = completion.putArray("choices").addObject().put("index", 0);
        choice.putObject("message").put("role", "assistant").put("content", REPLY);
        choice.put("finish_reason", "stop");
        completion.set("usage", usage);
        send(exchange, providerAnswer(exchange), "application/json",
            JSON.writeValueAsString(completion));
      }
    }
  }

  private void stream(HttpExchange exchange, String id, String model, @Nullable ObjectNode usage,
      @Nullable StreamGate gate) throws IOException {
    exchange.getResponseHeaders().set("Content-Type", "text/event-stream");
    exchange.getResponseHeaders().set("Cache-Control", "no-cache");
    exchange.sendResponseHeaders(200, 0); // chunked
    OutputStream out = exchange.getResponseBody();
    String[] words = REPLY.split(" ");
    for (int i = 0; i < words.length; i++) {
      ObjectNode delta = JSON.createObjectNode();
      if (i == 0) {
        delta.put("role", "assistant");
      }
      delta.put("content", i == 0 ? words[i] : " " + words[i]);
      event(out, chunk(id, model, delta, null));
      if (i == 0 && gate != null) {
        gate.hold();
      }
    }
    event(out, chunk(id, model, JSON.createObjectNode(), "stop"));
    if (usage != null) {
      ObjectNode last = JSON.createObjectNode()
          .put("id", id).put("object", "chat.completion.chunk").put("created", 1_700_000_000L)
          .put("model", model);
      last.putArray("choices");
      last.set("usage", usage);
      event(out, JSON.writeValueAsString(last));
    }
    event(out, "[DONE]");
  }

  private static String chunk(String id, String model, ObjectNode delta,
      @Nullable String finishReason) {
    ObjectNode chunk = JSON.createObjectNode()
        .put("id", id).put("object", "chat.completion.chunk").put("created", 1_700_000_000L)
        .put("model", model);
    ObjectNode choice = chunk.putArray("choices").addObject().put("index", 0);
    choice.set("delta", delta);
    choice.put("finish_reason", finishReason);
    return JSON.writeValueAsString(chunk);
  }

  private static void event(OutputStream out, String data) throws IOException {
    out.write(("data: " + data + "\n\n").getBytes(StandardCharsets.UTF_8));
    out.flush();
  }

  private static ObjectNode usage(long promptTokens) {
    return JSON.createObjectNode()
        .put("prompt_tokens", promptTokens)
        .put("completion_tokens", REPLY_TOKENS)
        .put("total_tokens", promptTokens + REPLY_TOKENS);
  }

  /** The words of every message's content. */
  private static long promptTokens(JsonNode request) {
    long words = 0;
    JsonNode messages = request.path("messages");
    if (messages instanceof ArrayNode array) {
      for (JsonNode m : array) {
        String content = m.path("content").asString("").strip();
        words += content.isEmpty() ? 0 : content.split("\\s+").length;
      }
    }
    return words;
  }

  /**
   * Answers like a provider as the request asks: the headers of {@code X-Stub-Headers} ({@code
   * name=value} pairs, comma-separated) on the response, and the status of {@code X-Stub-Status}
   * (200 without it).
   *
   * @return the status to answer with
   */
  private static int providerAnswer(HttpExchange exchange) {
    String headers = exchange.getRequestHeaders().getFirst("X-Stub-Headers");
    if (headers != null) {
      for (String pair : headers.split(",")) {
        int eq = pair.indexOf('=');
        exchange.getResponseHeaders().add(pair.substring(0, eq).strip(), pair.substring(eq + 1).strip());
      }
    }
    String status = exchange.getRequestHeaders().getFirst("X-Stub-Status");
    return status == null ? 200 : Integer.parseInt(status.strip());
  }

  private static void send(HttpExchange exchange, int status, String contentType, String body)
      throws IOException {
    byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
    exchange.getResponseHeaders().set("Content-Type", contentType);
    exchange.sendResponseHeaders(status, bytes.length);
    exchange.getResponseBody().write(bytes);
  }

  /**
   * The usage the upstream reports for a prompt of this many words.
   *
   * @param promptWords whitespace-separated words in the messages
   * @return its {@code total_tokens}
   */
  static long totalTokens(long promptWords) {
    return promptWords + REPLY_TOKENS;
  }

  /** One request as the upstream received it. */
  record Received(String method, String path, @Nullable String authorization,
      @Nullable String contentType, String body) {}

  /**
   * Holds one stream after its first chunk: the upstream writes and flushes that chunk, then waits
   * for {@link #release()} (at most {@link #HOLD_LIMIT}) before it writes the rest.
   */
  static final class StreamGate {

    private final CountDownLatch released = new CountDownLatch(1);
    private volatile boolean restSent;
    private volatile boolean timedOut;

    private void hold() {
      try {
        timedOut = !released.await(HOLD_LIMIT.toMillis(), TimeUnit.MILLISECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      restSent = true; // set before the rest is written: a client that sees it first was buffered
    }

    /** Lets the held stream go on. */
    void release() {
      released.countDown();
    }

    /** Whether the upstream has gone on to write the chunks after the first. */
    boolean restSent() {
      return restSent;
    }

    /** Whether the upstream gave up waiting for {@link #release()}. */
    boolean timedOut() {
      return timedOut;
    }
  }
}

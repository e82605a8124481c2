package io.github.llmratelimiter.benchmarks.http;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A stand-in OpenAI provider account in this JVM (a JDK {@link HttpServer} on a free loopback
 * port) that enforces its own limits on every caller together: {@code requestLimit} requests and
 * {@code tokenLimit} model tokens in any sliding minute. A call's tokens are its prompt tokens,
 * counted as the gateway estimates them (UTF-8 bytes of each message's content / 4 rounded up, + 4
 * per message, + 3), plus the {@code max_tokens} (or {@code max_completion_tokens}) it asks for,
 * which the reply uses in full; they count from the moment the call is accepted. Every answer
 * carries OpenAI's {@code x-ratelimit-limit|remaining|reset-requests|tokens} headers; a call over
 * either limit gets a 429 with {@code retry-after} (whole seconds, rounded up) and {@code
 * retry-after-ms}. An accepted call is answered after {@code latencyMs}, as a model writes its reply.
 */
final class SlidingMinuteProvider implements AutoCloseable {

  private static final long MINUTE_MS = 60_000;
  private static final Pattern CONTENT = Pattern.compile("\"content\"\\s*:\\s*\"((?:[^\"\\\\]|\\\\.)*)\"");
  private static final Pattern CAP =
      Pattern.compile("\"max_(?:completion_)?tokens\"\\s*:\\s*(\\d+)");
  /** The tag by which a run names a call's tenant in its prompt, for the provider's records. */
  private static final Pattern TENANT = Pattern.compile("tenant-(\\d+)");

  /** The limits in force, which {@link #lower} may change; under this object's monitor. */
  private long requestLimit;
  private long tokenLimit;
  private final long latencyMs;
  private final HttpServer server;
  private final ExecutorService executor = Executors.newCachedThreadPool();
  /** Accepted calls in the last minute, oldest first: {acceptance ms, tokens}. */
  private final ArrayDeque<long[]> window = new ArrayDeque<>();
  private long windowTokens;
  private final long started = System.currentTimeMillis();
  private long received;
  private long refused;
  /** Accepted calls of the whole run: {ms since start, tokens, tenant tag or -1}, in order. */
  private final List<long[]> accepted = new ArrayList<>();
  /** Refused calls: {ms since start, retry ms, requests in the window, tokens in the window}. */
  private final List<long[]> refusals = new ArrayList<>();

  /**
   * Starts the provider.
   *
   * @param requestLimit requests a sliding minute, at least 1
   * @param tokenLimit model tokens a sliding minute, at least 1
   * @param latencyMs how long an accepted call takes to answer, at least 0
   */
  SlidingMinuteProvider(long requestLimit, long tokenLimit, long latencyMs) throws IOException {
    if (requestLimit < 1 || tokenLimit < 1 || latencyMs < 0) {
      throw new IllegalArgumentException("requestLimit and tokenLimit must be >= 1 and latencyMs"
          + " >= 0, but were " + requestLimit + ", " + tokenLimit + " and " + latencyMs);
    }
    this.requestLimit = requestLimit;
    this.tokenLimit = tokenLimit;
    this.latencyMs = latencyMs;
    server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 200);
    server.setExecutor(executor);
    server.createContext("/v1/chat/completions", this::handle);
    server.start();
  }

  /** Returns {@code http://127.0.0.1:<port>}, the base URL a gateway is given. */
  String base() {
    return "http://127.0.0.1:" + server.getAddress().getPort();
  }

  /** The calls received so far and those refused with a 429, and the accepted calls. */
  synchronized Counts counts() {
    return new Counts(received, refused, List.copyOf(accepted),
        List.copyOf(refusals));
  }

  /**
   * What the provider saw.
   *
   * @param received calls received
   * @param refused calls answered 429
   * @param accepted each accepted call: milliseconds since the provider started, tokens, and the
   *     number of the {@code tenant-<n>} tag in its prompt (-1 when it has none)
   * @param refusals each refused call: milliseconds since the provider started, the retry time in
   *     milliseconds, the requests and the tokens in the minute then
   */
  record Counts(long received, long refused, List<long[]> accepted,
      List<long[]> refusals) {}

  /**
   * Lowers the provider's limits from now on, as a provider does at runtime: its headers name the
   * new limits, and a call that does not fit them is refused.
   *
   * @param requests requests a sliding minute, at least 1
   * @param tokens model tokens a sliding minute, at least 1
   */
  synchronized void lower(long requests, long tokens) {
    if (requests < 1 || tokens < 1) {
      throw new IllegalArgumentException("requests and tokens must be >= 1, but were " + requests
          + " and " + tokens);
    }
    requestLimit = requests;
    tokenLimit = tokens;
  }

  /** The model tokens in its minute now, after the calls that left it. */
  synchronized long windowTokens() {
    long now = System.currentTimeMillis();
    while (!window.isEmpty() && window.peekFirst()[0] + MINUTE_MS <= now) {
      windowTokens -= window.removeFirst()[1];
    }
    return windowTokens;
  }

  /** Milliseconds since the provider started. */
  long elapsedMs() {
    return System.currentTimeMillis() - started;
  }

  private void handle(HttpExchange exchange) throws IOException {
    try (exchange) {
      String body = new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
      long prompt = 3;
      Matcher m = CONTENT.matcher(body);
      while (m.find()) {
        prompt += (m.group(1).getBytes(StandardCharsets.UTF_8).length + 3) / 4 + 4;
      }
      Matcher cap = CAP.matcher(body);
      long completion = cap.find() ? Long.parseLong(cap.group(1)) : 16;
      Matcher tag = TENANT.matcher(body);
      long tenant = tag.find() ? Long.parseLong(tag.group(1)) : -1;
      long retryMs;
      String headers;
      synchronized (this) {
        long now = System.currentTimeMillis();
        while (!window.isEmpty() && window.peekFirst()[0] + MINUTE_MS <= now) {
          windowTokens -= window.removeFirst()[1];
        }
        received++;
        retryMs = retryMs(now, prompt + completion);
        if (retryMs > 0) {
          refused++;
          refusals.add(new long[] {now - started, retryMs, window.size(), windowTokens});
        } else {
          window.addLast(new long[] {now, prompt + completion});
          windowTokens += prompt + completion;
          accepted.add(new long[] {now - started, prompt + completion, tenant});
        }
        headers = headers(now);
      }
      for (String line : headers.split("\n")) {
        int colon = line.indexOf(':');
        exchange.getResponseHeaders().add(line.substring(0, colon), line.substring(colon + 1));
      }
      exchange.getResponseHeaders().add("Content-Type", "application/json");
      if (retryMs > 0) {
        exchange.getResponseHeaders().add("retry-after", Long.toString((retryMs + 999) / 1000));
        exchange.getResponseHeaders().add("retry-after-ms", Long.toString(retryMs));
        send(exchange, 429, "{\"error\":{\"message\":\"Rate limit reached on the stand-in account;"
            + " please try again in " + retryMs + "ms\",\"type\":\"requests\",\"param\":null,"
            + "\"code\":\"rate_limit_exceeded\"}}");
        return;
      }
      try {
        TimeUnit.MILLISECONDS.sleep(latencyMs); // the model writes its reply
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
      send(exchange, 200, "{\"id\":\"chatcmpl-standin\",\"object\":\"chat.completion\","
          + "\"created\":" + (System.currentTimeMillis() / 1000) + ",\"model\":\"gpt-4o-mini\","
          + "\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\""
          + "token ".repeat((int) Math.min(completion, 4096)).strip() + "\"},"
          + "\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":" + prompt
          + ",\"completion_tokens\":" + completion + ",\"total_tokens\":" + (prompt + completion)
          + "}}");
    }
  }

  /** How long until a call of {@code tokens} fits both limits; 0 if it fits now. */
  private long retryMs(long now, long tokens) {
    long wait = 0;
    if (window.size() >= requestLimit) {
      // the oldest accepted calls must leave until one request is free
      long[] binding = window.stream().skip(window.size() - requestLimit).findFirst().orElseThrow();
      wait = binding[0] + MINUTE_MS - now;
    }
    if (windowTokens + tokens > tokenLimit) {
      long excess = windowTokens + tokens - tokenLimit;
      long until = MINUTE_MS;
      for (long[] entry : window) {
        excess -= entry[1];
        if (excess <= 0) {
          until = entry[0] + MINUTE_MS - now;
          break;
        }
      }
      wait = Math.max(wait, until);
    }
    return Math.max(0, wait);
  }

  /** The rate-limit headers as {@code name:value} lines, after this call is counted. */
  private String headers(long now) {
    String reset = window.isEmpty() ? "0s" : duration(window.peekFirst()[0] + MINUTE_MS - now);
    return "x-ratelimit-limit-requests:" + requestLimit
        + "\nx-ratelimit-remaining-requests:" + Math.max(0, requestLimit - window.size())
        + "\nx-ratelimit-reset-requests:" + reset
        + "\nx-ratelimit-limit-tokens:" + tokenLimit
        + "\nx-ratelimit-remaining-tokens:" + Math.max(0, tokenLimit - windowTokens)
        + "\nx-ratelimit-reset-tokens:" + reset;
  }

  /** A reset as OpenAI writes one under a minute: {@code 120ms}, {@code 1.5s}, {@code 59s}. */
  static String duration(long ms) {
    if (ms <= 0) {
      return "0s";
    }
    if (ms < 1000) {
      return ms + "ms";
    }
    if (ms >= MINUTE_MS) {
      return "1m0s";
    }
    return String.format(Locale.ROOT, "%.3f", ms / 1000.0).replaceAll("\\.?0+$", "") + "s";
  }

  private static void send(HttpExchange exchange, int status, String body) throws IOException {
    byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
    exchange.sendResponseHeaders(status, bytes.length);
    exchange.getResponseBody().write(bytes);
  }

  @Override
  public void close() {
    server.stop(0);
    executor.shutdownNow();
  }
}

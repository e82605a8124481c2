package io.github.llmratelimiter.benchmarks.inprocess;

import io.github.llmratelimiter.gateway.JsonReader;
import io.github.llmratelimiter.gateway.internal.UsageScanner;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * What the front doors spend reading a streamed response's usage: one {@link UsageScanner} fed a
 * whole Chat Completions stream of the HTTP run's shape (a chunk per word of a 10-word answer, the
 * finish chunk, the usage chunk, {@code [DONE]}), as the servlet stack writes it (one write per
 * event) and as WebFlux does (three buffers per event: {@code data:}, the JSON, the blank line).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class UsageScannerBenchmark {

  /** The total tokens the stream's usage chunk reports. */
  static final long TOTAL = 17;

  /** A parser the scanner never needs for these well-formed ends; it fails the run if called. */
  private static final JsonReader NO_PARSER = (json, off, len) -> {
    throw new IllegalStateException("the usage was not read from the end of its line");
  };

  private byte[][] servletWrites;
  private byte[][] reactiveWrites;

  /** Builds the stream's writes and checks that both shapes report the usage. */
  @Setup
  public void setUp() {
    String head = "{\"id\":\"chatcmpl-5f0c6b1e2d9a4c7b8e3f1a2b3c4d5e6f\",\"object\":"
        + "\"chat.completion.chunk\",\"created\":1796205357,\"model\":\"gpt-4o-mini\",";
    List<String> events = new ArrayList<>();
    String[] words = "Echo from gpt-4o-mini: Say hello to the benchmark and more".split(" ");
    for (int i = 0; i < words.length; i++) {
      events.add(head + "\"choices\":[{\"index\":0,\"delta\":{" + (i == 0 ? "\"role\":\"assistant\"," : "")
          + "\"content\":\"" + (i == 0 ? "" : " ") + words[i] + "\"},\"finish_reason\":null}]}");
    }
    events.add(head + "\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}");
    events.add(head + "\"choices\":[],\"usage\":{\"prompt_tokens\":6,\"completion_tokens\":11,"
        + "\"total_tokens\":" + TOTAL + "}}");
    events.add("[DONE]");
    servletWrites = new byte[events.size()][];
    reactiveWrites = new byte[3 * events.size()][];
    for (int i = 0; i < events.size(); i++) {
      servletWrites[i] = bytes("data: " + events.get(i) + "\n\n");
      reactiveWrites[3 * i] = bytes("data:");
      reactiveWrites[3 * i + 1] = bytes(events.get(i));
      reactiveWrites[3 * i + 2] = bytes("\n\n");
    }
    if (servletStream() != TOTAL || reactiveStream() != TOTAL) {
      throw new IllegalStateException("the stream's usage was not read");
    }
  }

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  /** The stream as the servlet stack writes it: one write per event. */
  @Benchmark
  public long servletStream() {
    return scan(servletWrites);
  }

  /** The stream as WebFlux writes it: three buffers per event. */
  @Benchmark
  public long reactiveStream() {
    return scan(reactiveWrites);
  }

  private static long scan(byte[][] writes) {
    UsageScanner scanner = new UsageScanner(NO_PARSER);
    scanner.accept("text/event-stream", writes[0], 0, writes[0].length);
    for (int i = 1; i < writes.length; i++) {
      scanner.accept(null, writes[i], 0, writes[i].length);
    }
    Long usage = scanner.usage();
    return usage == null ? -1 : usage;
  }
}

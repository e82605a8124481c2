package io.github.llmratelimiter.gateway.internal;

import io.github.llmratelimiter.gateway.JsonReader;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Locale;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * Finds the model tokens a response reports as its body is written: a JSON body is buffered (up to
 * {@value #MAX_CAPTURED_BYTES} bytes) and read at the end; an event stream is read line by line (each
 * line up to the same size) and its last {@code data:} line with a usage wins. A body that is neither
 * JSON nor an event stream reports nothing. Safe to feed from one thread and read from another.
 */
public final class UsageScanner {

  /** The most bytes kept of a JSON body, or of one event-stream line. */
  public static final int MAX_CAPTURED_BYTES = 1 << 20;

  private final JsonReader json;

  private static final byte[] DATA = "data:".getBytes(StandardCharsets.US_ASCII);
  private static final byte[] USAGE = "\"usage\"".getBytes(StandardCharsets.US_ASCII);

  private byte[] buffer = EMPTY;
  private int size;
  private boolean overflow;
  private @Nullable Boolean eventStream;
  private volatile @Nullable Long streamUsage;

  private static final byte[] EMPTY = new byte[0];

  /**
   * Creates a scanner for one response.
   *
   * @param json the parser of the usage
   */
  public UsageScanner(JsonReader json) {
    this.json = json;
  }

  /**
   * Reads the model tokens an OpenAI-shaped body reports: {@code usage.total_tokens}, else {@code
   * prompt_tokens + completion_tokens}, else {@code input_tokens + output_tokens} (also under a
   * {@code response} member, as the Responses API streams it).
   *
   * @param body a parsed JSON object
   * @return the usage, or null when the body carries none
   */
  public static @Nullable Long usage(Map<?, ?> body) {
    Object usage = body.get("usage");
    if (!(usage instanceof Map) && body.get("response") instanceof Map<?, ?> response) {
      usage = response.get("usage");
    }
    if (!(usage instanceof Map<?, ?> u)) {
      return null;
    }
    if (u.get("total_tokens") instanceof Number total && total.longValue() >= 0) {
      return total.longValue();
    }
    Long sum = sum(u.get("prompt_tokens"), u.get("completion_tokens"));
    return sum != null ? sum : sum(u.get("input_tokens"), u.get("output_tokens"));
  }

  private static @Nullable Long sum(@Nullable Object a, @Nullable Object b) {
    if (a instanceof Number x && b instanceof Number y && x.longValue() >= 0 && y.longValue() >= 0) {
      return x.longValue() + y.longValue();
    }
    return null;
  }

  /**
   * Takes the next bytes of the body.
   *
   * @param contentType the response's content type, read on the first call only (later calls may
   *     pass {@code null})
   * @param b the bytes
   * @param off where they start
   * @param len how many
   */
  public synchronized void accept(@Nullable String contentType, byte[] b, int off, int len) {
    if (eventStream == null) {
      String type = contentType == null ? "" : contentType.toLowerCase(Locale.ROOT);
      eventStream = type.startsWith("text/event-stream") ? Boolean.TRUE
          : type.contains("json") ? Boolean.FALSE : null;
      if (eventStream == null) {
        overflow = true; // neither JSON nor SSE: nothing to read
        eventStream = Boolean.FALSE;
      }
    }
    if (!eventStream) {
      if (!overflow) {
        append(b, off, len);
      }
      return;
    }
    int end = off + len;
    int from = off;
    for (int i = off; i < end; i++) {
      if (b[i] == '\n') {
        if (!overflow) {
          append(b, from, i - from);
        }
        line();
        from = i + 1;
      }
    }
    if (!overflow && from < end) {
      append(b, from, end - from);
    }
  }

  private void append(byte[] b, int off, int len) {
    if (size + len > MAX_CAPTURED_BYTES) {
      overflow = true;
      size = 0;
      return;
    }
    if (size + len > buffer.length) {
      // the first write usually holds the whole body: size the buffer to it
      buffer = Arrays.copyOf(buffer, Math.max(size + len, Math.min(MAX_CAPTURED_BYTES,
          Math.max(256, buffer.length * 2))));
    }
    System.arraycopy(b, off, buffer, size, len);
    size += len;
  }

  /** One complete SSE line. */
  private void line() {
    if (!overflow) {
      int from = 0;
      int to = size;
      while (from < to && buffer[from] <= ' ') {
        from++;
      }
      while (to > from && buffer[to - 1] <= ' ') {
        to--;
      }
      if (startsWith(buffer, from, to, DATA) && indexOf(buffer, from, to, USAGE) >= 0) {
        from += DATA.length;
        while (from < to && buffer[from] <= ' ') {
          from++;
        }
        Long usage = json.usage(buffer, from, to - from);
        if (usage != null) {
          streamUsage = usage;
        }
      }
    }
    size = 0;
    overflow = false;
  }

  /**
   * Returns the usage the body written so far reports: an event stream's last usage line, or a
   * whole JSON body's usage.
   *
   * @return the model tokens, or {@code null} when the body reports none (yet)
   */
  public synchronized @Nullable Long usage() {
    if (Boolean.TRUE.equals(eventStream)) {
      return streamUsage;
    }
    return overflow || size == 0 ? null : json.usage(buffer, 0, size);
  }

  private static boolean startsWith(byte[] b, int from, int to, byte[] prefix) {
    if (to - from < prefix.length) {
      return false;
    }
    for (int i = 0; i < prefix.length; i++) {
      if (b[from + i] != prefix[i]) {
        return false;
      }
    }
    return true;
  }

  private static int indexOf(byte[] b, int from, int to, byte[] needle) {
    outer:
    for (int i = from; i <= to - needle.length; i++) {
      for (int j = 0; j < needle.length; j++) {
        if (b[i + j] != needle[j]) {
          continue outer;
        }
      }
      return i;
    }
    return -1;
  }
}

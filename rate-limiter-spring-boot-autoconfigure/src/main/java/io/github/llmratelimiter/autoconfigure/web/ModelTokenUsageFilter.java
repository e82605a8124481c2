package io.github.llmratelimiter.autoconfigure.web;

import io.github.llmratelimiter.autoconfigure.ModelTokenReservation;
import jakarta.servlet.AsyncEvent;
import jakarta.servlet.AsyncListener;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletOutputStream;
import jakarta.servlet.WriteListener;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import jakarta.servlet.http.HttpServletResponseWrapper;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Locale;
import org.jspecify.annotations.Nullable;
import org.springframework.web.filter.OncePerRequestFilter;

/**
 * Settles the model tokens a request reserved ({@link ModelTokenReservation}) when its response
 * ends, unless the gateway code settled them itself.
 *
 * <ul>
 *   <li>The response's OpenAI {@code usage} (a JSON body, or the last {@code data:} event carrying
 *       one in a {@code text/event-stream}, as {@code stream_options.include_usage} asks) replaces
 *       the estimate.
 *   <li>Without usage: a response with status 400 or above, or a request that failed before its
 *       response was committed, is refunded (the upstream call failed; its RPM slot stays charged);
 *       otherwise the estimate stays charged (a stream the client cancelled, or cut mid-way).
 *   <li>An asynchronous response (a streamed body, SSE) is settled when it completes, errs or times
 *       out, including when the client disconnects.
 * </ul>
 *
 * <p>The body is read as it is written (through {@code getOutputStream()}; a body written through
 * {@code getWriter()} is not read): JSON bodies up to {@value #MAX_CAPTURED_BYTES} bytes, SSE event
 * lines up to the same size each.
 */
final class ModelTokenUsageFilter extends OncePerRequestFilter {

  static final int MAX_CAPTURED_BYTES = 1 << 20;

  private static final String FILTERED = ModelTokenUsageFilter.class.getName() + ".FILTERED";

  /** A constant name: the default concatenates the filter's name on every request. */
  @Override
  protected String getAlreadyFilteredAttributeName() {
    return FILTERED;
  }

  @Override
  protected void doFilterInternal(
      HttpServletRequest request, HttpServletResponse response, FilterChain chain)
      throws ServletException, IOException {
    UsageCapturingResponse capturing = new UsageCapturingResponse(response);
    boolean failed = true;
    try {
      chain.doFilter(request, capturing);
      failed = false;
    } finally {
      ModelTokenReservation reservation = ModelTokens.of(request).orElse(null);
      if (reservation != null && !reservation.settled()) {
        if (!failed && request.isAsyncStarted()) {
          request.getAsyncContext().addListener(new SettleOnCompletion(reservation, capturing));
        } else {
          settle(reservation, capturing, failed && !response.isCommitted());
        }
      }
    }
  }

  static void settle(ModelTokenReservation reservation, UsageCapturingResponse response,
      boolean failedBeforeCommit) {
    Long usage = response.usage();
    if (usage != null) {
      reservation.reconcile(usage);
    } else if (failedBeforeCommit || response.getStatus() >= 400) {
      reservation.refund();
    } else {
      reservation.keepEstimate();
    }
  }

  /** Settles an asynchronous response once it is over, however it ends. */
  private static final class SettleOnCompletion implements AsyncListener {

    private final ModelTokenReservation reservation;
    private final UsageCapturingResponse response;

    SettleOnCompletion(ModelTokenReservation reservation, UsageCapturingResponse response) {
      this.reservation = reservation;
      this.response = response;
    }

    @Override
    public void onComplete(AsyncEvent event) {
      settle(reservation, response, false);
    }

    @Override
    public void onTimeout(AsyncEvent event) {
      settle(reservation, response, !response.isCommitted());
    }

    @Override
    public void onError(AsyncEvent event) {
      settle(reservation, response, !response.isCommitted());
    }

    @Override
    public void onStartAsync(AsyncEvent event) {
      event.getAsyncContext().addListener(this); // a re-started async cycle keeps the listener
    }
  }

  /** A response whose output stream reports the usage its body carries. */
  static final class UsageCapturingResponse extends HttpServletResponseWrapper {

    private @Nullable ServletOutputStream stream;
    private final UsageScanner scanner = new UsageScanner();
    /** Whether the scanner was given the content type (it reads it on the first write only). */
    private boolean typed;

    UsageCapturingResponse(HttpServletResponse response) {
      super(response);
    }

    @Override
    public ServletOutputStream getOutputStream() throws IOException {
      if (stream == null) {
        stream = new TeeStream(super.getOutputStream(), this);
      }
      return stream;
    }

    @Nullable Long usage() {
      return scanner.usage();
    }

    void captured(byte[] b, int off, int len) {
      String type = null;
      if (!typed) {
        type = getContentType(); // the container builds this string on every call
        typed = true;
      }
      scanner.accept(type, b, off, len);
    }
  }

  /** Writes through and hands every byte to the response's scanner. */
  private static final class TeeStream extends ServletOutputStream {

    private final ServletOutputStream delegate;
    private final UsageCapturingResponse response;
    private final byte[] single = new byte[1];

    TeeStream(ServletOutputStream delegate, UsageCapturingResponse response) {
      this.delegate = delegate;
      this.response = response;
    }

    @Override
    public void write(int b) throws IOException {
      delegate.write(b);
      byte[] one = single;
      one[0] = (byte) b;
      response.captured(one, 0, 1);
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
      delegate.write(b, off, len);
      response.captured(b, off, len);
    }

    @Override
    public void flush() throws IOException {
      delegate.flush();
    }

    @Override
    public void close() throws IOException {
      delegate.close();
    }

    @Override
    public boolean isReady() {
      return delegate.isReady();
    }

    @Override
    public void setWriteListener(WriteListener listener) {
      delegate.setWriteListener(listener);
    }
  }

  /**
   * Finds the usage in a body as it is written: a JSON body is buffered and read at the end; an
   * event stream is read line by line and its last {@code data:} line with a usage wins.
   */
  static final class UsageScanner {

    private static final byte[] DATA = "data:".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] USAGE = "\"usage\"".getBytes(StandardCharsets.US_ASCII);

    private byte[] buffer = EMPTY;
    private int size;
    private boolean overflow;
    private @Nullable Boolean eventStream;
    private volatile @Nullable Long streamUsage;

    private static final byte[] EMPTY = new byte[0];

    synchronized void accept(@Nullable String contentType, byte[] b, int off, int len) {
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
          Long usage = Json.usage(buffer, from, to - from);
          if (usage != null) {
            streamUsage = usage;
          }
        }
      }
      size = 0;
      overflow = false;
    }

    synchronized @Nullable Long usage() {
      if (Boolean.TRUE.equals(eventStream)) {
        return streamUsage;
      }
      return overflow || size == 0 ? null : Json.usage(buffer, 0, size);
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
}

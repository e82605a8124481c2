package io.github.llmratelimiter.autoconfigure.servlet;

import io.github.llmratelimiter.gateway.ModelUsage;
import io.github.llmratelimiter.gateway.RateLimitContext;
import io.github.llmratelimiter.gateway.RateLimitGateway;

import io.github.llmratelimiter.gateway.internal.UsageScanner;
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
import java.util.List;
import org.jspecify.annotations.Nullable;
import org.springframework.web.filter.OncePerRequestFilter;

/**
 * Ends a request's call when its response ends ({@link RateLimitGateway#finish}): settles the model
 * tokens it reserved ({@link io.github.llmratelimiter.gateway.ModelTokenReservation}), unless the
 * gateway code settled them itself, and releases the slots it holds on a limit on calls in flight
 * ({@link io.github.llmratelimiter.gateway.CallSlots}), exactly once, whether the response
 * completed, its stream ended, the client disconnected or the handler failed.
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
 * <p>A call that went to an upstream ({@code ratelimiter.upstreams}) reports its response to the
 * upstream ({@link RateLimitGateway#report(RateLimitContext, int, java.util.function.Function)})
 * when it ends: the status and the headers the application wrote on the response (for example
 * copied from the provider's), read by {@link io.github.llmratelimiter.gateway.ProviderHeaders}:
 * OpenAI's and Azure OpenAI's {@code x-ratelimit-limit-*}, {@code x-ratelimit-remaining-*} and
 * {@code x-ratelimit-reset-*} of requests and tokens, {@code retry-after} and {@code
 * retry-after-ms}. A status of 429 closes the upstream until its retry time. The limiter's own
 * headers on the response are not read as the provider's.
 *
 * <p>The body is read as it is written (through {@code getOutputStream()}; a body written through
 * {@code getWriter()} is not read) by a {@link UsageScanner}: JSON bodies up to {@value
 * UsageScanner#MAX_CAPTURED_BYTES} bytes, SSE event lines up to the same size each.
 */
final class ModelTokenUsageFilter extends OncePerRequestFilter {

  private static final String FILTERED = ModelTokenUsageFilter.class.getName() + ".FILTERED";

  private final RateLimitGateway gateway;

  ModelTokenUsageFilter(RateLimitGateway gateway) {
    this.gateway = gateway;
  }

  /** A constant name: the default concatenates the filter's name on every request. */
  @Override
  protected String getAlreadyFilteredAttributeName() {
    return FILTERED;
  }

  @Override
  protected void doFilterInternal(
      HttpServletRequest request, HttpServletResponse response, FilterChain chain)
      throws ServletException, IOException {
    UsageCapturingResponse capturing = new UsageCapturingResponse(response, gateway.usageScanner());
    boolean failed = true;
    try {
      chain.doFilter(request, capturing);
      failed = false;
    } finally {
      RateLimitContext context = ServletContexts.find(request);
      // an asynchronous handler's charge may complete later (an annotated Mono): listen for its end
      boolean async = !failed && request.isAsyncStarted();
      if (context != null
          && (context.open() || context.reports() || (async && context.limited()))) {
        if (async) {
          request.getAsyncContext().addListener(new SettleOnCompletion(gateway, context, capturing));
        } else {
          settle(gateway, context, capturing, failed && !response.isCommitted());
        }
      }
    }
  }

  /**
   * Ends the call: settles with the usage the body showed, else a refund for a failed call, else
   * the estimate, and releases its slots; the body is not read for a call that holds neither.
   */
  static void settle(RateLimitGateway gateway, RateLimitContext context,
      UsageCapturingResponse response, boolean failedBeforeCommit) {
    if (context.reports()) {
      gateway.report(context, response.getStatus(), name -> {
        java.util.Collection<String> values = response.getHeaders(name);
        return values == null ? null : List.copyOf(values);
      });
    }
    if (context.open()) {
      gateway.finishUsage(context, response.usage(), failedBeforeCommit || response.getStatus() >= 400);
    }
  }

  /** Settles an asynchronous response once it is over, however it ends. */
  private static final class SettleOnCompletion implements AsyncListener {

    private final RateLimitGateway gateway;
    private final RateLimitContext context;
    private final UsageCapturingResponse response;

    SettleOnCompletion(RateLimitGateway gateway, RateLimitContext context,
        UsageCapturingResponse response) {
      this.gateway = gateway;
      this.context = context;
      this.response = response;
    }

    @Override
    public void onComplete(AsyncEvent event) {
      settle(gateway, context, response, false);
    }

    @Override
    public void onTimeout(AsyncEvent event) {
      settle(gateway, context, response, !response.isCommitted());
    }

    @Override
    public void onError(AsyncEvent event) {
      settle(gateway, context, response, !response.isCommitted());
    }

    @Override
    public void onStartAsync(AsyncEvent event) {
      event.getAsyncContext().addListener(this); // a re-started async cycle keeps the listener
    }
  }

  /** A response whose output stream reports the usage its body carries. */
  static final class UsageCapturingResponse extends HttpServletResponseWrapper {

    private @Nullable ServletOutputStream stream;
    private final UsageScanner scanner;
    /** Whether the scanner was given the content type (it reads it on the first write only). */
    private boolean typed;

    UsageCapturingResponse(HttpServletResponse response, UsageScanner scanner) {
      super(response);
      this.scanner = scanner;
    }

    @Override
    public ServletOutputStream getOutputStream() throws IOException {
      if (stream == null) {
        stream = new TeeStream(super.getOutputStream(), this);
      }
      return stream;
    }

    @Nullable ModelUsage usage() {
      return scanner.modelUsage();
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
}

package io.github.llmratelimiter.autoconfigure.servlet;

import io.github.llmratelimiter.gateway.internal.HttpFields;
import io.github.llmratelimiter.gateway.RateLimitContext;
import io.github.llmratelimiter.gateway.RateLimitGateway;
import io.github.llmratelimiter.gateway.RequestBody;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ReadListener;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletInputStream;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletRequestWrapper;
import jakarta.servlet.http.HttpServletResponse;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.util.Objects;
import org.jspecify.annotations.Nullable;
import org.springframework.web.filter.OncePerRequestFilter;

/**
 * Lets the limiter read a request body before the handler does, and the handler then read the same
 * bytes: a small JSON body's {@code "model"} field, its model-token estimate and its checks, and the
 * size of a body sent without a {@code Content-Length} (chunked), which must not pass {@code
 * max-body}. It hands the body to the request's {@link RateLimitContext} ({@link RequestBody}); the
 * body is read when the limiter first asks for it, not when the request enters this filter, and is
 * kept only up to {@code max-body} ({@link PeekableBody}).
 *
 * <p>It wraps a {@code POST}, {@code PUT} or {@code PATCH} request whose body is JSON with a declared
 * length up to {@code max-body-peek}, or has no declared length and is not a form; a body of the
 * latter kind that is not JSON is kept only on a request the limiter charges ({@link
 * RateLimitContext#markLimited()}).
 * Form bodies ({@code application/x-www-form-urlencoded}, {@code multipart/*}) are left to the
 * container, which parses their fields and limits their size itself; a declared length above
 * {@code max-body} is rejected from the header without reading.
 */
final class ModelPeekingFilter extends OncePerRequestFilter {

  private static final String FILTERED = ModelPeekingFilter.class.getName() + ".FILTERED";

  private final RateLimitGateway gateway;
  private final int maxBody;
  private final int maxPeek;

  ModelPeekingFilter(RateLimitGateway gateway) {
    this.gateway = gateway;
    this.maxBody = (int) gateway.bodyLimits().maxBody();
    this.maxPeek = (int) gateway.bodyLimits().maxPeek();
  }

  /** A constant name: the default concatenates the filter's name on every request. */
  @Override
  protected String getAlreadyFilteredAttributeName() {
    return FILTERED;
  }

  @Override
  protected boolean shouldNotFilter(HttpServletRequest request) {
    String method = request.getMethod();
    if (!("POST".equals(method) || "PUT".equals(method) || "PATCH".equals(method))) {
      return true;
    }
    long length = request.getContentLengthLong();
    String contentType = request.getContentType();
    if (length < 0) {
      return HttpFields.isForm(contentType);
    }
    return length > maxPeek || !HttpFields.isJson(contentType);
  }

  @Override
  protected void doFilterInternal(
      HttpServletRequest request, HttpServletResponse response, FilterChain chain)
      throws ServletException, IOException {
    RateLimitContext context = ServletContexts.get(request, gateway);
    // a JSON body is kept for whoever asks; another is kept only for a limited request, whose
    // size the limiter checks (a large upload elsewhere streams through)
    ServletInputStream original = request.getInputStream();
    PeekableBody body = new PeekableBody(original, maxBody, request.getContentLengthLong(),
        context.json() ? () -> true : context::limited);
    context.body(new Peeked(body));
    chain.doFilter(new ReplayingRequest(request, original, body), response);
  }

  /** The body as the limiter reads it. */
  private record Peeked(PeekableBody body) implements RequestBody {

    @Override
    public byte @Nullable [] bytes() {
      return body.peek();
    }

    @Override
    public boolean tooLong() {
      return body.tooLong();
    }
  }

  /** A request whose body is read through its {@link PeekableBody}. */
  private static final class ReplayingRequest extends HttpServletRequestWrapper {

    private final ServletInputStream body;

    ReplayingRequest(HttpServletRequest request, ServletInputStream original, PeekableBody body) {
      super(request);
      this.body = new ReplayStream(original, body);
    }

    @Override
    public ServletInputStream getInputStream() {
      return body;
    }

    @Override
    public BufferedReader getReader() {
      String encoding = getCharacterEncoding();
      Charset charset = encoding == null ? StandardCharsets.UTF_8 : Charset.forName(encoding);
      return new BufferedReader(new InputStreamReader(body, charset));
    }
  }

  /**
   * A blocking servlet input stream over a peekable body; a body that streams through unkept is
   * also readable asynchronously, as the request's own stream.
   */
  private static final class ReplayStream extends ServletInputStream {

    private final ServletInputStream original;
    private final PeekableBody body;
    private final byte[] one = new byte[1];

    ReplayStream(ServletInputStream original, PeekableBody body) {
      this.original = original;
      this.body = body;
    }

    @Override
    public int read() throws IOException {
      return body.read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
      Objects.checkFromIndexSize(off, len, b.length);
      return body.read(b, off, len);
    }

    @Override
    public boolean isFinished() {
      return body.kept() ? body.finished() : original.isFinished();
    }

    @Override
    public boolean isReady() {
      return body.kept() || original.isReady();
    }

    @Override
    public void setReadListener(ReadListener listener) {
      if (!body.streamsThrough()) {
        throw new UnsupportedOperationException("asynchronous reads of a body the limiter keeps");
      }
      original.setReadListener(listener);
    }
  }
}

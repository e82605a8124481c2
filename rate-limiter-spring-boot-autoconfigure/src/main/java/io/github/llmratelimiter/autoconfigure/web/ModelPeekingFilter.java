package io.github.llmratelimiter.autoconfigure.web;

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
 * Lets the key resolver read a small JSON request body's {@code "model"} field (and the estimator
 * its messages) before the handler reads the body; the handler then reads the same bytes. The body
 * is read when the limiter first asks for it ({@link #body}), not when the request enters this
 * filter, and is kept only up to the limit ({@link PeekableBody}).
 */
final class ModelPeekingFilter extends OncePerRequestFilter {

  static final String BODY_ATTRIBUTE = ModelPeekingFilter.class.getName() + ".body";

  private static final String FILTERED = ModelPeekingFilter.class.getName() + ".FILTERED";

  private final int maxBytes;

  ModelPeekingFilter(long maxBytes) {
    this.maxBytes = (int) Math.min(Integer.MAX_VALUE - 8, Math.max(0, maxBytes));
  }

  /** A constant name: the default concatenates the filter's name on every request. */
  @Override
  protected String getAlreadyFilteredAttributeName() {
    return FILTERED;
  }

  @Override
  protected boolean shouldNotFilter(HttpServletRequest request) {
    String contentType = request.getContentType();
    String method = request.getMethod();
    return maxBytes == 0 || contentType == null || !containsJson(contentType)
        || !("POST".equals(method) || "PUT".equals(method) || "PATCH".equals(method))
        || request.getContentLengthLong() > maxBytes;
  }

  /** Whether the content type contains {@code json} in any case, without a lower-cased copy. */
  static boolean containsJson(String contentType) {
    for (int i = 0; i + 4 <= contentType.length(); i++) {
      if (contentType.regionMatches(true, i, "json", 0, 4)) {
        return true;
      }
    }
    return false;
  }

  @Override
  protected void doFilterInternal(
      HttpServletRequest request, HttpServletResponse response, FilterChain chain)
      throws ServletException, IOException {
    PeekableBody body =
        new PeekableBody(request.getInputStream(), maxBytes, request.getContentLengthLong());
    request.setAttribute(BODY_ATTRIBUTE, body);
    chain.doFilter(new ReplayingRequest(request, body), response);
  }

  /**
   * Returns the body of a request this filter wrapped, reading it now if nothing has yet.
   *
   * @return the body, or {@code null} when the filter did not wrap the request, the body is longer
   *     than the limit or it could not be read
   */
  static byte @Nullable [] body(HttpServletRequest request) {
    return request.getAttribute(BODY_ATTRIBUTE) instanceof PeekableBody body ? body.peek() : null;
  }

  /** A request whose body is read through its {@link PeekableBody}. */
  private static final class ReplayingRequest extends HttpServletRequestWrapper {

    private final ServletInputStream body;

    ReplayingRequest(HttpServletRequest request, PeekableBody body) {
      super(request);
      this.body = new ReplayStream(body);
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

  /** A blocking servlet input stream over a peekable body. */
  private static final class ReplayStream extends ServletInputStream {

    private final PeekableBody body;
    private final byte[] one = new byte[1];

    ReplayStream(PeekableBody body) {
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
      return body.finished();
    }

    @Override
    public boolean isReady() {
      return true;
    }

    @Override
    public void setReadListener(ReadListener listener) {
      throw new UnsupportedOperationException("asynchronous reads of a replayed body");
    }
  }
}

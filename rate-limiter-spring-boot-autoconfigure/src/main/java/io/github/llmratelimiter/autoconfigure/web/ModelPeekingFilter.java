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
 * Lets the limiter read a request body before the handler does, and the handler then read the same
 * bytes: a small JSON body's {@code "model"} field, its model-token estimate and its checks, and the
 * size of a body sent without a {@code Content-Length} (chunked), which must not pass {@code
 * max-body}. The body is read when the limiter first asks for it ({@link #body}, {@link #tooLong}),
 * not when the request enters this filter, and is kept only up to {@code max-body} ({@link
 * PeekableBody}).
 *
 * <p>It wraps a {@code POST}, {@code PUT} or {@code PATCH} request whose body is JSON with a declared
 * length up to {@code max-body-peek}, or has no declared length and is not a form; a body of the
 * latter kind that is not JSON is kept only on a request the limiter charges ({@link #limited}).
 * Form bodies ({@code application/x-www-form-urlencoded}, {@code multipart/*}) are left to the
 * container, which parses their fields and limits their size itself; a declared length above
 * {@code max-body} is rejected from the header without reading.
 */
final class ModelPeekingFilter extends OncePerRequestFilter {

  private static final String BODY_ATTRIBUTE = ModelPeekingFilter.class.getName() + ".body";

  private static final String FILTERED = ModelPeekingFilter.class.getName() + ".FILTERED";

  /** Marks a request the limiter will charge: its body is kept even if the handler reads first. */
  private static final String LIMITED = ModelPeekingFilter.class.getName() + ".limited";

  private final int maxBody;
  private final int maxPeek;

  ModelPeekingFilter(BodyLimits limits) {
    this.maxBody = (int) limits.maxBody();
    this.maxPeek = (int) limits.maxPeek();
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
      return isForm(contentType);
    }
    return length > maxPeek || contentType == null || !containsJson(contentType);
  }

  /** Whether the content type contains {@code json} in any case, without a lower-cased copy. */
  static boolean containsJson(String contentType) {
    return contains(contentType, "json");
  }

  /** Whether the content type is a form the container parses into request parameters. */
  static boolean isForm(@Nullable String contentType) {
    return contentType != null && (contentType.regionMatches(true, 0, "multipart/", 0, 10)
        || contains(contentType, "application/x-www-form-urlencoded"));
  }

  private static boolean contains(String s, String part) {
    for (int i = 0; i + part.length() <= s.length(); i++) {
      if (s.regionMatches(true, i, part, 0, part.length())) {
        return true;
      }
    }
    return false;
  }

  @Override
  protected void doFilterInternal(
      HttpServletRequest request, HttpServletResponse response, FilterChain chain)
      throws ServletException, IOException {
    String contentType = request.getContentType();
    boolean json = contentType != null && containsJson(contentType);
    // a JSON body is kept for whoever asks; another is kept only for a limited request, whose
    // size the limiter checks (a large upload elsewhere streams through)
    ServletInputStream original = request.getInputStream();
    PeekableBody body = new PeekableBody(original, maxBody, request.getContentLengthLong(),
        json ? () -> true : () -> request.getAttribute(LIMITED) != null);
    request.setAttribute(BODY_ATTRIBUTE, new Wrapped(body, json, maxPeek));
    chain.doFilter(new ReplayingRequest(request, original, body), response);
  }

  /**
   * Returns the JSON body of a request this filter wrapped, reading it now if nothing has yet.
   *
   * @return the body, or {@code null} when the filter did not wrap the request, the body is not
   *     JSON, is longer than {@code max-body-peek} or could not be read
   */
  static byte @Nullable [] body(HttpServletRequest request) {
    if (!(request.getAttribute(BODY_ATTRIBUTE) instanceof Wrapped w) || !w.json()) {
      return null;
    }
    byte[] bytes = w.body().peek();
    return bytes == null || bytes.length > w.maxPeek() ? null : bytes;
  }

  /**
   * Returns whether a request this filter wrapped has a body longer than {@code max-body}, reading
   * it up to that size now.
   *
   * @return {@code true} if it has; {@code false} when it has not, could not be read or was not
   *     wrapped
   */
  static boolean tooLong(HttpServletRequest request) {
    return request.getAttribute(BODY_ATTRIBUTE) instanceof Wrapped w && w.body().tooLong();
  }

  /**
   * Returns the length of a body this filter wrapped, reading it now if nothing has yet.
   *
   * @return the length, or -1 when the filter did not wrap the request, the body is longer than
   *     {@code max-body} or could not be read
   */
  static long length(HttpServletRequest request) {
    if (!(request.getAttribute(BODY_ATTRIBUTE) instanceof Wrapped w)) {
      return -1;
    }
    byte[] bytes = w.body().peek();
    return bytes == null ? -1 : bytes.length;
  }

  /**
   * Marks a request the limiter will charge (a route matched it, or its handler is annotated), so
   * that its body is kept when the handler reads it before the limiter checks it.
   */
  static void limited(HttpServletRequest request) {
    request.setAttribute(LIMITED, Boolean.TRUE);
  }

  /** What the filter keeps on the request: the body, whether it is JSON, the parse limit. */
  private record Wrapped(PeekableBody body, boolean json, int maxPeek) {}

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

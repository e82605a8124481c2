package io.github.llmratelimiter.autoconfigure.web;

import jakarta.servlet.FilterChain;
import jakarta.servlet.ReadListener;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletInputStream;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletRequestWrapper;
import jakarta.servlet.http.HttpServletResponse;
import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.SequenceInputStream;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.springframework.web.filter.OncePerRequestFilter;

/**
 * Buffers a small JSON request body so the key resolver can read its {@code "model"} field before
 * the handler reads the body; the handler then reads the same bytes. Bodies larger than the limit
 * are not buffered (the bytes already read are replayed ahead of the rest).
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
    InputStream in = request.getInputStream();
    long length = request.getContentLengthLong();
    byte[] prefix;
    if (length >= 0) {
      // the declared length (at most maxBytes here): one exact read, no growing buffers; the
      // container ends the stream there
      prefix = new byte[(int) length];
      int n = in.readNBytes(prefix, 0, prefix.length);
      if (n < prefix.length) {
        prefix = Arrays.copyOf(prefix, n);
      }
    } else {
      prefix = in.readNBytes(maxBytes + 1);
    }
    HttpServletRequest wrapped;
    if (prefix.length <= maxBytes) {
      request.setAttribute(BODY_ATTRIBUTE, prefix);
      wrapped = new ReplayingRequest(request, new ByteArrayInputStream(prefix));
    } else {
      wrapped = new ReplayingRequest(request, new SequenceInputStream(new ByteArrayInputStream(prefix), in));
    }
    chain.doFilter(wrapped, response);
  }

  /** A request whose body is read from a replay stream. */
  private static final class ReplayingRequest extends HttpServletRequestWrapper {

    private final ServletInputStream body;

    ReplayingRequest(HttpServletRequest request, InputStream body) {
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

  /** A blocking servlet input stream over a plain one. */
  private static final class ReplayStream extends ServletInputStream {

    private final InputStream in;
    private boolean finished;

    ReplayStream(InputStream in) {
      this.in = in;
    }

    @Override
    public int read() throws IOException {
      int b = in.read();
      finished = b < 0;
      return b;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
      int n = in.read(b, off, len);
      finished = n < 0;
      return n;
    }

    @Override
    public boolean isFinished() {
      return finished;
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

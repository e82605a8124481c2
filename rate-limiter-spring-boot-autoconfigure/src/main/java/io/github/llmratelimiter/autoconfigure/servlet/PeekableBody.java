package io.github.llmratelimiter.autoconfigure.servlet;

import java.io.IOException;
import java.io.InputStream;
import java.util.Arrays;
import java.util.function.BooleanSupplier;
import org.jspecify.annotations.Nullable;

/**
 * A request body that is read once, when someone first needs it, and kept when it is small: the
 * limiter {@link #peek() peeks} at it (reading it to its end) and the handler {@link #read reads}
 * it, in either order, and both see the same bytes. Bytes past {@code max} are not kept: the
 * handler reads them straight from the request, and a peek then answers {@code null}.
 *
 * <p>Reading late matters: a client may send the body after the headers, and a read that finds no
 * bytes yet blocks the request's thread until they come; the limiter peeks when it decides, just
 * before the handler would read the body anyway. Not thread-safe: a request's body is read by the
 * thread that serves it.
 *
 * <p>Whether bytes are kept is decided at the first access: a peek keeps them; a read keeps them
 * only if {@code keep} says so then (the request is one the limiter will look at after the handler
 * read it). A body that is not kept passes straight through, counted: {@link #peek()} answers
 * {@code null} and {@link #tooLong()} knows only a body read to its end.
 */
final class PeekableBody {

  private static final byte[] EMPTY = new byte[0];

  private final InputStream in;
  private final int max;
  /** The declared length, or -1. */
  private final long length;
  private final BooleanSupplier keep;

  /** Whether the bytes are kept; null until the first access decides. */
  private @Nullable Boolean keeping;
  /** Bytes passed through without being kept. */
  private long passed;

  private byte[] buf = EMPTY;
  /** Bytes read from {@link #in} into {@link #buf}. */
  private int len;
  /** The handler's position in {@link #buf}. */
  private int pos;
  private boolean eof;
  /** More than {@link #max} bytes: {@link #buf} stops growing, the rest passes through. */
  private boolean overflow;
  private @Nullable IOException failure;
  private byte @Nullable [] body;

  PeekableBody(InputStream in, int max, long length) {
    this(in, max, length, () -> true);
  }

  PeekableBody(InputStream in, int max, long length, BooleanSupplier keep) {
    this.in = in;
    this.max = max;
    this.length = length;
    this.keep = keep;
  }

  /**
   * Returns the whole body, reading what is left of it now.
   *
   * @return the body, or {@code null} when it is longer than the limit or could not be read
   */
  byte @Nullable [] peek() {
    if (body != null) {
      return body;
    }
    if (keeping == null) {
      keeping = true;
    }
    if (!keeping) {
      return null;
    }
    try {
      while (!eof && !overflow) {
        fill();
      }
    } catch (IOException e) {
      failure = e; // the handler's next read reports it
      return null;
    }
    if (overflow) {
      return null;
    }
    body = len == buf.length ? buf : Arrays.copyOf(buf, len);
    return body;
  }

  /** Reads from the request into {@link #buf}, growing it up to {@code max + 1} bytes. */
  private void fill() throws IOException {
    if (len == buf.length) {
      int capacity = length >= 0 && length <= max && len < length ? (int) length
          : (int) Math.min((long) max + 1, Math.max(1024L, buf.length * 2L));
      buf = Arrays.copyOf(buf, capacity);
    }
    int n = in.read(buf, len, buf.length - len);
    if (n < 0) {
      eof = true;
      return;
    }
    len += n;
    if (len > max) {
      overflow = true;
    } else if (len == length) {
      eof = true; // the declared length: the container ends the stream there
    }
  }

  /**
   * Returns whether the body is longer than the limit, reading it up to the limit now.
   *
   * @return {@code true} if it is; {@code false} when it is not or could not be read (the handler's
   *     read then reports the failure)
   */
  boolean tooLong() {
    peek();
    return overflow || passed > max;
  }

  /**
   * Reads like {@link InputStream#read(byte[], int, int)}: the kept bytes first, then the rest.
   */
  int read(byte[] b, int off, int n) throws IOException {
    if (failure != null) {
      throw failure;
    }
    if (n == 0) {
      return 0;
    }
    if (streamsThrough()) {
      return passThrough(b, off, n);
    }
    if (pos == len && !eof && !overflow) {
      fill();
    }
    if (pos < len) {
      int k = Math.min(n, len - pos);
      System.arraycopy(buf, pos, b, off, k);
      pos += k;
      return k;
    }
    if (eof) {
      return -1;
    }
    int r = in.read(b, off, n); // past the limit: straight from the request
    if (r < 0) {
      eof = true;
    }
    return r;
  }

  /**
   * Returns whether the body's bytes are kept; {@code false} also while nothing has decided it
   * (nothing was read yet).
   *
   * @return {@code true} once a peek or a read decided to keep them
   */
  boolean kept() {
    return Boolean.TRUE.equals(keeping);
  }

  /**
   * Returns whether the body streams through unkept, deciding it now if nothing was read yet (as a
   * read would).
   *
   * @return {@code true} if its bytes are not kept
   */
  boolean streamsThrough() {
    if (keeping == null) {
      keeping = keep.getAsBoolean();
    }
    return !keeping;
  }

  private int passThrough(byte[] b, int off, int n) throws IOException {
    if (eof) {
      return -1;
    }
    int r = in.read(b, off, n);
    if (r < 0) {
      eof = true;
    } else {
      passed += r;
    }
    return r;
  }

  /** Whether the handler read every byte. */
  boolean finished() {
    return pos == len && eof;
  }
}

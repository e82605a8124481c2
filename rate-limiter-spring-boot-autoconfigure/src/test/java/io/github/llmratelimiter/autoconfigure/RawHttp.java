package io.github.llmratelimiter.autoconfigure;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * HTTP/1.1 on a plain socket, for requests a well-behaved client will not send: repeated headers, a
 * declared length the client never sends in full, a chunked body. The body is written by a thread
 * of its own while the response is read, so a server that answers before reading the whole body
 * (and then closes) is seen as it answers; a write the server refuses is ignored.
 */
public final class RawHttp {

  private RawHttp() {}

  /**
   * A response.
   *
   * @param status the status code
   * @param headers the headers, by lower-cased name (the first value of each)
   * @param body the body, de-chunked, as UTF-8
   */
  public record Response(int status, Map<String, String> headers, String body) {}

  /** One request header line. */
  public record Header(String name, String value) {}

  /**
   * Returns one header.
   *
   * @param name the name
   * @param value the value
   * @return the header
   */
  public static Header header(String name, String value) {
    return new Header(name, value);
  }

  /**
   * Sends a request with {@code Connection: close} and reads its response.
   *
   * @param port the server's port on localhost
   * @param requestLine for example {@code POST /v1/chat HTTP/1.1}
   * @param headers the headers, repeated names included, besides {@code Host} and {@code Connection}
   * @param body the body as sent (already chunk-framed when the headers say chunked), or empty
   * @return the response
   * @throws IOException if the response cannot be read
   */
  public static Response send(int port, String requestLine, List<Header> headers, byte[] body)
      throws IOException {
    try (Socket socket = new Socket("localhost", port)) {
      socket.setSoTimeout(30_000);
      StringBuilder head = new StringBuilder(requestLine).append("\r\nHost: localhost\r\nConnection: close\r\n");
      for (Header h : headers) {
        head.append(h.name()).append(": ").append(h.value()).append("\r\n");
      }
      head.append("\r\n");
      OutputStream out = socket.getOutputStream();
      out.write(head.toString().getBytes(StandardCharsets.ISO_8859_1));
      out.flush();
      Thread writer = new Thread(() -> {
        try {
          for (int off = 0; off < body.length; off += 8192) {
            out.write(body, off, Math.min(8192, body.length - off));
          }
          out.flush();
        } catch (IOException e) {
          // the server answered and closed before reading the rest: what some tests expect
        }
      }, "raw-http-body");
      writer.setDaemon(true);
      writer.start();
      Response response = read(socket.getInputStream());
      socket.close();
      try {
        writer.join(10_000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      return response;
    }
  }

  /** What a client saw of a stream before it went away: the status line and the first event. */
  public record StreamStart(String statusLine, String firstEvent) {}

  /** What runs while the connection is open, after the first event arrived. */
  @FunctionalInterface
  public interface WhileOpen {
    /**
     * Runs.
     *
     * @throws Exception if it fails
     */
    void run() throws Exception;
  }

  /**
   * Sends a request whose response is an event stream, reads it up to its first {@code data:} line,
   * runs {@code whileOpen}, then closes the connection with a reset: the server's next writes fail,
   * as when a client goes away mid-stream.
   *
   * @param port the server's port on localhost
   * @param requestLine for example {@code POST /llm/stream HTTP/1.1}
   * @param headers the headers besides {@code Host} (with the body's {@code Content-Length})
   * @param body the body
   * @param whileOpen what runs before the reset
   * @return the status line and the first {@code data:} line ({@code null} when none came)
   * @throws Exception if the connection or {@code whileOpen} fails
   */
  public static StreamStart firstEventThenReset(int port, String requestLine, List<Header> headers,
      byte[] body, WhileOpen whileOpen) throws Exception {
    try (Socket socket = new Socket("localhost", port)) {
      socket.setSoTimeout(10_000);
      StringBuilder head = new StringBuilder(requestLine).append("\r\nHost: localhost\r\n");
      for (Header h : headers) {
        head.append(h.name()).append(": ").append(h.value()).append("\r\n");
      }
      OutputStream out = socket.getOutputStream();
      out.write(head.append("\r\n").toString().getBytes(StandardCharsets.ISO_8859_1));
      out.write(body);
      out.flush();
      InputStream in = socket.getInputStream();
      String status = line(in);
      String event;
      do {
        event = line(in);
      } while (!event.startsWith("data:"));
      whileOpen.run();
      socket.setSoLinger(true, 0); // close with a reset
      return new StreamStart(status, new String(event.getBytes(StandardCharsets.ISO_8859_1),
          StandardCharsets.UTF_8));
    }
  }

  /**
   * Frames a body in chunks of at most {@code size} bytes, ending with the last chunk.
   *
   * @param body the body
   * @param size the largest chunk
   * @return the chunked body
   */
  public static byte[] chunked(byte[] body, int size) {
    ByteArrayOutputStream out = new ByteArrayOutputStream(body.length + body.length / size * 8 + 8);
    for (int off = 0; off < body.length; off += size) {
      int n = Math.min(size, body.length - off);
      out.writeBytes((Integer.toHexString(n) + "\r\n").getBytes(StandardCharsets.ISO_8859_1));
      out.write(body, off, n);
      out.writeBytes("\r\n".getBytes(StandardCharsets.ISO_8859_1));
    }
    out.writeBytes("0\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1));
    return out.toByteArray();
  }

  private static Response read(InputStream in) throws IOException {
    String statusLine = line(in);
    int status = Integer.parseInt(statusLine.split(" ")[1]);
    Map<String, String> headers = new TreeMap<>();
    for (String l = line(in); !l.isEmpty(); l = line(in)) {
      int colon = l.indexOf(':');
      headers.putIfAbsent(l.substring(0, colon).trim().toLowerCase(Locale.ROOT), l.substring(colon + 1).trim());
    }
    ByteArrayOutputStream body = new ByteArrayOutputStream();
    if ("chunked".equalsIgnoreCase(headers.get("transfer-encoding"))) {
      for (int n = Integer.parseInt(line(in).trim(), 16); n > 0; n = Integer.parseInt(line(in).trim(), 16)) {
        body.write(in.readNBytes(n));
        line(in);
      }
    } else if (headers.containsKey("content-length")) {
      body.write(in.readNBytes(Integer.parseInt(headers.get("content-length"))));
    } else {
      body.write(in.readAllBytes());
    }
    return new Response(status, headers, body.toString(StandardCharsets.UTF_8));
  }

  private static String line(InputStream in) throws IOException {
    List<Byte> bytes = new ArrayList<>();
    for (int b = in.read(); b != '\n'; b = in.read()) {
      if (b < 0) {
        throw new IOException("the connection closed mid-line: " + bytes.size() + " bytes read");
      }
      if (b != '\r') {
        bytes.add((byte) b);
      }
    }
    byte[] a = new byte[bytes.size()];
    for (int i = 0; i < a.length; i++) {
      a[i] = bytes.get(i);
    }
    return new String(a, StandardCharsets.ISO_8859_1);
  }
}

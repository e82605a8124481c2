package io.github.llmratelimiter.benchmarks.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class HttpRunTests {

  @Test
  void aRequestWhoseConnectionClosesUnderItIsSentOnceMoreAndCounted() throws Exception {
    try (ServerSocket server = new ServerSocket(0, 4, InetAddress.getLoopbackAddress())) {
      daemon(() -> serve(server, 1));
      AtomicLong retried = new AtomicLong();
      AtomicLong hung = new AtomicLong();
      HttpResponse<byte[]> response = HttpRun.sendRetrying(client(), request(server), retried,
          hung, waited -> HttpRun.HangCheck.STILL_SERVING);
      assertEquals(200, response.statusCode());
      assertEquals("ok", new String(response.body(), StandardCharsets.US_ASCII));
      assertEquals(1, retried.get());
      assertEquals(0, hung.get());
    }
  }

  @Test
  void aSecondClosedConnectionFailsTheRequest() throws Exception {
    try (ServerSocket server = new ServerSocket(0, 4, InetAddress.getLoopbackAddress())) {
      daemon(() -> serve(server, 2));
      AtomicLong retried = new AtomicLong();
      assertThrows(IOException.class, () -> HttpRun.sendRetrying(client(), request(server),
          retried, new AtomicLong(), waited -> HttpRun.HangCheck.STILL_SERVING));
      assertEquals(1, retried.get());
    }
  }

  @Test
  void aCallTheClientHangsOnWhileTheGatewayServesNoneAsOldIsSentAgainAndCounted() throws Exception {
    try (StallingServer stalling = new StallingServer()) {
      ServerSocket server = stalling.server;
      AtomicLong retried = new AtomicLong();
      AtomicLong hung = new AtomicLong();
      List<Duration> asked = new CopyOnWriteArrayList<>();
      Set<Path> dumps = clientThreadDumps();
      HttpResponse<byte[]> response = HttpRun.sendRetrying(client(), request(server, 1), retried,
          hung, waited -> {
            asked.add(waited);
            return "nothing in flight";
          }, Duration.ofMillis(100));
      Set<Path> written = clientThreadDumps();
      written.removeAll(dumps);
      assertEquals(1, written.size(), "the client's threads of the hung call: " + written);
      for (Path dump : written) { // kept for a run's reader; this test's is not needed
        Files.delete(dump);
      }
      assertEquals(200, response.statusCode());
      assertEquals("ok", new String(response.body(), StandardCharsets.US_ASCII));
      assertEquals(List.of(Duration.ofMillis(1100)), asked);
      assertEquals(1, hung.get());
      assertEquals(0, retried.get());
    }
  }

  @Test
  void aHungCallTheGatewayStillServesFailsTheRequestWithTheClientsThreads() throws Exception {
    try (StallingServer stalling = new StallingServer()) {
      ServerSocket server = stalling.server;
      AtomicLong hung = new AtomicLong();
      HttpRun.HungCallException e = assertThrows(HttpRun.HungCallException.class,
          () -> HttpRun.sendRetrying(client(), request(server, 1), new AtomicLong(), hung,
              waited -> HttpRun.HangCheck.STILL_SERVING, Duration.ofMillis(100)));
      assertEquals(0, hung.get());
      assertTrue(Files.readString(Path.of(e.threads)).contains("Thread"), e.threads);
      Files.delete(Path.of(e.threads));
    }
  }

  @Test
  void aMetricsStatisticIsReadFromActuatorsJsonAndAnAbsentMetricCountsZero() {
    String timer = "{\"name\":\"ratelimiter.decision.latency\",\"baseUnit\":\"seconds\","
        + "\"measurements\":[{\"statistic\":\"COUNT\",\"value\":4.0},{\"statistic\":"
        + "\"TOTAL_TIME\",\"value\":0.015371608},{\"statistic\":\"MAX\",\"value\":1.5E-2}]}";
    assertEquals(4.0, HttpRun.statistic(timer, "COUNT"));
    assertEquals(0.015371608, HttpRun.statistic(timer, "TOTAL_TIME"));
    assertEquals(0.0, HttpRun.statistic("", "COUNT"));
    assertThrows(IllegalStateException.class, () -> HttpRun.statistic(timer, "VALUE"));
  }

  /** The files of the client's threads that hung calls left in the temporary directory. */
  private static Set<Path> clientThreadDumps() throws IOException {
    try (Stream<Path> files = Files.list(Path.of(System.getProperty("java.io.tmpdir")))) {
      return files.filter(f -> f.getFileName().toString().startsWith("http-run-threads-"))
          .collect(Collectors.toSet());
    }
  }

  private static void daemon(Runnable server) {
    Thread t = new Thread(server);
    t.setDaemon(true);
    t.start();
  }

  private static HttpClient client() {
    return HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
  }

  private static HttpRequest request(ServerSocket server) {
    return request(server, 5);
  }

  private static HttpRequest request(ServerSocket server, int timeoutSeconds) {
    return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.getLocalPort() + "/"))
        .timeout(Duration.ofSeconds(timeoutSeconds))
        .POST(HttpRequest.BodyPublishers.ofString("{}"))
        .build();
  }

  /** Closes the first {@code closing} connections after reading their request, then answers 200. */
  private static void serve(ServerSocket server, int closing) {
    try {
      for (int i = 0; ; i++) {
        try (Socket s = server.accept()) {
          readRequest(s.getInputStream());
          if (i < closing) {
            continue; // closed without a byte of answer
          }
          OutputStream out = s.getOutputStream();
          out.write(("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
              .getBytes(StandardCharsets.US_ASCII));
          out.flush();
        }
      }
    } catch (IOException e) {
      // the server socket closed: the test is over
    }
  }

  /**
   * A server that answers the first connection's request with the head of a chunked response and
   * one chunk, then nothing more (the connection kept open until closed), and 200 on the next ones.
   */
  private static final class StallingServer implements AutoCloseable {

    final ServerSocket server;
    private final List<Socket> stalled = new CopyOnWriteArrayList<>();

    StallingServer() throws IOException {
      server = new ServerSocket(0, 4, InetAddress.getLoopbackAddress());
      daemon(this::serve);
    }

    private void serve() {
      try {
        for (int i = 0; ; i++) {
          Socket s = server.accept();
          readRequest(s.getInputStream());
          OutputStream out = s.getOutputStream();
          if (i == 0) {
            stalled.add(s);
            out.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n"
                .getBytes(StandardCharsets.US_ASCII));
            out.flush();
            continue;
          }
          try (s) {
            out.write(("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
                .getBytes(StandardCharsets.US_ASCII));
            out.flush();
          }
        }
      } catch (IOException e) {
        // the server socket closed: the test is over
      }
    }

    @Override
    public void close() throws IOException {
      server.close();
      for (Socket s : stalled) {
        s.close();
      }
    }
  }

  /** Reads the head and a 2-byte body. */
  private static void readRequest(InputStream in) throws IOException {
    int matched = 0;
    byte[] end = {'\r', '\n', '\r', '\n'};
    while (matched < 4) {
      int b = in.read();
      if (b < 0) {
        return;
      }
      matched = b == end[matched] ? matched + 1 : b == '\r' ? 1 : 0;
    }
    in.readNBytes(2);
  }
}

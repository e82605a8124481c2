package io.github.llmratelimiter.benchmarks.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

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
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class HttpRunTests {

  @Test
  void aRequestWhoseConnectionClosesUnderItIsSentOnceMoreAndCounted() throws Exception {
    try (ServerSocket server = new ServerSocket(0, 4, InetAddress.getLoopbackAddress())) {
      Thread t = new Thread(() -> serve(server, 1));
      t.setDaemon(true);
      t.start();
      AtomicLong retried = new AtomicLong();
      HttpResponse<byte[]> response = HttpRun.sendRetrying(client(), request(server), retried);
      assertEquals(200, response.statusCode());
      assertEquals("ok", new String(response.body(), StandardCharsets.US_ASCII));
      assertEquals(1, retried.get());
    }
  }

  @Test
  void aSecondClosedConnectionFailsTheRequest() throws Exception {
    try (ServerSocket server = new ServerSocket(0, 4, InetAddress.getLoopbackAddress())) {
      Thread t = new Thread(() -> serve(server, 2));
      t.setDaemon(true);
      t.start();
      AtomicLong retried = new AtomicLong();
      assertThrows(IOException.class, () -> HttpRun.sendRetrying(client(), request(server), retried));
      assertEquals(1, retried.get());
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

  private static HttpClient client() {
    return HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
  }

  private static HttpRequest request(ServerSocket server) {
    return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.getLocalPort() + "/"))
        .timeout(Duration.ofSeconds(5))
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

package io.github.llmratelimiter.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.Decision;
import io.github.llmratelimiter.core.Reason;
import io.github.llmratelimiter.core.WindowLimit;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.SslOptions;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The store over TLS, against a redis-server that accepts TLS only and requires a client
 * certificate (certificates made by the test): with the CA trusted and the client's certificate it
 * limits exactly; a plain-text client, a client without a certificate and a client that does not
 * trust the server's CA are each refused, for that reason (the server's log says which). Skipped,
 * saying why, if the redis-server binary was built without TLS.
 */
class RedisTlsTests {

  private static final Budget TWO = new Budget("rpm", WindowLimit.perMinute(2), null);

  private static TestCertificates certificates;
  private static RedisServer server;

  @BeforeAll
  static void startServer() {
    if (RedisServer.supportsTls()) {
      certificates = TestCertificates.create(Path.of("target", "tls-" + System.nanoTime()));
      server = RedisServer.startTls(certificates);
    }
  }

  @BeforeEach
  void tlsServer() {
    assumeTrue(server != null,
        "skipped: the redis-server binary was built without TLS, so no TLS test can run here");
  }

  @AfterAll
  static void stopServer() {
    if (server != null) {
      server.close();
    }
  }

  private static SslOptions.Builder trustingTheCa() {
    return SslOptions.builder().trustManager(certificates.caCertificate().toFile());
  }

  private static SslOptions mutual() {
    return trustingTheCa().keyManager(certificates.clientCertificate().toFile(),
        certificates.clientKey().toFile(), null).build();
  }

  private static RedisRateLimitStore store(RedisURI uri, SslOptions ssl) {
    RedisRateLimitStore.Builder builder = RedisRateLimitStore.builder(uri)
        .keyPrefix(TestRedis.freshPrefix())
        .commandTimeout(TestRedis.TEST_TIMEOUT)
        .failurePolicy(FailurePolicy.FAIL_CLOSED);
    if (ssl != null) {
      builder.sslOptions(ssl);
    }
    return builder.build();
  }

  private static Decision acquire(RedisRateLimitStore store) {
    return store.acquire(TWO, "tenant", 1, Composition.SEQUENTIAL);
  }

  @Test
  void limitsExactlyOverTlsWithTheClientsCertificate() {
    assertThat(server.uri().isSsl()).isTrue();
    try (RedisRateLimitStore store = store(server.uri(), mutual())) {
      assertThat(List.of(acquire(store), acquire(store), acquire(store)))
          .extracting(Decision::reason)
          .containsExactly(Reason.OK, Reason.OK, Reason.RPM_LIMIT);
      assertThat(store.errorCount()).isZero();
      assertThat(store.ping()).isTrue();
    }
  }

  @Test
  void refusesAPlainTextClient() throws IOException {
    long before = server.logged("wrong version number");
    RedisURI plain = RedisURI.create("redis://127.0.0.1:" + server.port());
    try (RedisRateLimitStore store = store(plain, null)) {
      assertThat(acquire(store).reason()).isEqualTo(Reason.STORE_UNAVAILABLE);
      assertThat(store.ping()).isFalse();
    }
    // a raw PING in clear gets no PONG: the server only speaks TLS on that port
    try (Socket s = new Socket(InetAddress.getLoopbackAddress(), server.port())) {
      s.setSoTimeout(2000);
      s.getOutputStream().write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
      s.getOutputStream().flush();
      String reply = read(s.getInputStream());
      assertThat(reply).doesNotContain("PONG");
    }
    server.awaitLogged("wrong version number", before);
  }

  @Test
  void refusesAClientWithoutACertificate() {
    long before = server.logged("did not return a certificate");
    try (RedisRateLimitStore store = store(server.uri(), trustingTheCa().build())) {
      assertThat(acquire(store).reason()).isEqualTo(Reason.STORE_UNAVAILABLE);
      assertThat(store.errorCount()).isPositive();
      server.awaitLogged("did not return a certificate", before);
    }
  }

  @Test
  void refusesAServerWhoseCaIsNotTrusted() {
    long before = server.logged("certificate unknown");
    // the JVM's default trust store does not hold the test CA
    SslOptions defaultTrust = SslOptions.builder().keyManager(certificates.clientCertificate().toFile(),
        certificates.clientKey().toFile(), null).build();
    try (RedisRateLimitStore store = store(server.uri(), defaultTrust)) {
      assertThat(acquire(store).reason()).isEqualTo(Reason.STORE_UNAVAILABLE);
      assertThat(store.errorCount()).isPositive();
      // the client's alert: it did not trust the server
      server.awaitLogged("certificate unknown", before);
    }
  }

  @Test
  void rejectsTlsOptionsWithoutATlsUriOrOnAClientOfTheApplication() {
    assertThatIllegalArgumentException()
        .isThrownBy(() -> RedisRateLimitStore.builder("redis://127.0.0.1:" + server.port())
            .sslOptions(mutual()).build())
        .withMessageContaining("sslOptions").withMessageContaining("rediss://");
    RedisClient applications = RedisClient.create();
    try {
      assertThatIllegalStateException()
          .isThrownBy(() -> RedisRateLimitStore.builder(applications, server.uri())
              .sslOptions(mutual()))
          .withMessageContaining("ClientOptions");
    } finally {
      applications.shutdown();
    }
  }

  /** What the server sends before it closes the connection or stays silent for 2 s. */
  private static String read(InputStream in) throws IOException {
    StringBuilder text = new StringBuilder();
    byte[] buf = new byte[256];
    try {
      for (int n; (n = in.read(buf)) > 0; ) {
        text.append(new String(buf, 0, n, StandardCharsets.ISO_8859_1));
      }
    } catch (SocketTimeoutException | SocketException silentOrReset) {
      // nothing more
    }
    return text.toString();
  }
}

package io.github.llmratelimiter.autoconfigure.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.github.llmratelimiter.autoconfigure.RateLimiterAutoConfiguration;
import io.github.llmratelimiter.core.Reason;
import io.github.llmratelimiter.gateway.RateLimitEnforcer;
import io.github.llmratelimiter.gateway.RateLimitKey;
import io.github.llmratelimiter.redis.RedisRateLimitStore;
import io.github.llmratelimiter.redis.RedisServer;
import io.github.llmratelimiter.redis.TestCertificates;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.cert.CertificateFactory;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.ssl.SslAutoConfiguration;
import org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * The Redis store over TLS, configured as Boot configures its own Redis client, against
 * redis-servers that accept TLS only (certificates made by the test): one that requires a client
 * certificate, one that does not. With a PEM SSL bundle ({@code spring.data.redis.ssl.bundle}) the
 * store limits exactly; without the bundle's client certificate, without TLS, or without trusting
 * the server's CA it is refused, and the server's log says why. {@code ssl.enabled} without a
 * bundle and a {@code rediss://} URL trust the JVM's default trust store. Skipped, saying why, if the
 * redis-server binary was built without TLS.
 */
class RedisTlsTests {

  private static final String BUNDLE = "spring.ssl.bundle.pem.";

  private static TestCertificates certificates;
  private static RedisServer mutual;
  private static RedisServer serverAuthOnly;

  @BeforeAll
  static void startRedis() {
    if (RedisServer.supportsTls()) {
      certificates = TestCertificates.create(Path.of("target", "tls-" + System.nanoTime()));
      mutual = RedisServer.startTls(certificates);
      serverAuthOnly = RedisServer.startTls(certificates, "--tls-auth-clients", "no");
    }
  }

  @BeforeEach
  void tlsServers() {
    assumeTrue(mutual != null,
        "skipped: the redis-server binary was built without TLS, so no TLS test can run here");
  }

  @AfterAll
  static void stopRedis() {
    if (mutual != null) {
      mutual.close();
      serverAuthOnly.close();
    }
  }

  private static ApplicationContextRunner runner(RedisServer server) {
    return new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(SslAutoConfiguration.class,
            DataRedisAutoConfiguration.class, RateLimiterRedisAutoConfiguration.class,
            RateLimiterAutoConfiguration.class))
        .withPropertyValues("ratelimiter.store=redis", "ratelimiter.rpm.limit=2",
            "ratelimiter.redis.failure-policy=fail-closed",
            "ratelimiter.redis.key-prefix=tls-" + System.nanoTime(),
            "spring.data.redis.host=127.0.0.1", "spring.data.redis.port=" + server.port(),
            BUNDLE + "redis.keystore.certificate=" + location(certificates.clientCertificate()),
            BUNDLE + "redis.keystore.private-key=" + location(certificates.clientKey()),
            BUNDLE + "redis.truststore.certificate=" + location(certificates.caCertificate()),
            BUNDLE + "trust-only.truststore.certificate=" + location(certificates.caCertificate()));
  }

  @Test
  void runWhenSslIsEnabledWithAPemBundleShouldLimitExactlyOverTls() {
    runner(mutual).withPropertyValues("spring.data.redis.ssl.enabled=true",
        "spring.data.redis.ssl.bundle=redis").run(context -> {
          assertThat(reasons(context.getBean(RateLimitEnforcer.class)))
              .containsExactly(Reason.OK, Reason.OK, Reason.RPM_LIMIT);
          RedisRateLimitStore store = context.getBean(RedisRateLimitStore.class);
          assertThat(store.errorCount()).isZero();
          assertThat(store.ping()).isTrue();
        });
  }

  @Test
  void runWhenTheBundleHasNoClientCertificateShouldBeRefusedByAServerThatRequiresOne() {
    long before = mutual.logged("did not return a certificate");
    runner(mutual).withPropertyValues("spring.data.redis.ssl.enabled=true",
        "spring.data.redis.ssl.bundle=trust-only").run(context -> {
          assertThat(reasons(context.getBean(RateLimitEnforcer.class)))
              .containsOnly(Reason.STORE_UNAVAILABLE);
          mutual.awaitLogged("did not return a certificate", before);
        });
  }

  @Test
  void runWhenSslIsNotEnabledShouldBeRefusedByATlsServer() {
    long before = serverAuthOnly.logged("wrong version number");
    runner(serverAuthOnly).run(context -> {
      assertThat(reasons(context.getBean(RateLimitEnforcer.class)))
          .containsOnly(Reason.STORE_UNAVAILABLE);
      assertThat(context.getBean(RedisRateLimitStore.class).ping()).isFalse();
      serverAuthOnly.awaitLogged("wrong version number", before);
    });
  }

  @ParameterizedTest
  @ValueSource(strings = {"spring.data.redis.ssl.enabled=true", "spring.data.redis.url=rediss://"})
  void runWhenSslIsEnabledWithoutABundleOrTheUrlIsRedissShouldTrustTheJvmDefaults(String setting)
      throws Exception {
    String property = setting.endsWith("rediss://")
        ? setting + "127.0.0.1:" + serverAuthOnly.port() : setting;
    long before = serverAuthOnly.logged("certificate unknown");
    runner(serverAuthOnly).withPropertyValues(property).run(context -> {
      assertThat(reasons(context.getBean(RateLimitEnforcer.class)))
          .as("the JVM does not trust the test CA").containsOnly(Reason.STORE_UNAVAILABLE);
      serverAuthOnly.awaitLogged("certificate unknown", before);
    });
    String[] names = {"javax.net.ssl.trustStore", "javax.net.ssl.trustStorePassword",
        "javax.net.ssl.trustStoreType"};
    String[] saved = new String[names.length];
    for (int i = 0; i < names.length; i++) {
      saved[i] = System.getProperty(names[i]);
    }
    try {
      System.setProperty(names[0], trustStoreWithTheCa().toAbsolutePath().toString());
      System.setProperty(names[1], "changeit");
      System.setProperty(names[2], "PKCS12");
      runner(serverAuthOnly).withPropertyValues(property).run(context ->
          assertThat(reasons(context.getBean(RateLimitEnforcer.class)))
              .containsExactly(Reason.OK, Reason.OK, Reason.RPM_LIMIT));
    } finally {
      for (int i = 0; i < names.length; i++) {
        if (saved[i] == null) {
          System.clearProperty(names[i]);
        } else {
          System.setProperty(names[i], saved[i]);
        }
      }
    }
  }

  /** The reasons of three calls of one key (the limit is 2). */
  private static List<Reason> reasons(RateLimitEnforcer enforcer) {
    RateLimitKey key = RateLimitKey.of("tenant", null);
    return List.of(enforcer.acquire(null, key, 1).decision().reason(),
        enforcer.acquire(null, key, 1).decision().reason(),
        enforcer.acquire(null, key, 1).decision().reason());
  }

  /** A PKCS#12 trust store that holds the test CA, for the JVM's default trust. */
  private static Path trustStoreWithTheCa() throws Exception {
    KeyStore trust = KeyStore.getInstance("PKCS12");
    trust.load(null, null);
    try (InputStream in = Files.newInputStream(certificates.caCertificate())) {
      trust.setCertificateEntry("test-ca",
          CertificateFactory.getInstance("X.509").generateCertificate(in));
    }
    Path file = certificates.caCertificate().resolveSibling("jvm-trust.p12");
    try (OutputStream out = Files.newOutputStream(file)) {
      trust.store(out, "changeit".toCharArray());
    }
    return file;
  }

  private static String location(Path file) {
    return "file:" + file.toAbsolutePath();
  }
}

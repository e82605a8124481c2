package io.github.llmratelimiter.redis;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.Key;
import java.security.KeyStore;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A throwaway certificate authority and two certificates it signed, for TLS tests on loopback: one
 * for the server and one for the client, each valid for {@code 127.0.0.1} and {@code localhost}
 * (serverAuth and clientAuth), written as PEM files (certificates, and keys in PKCS#8) as Redis and
 * Spring Boot's PEM SSL bundles read them. Made with the JDK's {@code keytool} only (EC P-256 keys,
 * valid for 2 days). Public (and in this module's test jar) for the Spring tests.
 */
public final class TestCertificates {

  private static final String PASSWORD = "changeit";

  private final Path dir;

  private TestCertificates(Path dir) {
    this.dir = dir;
  }

  /**
   * Creates a new CA and the server's and the client's certificates under {@code dir}.
   *
   * @param dir an empty or absent directory
   * @return the certificates
   */
  public static TestCertificates create(Path dir) {
    try {
      Files.createDirectories(dir);
      TestCertificates c = new TestCertificates(dir);
      c.keytool("-genkeypair", "-alias", "ca", "-dname", "CN=rate-limiter test CA", "-ext", "bc:c",
          "-keystore", "ca.p12", "-keyalg", "EC", "-groupname", "secp256r1", "-validity", "2");
      c.writePem("ca.p12", "ca", "ca.crt", null);
      for (String name : List.of("server", "client")) {
        c.keytool("-genkeypair", "-alias", name, "-dname", "CN=" + name, "-keystore", name + ".p12",
            "-keyalg", "EC", "-groupname", "secp256r1", "-validity", "2");
        c.keytool("-certreq", "-alias", name, "-keystore", name + ".p12", "-file", name + ".csr");
        c.keytool("-gencert", "-alias", "ca", "-keystore", "ca.p12", "-infile", name + ".csr",
            "-outfile", name + ".crt", "-rfc", "-validity", "2",
            "-ext", "san=ip:127.0.0.1,dns:localhost",
            "-ext", "ku=digitalSignature", "-ext", "eku=serverAuth,clientAuth");
        c.writePem(name + ".p12", name, null, name + ".key");
      }
      return c;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot create test certificates in " + dir, e);
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("cannot create test certificates in " + dir, e);
    }
  }

  /**
   * Returns the CA's certificate, which signed the other two.
   *
   * @return the PEM file
   */
  public Path caCertificate() {
    return dir.resolve("ca.crt");
  }

  /**
   * Returns the server's certificate.
   *
   * @return the PEM file
   */
  public Path serverCertificate() {
    return dir.resolve("server.crt");
  }

  /**
   * Returns the server's private key, unencrypted.
   *
   * @return the PEM file (PKCS#8)
   */
  public Path serverKey() {
    return dir.resolve("server.key");
  }

  /**
   * Returns the client's certificate.
   *
   * @return the PEM file
   */
  public Path clientCertificate() {
    return dir.resolve("client.crt");
  }

  /**
   * Returns the client's private key, unencrypted.
   *
   * @return the PEM file (PKCS#8)
   */
  public Path clientKey() {
    return dir.resolve("client.key");
  }

  private void keytool(String... args) throws IOException {
    List<String> cmd = new ArrayList<>(List.of(
        Path.of(System.getProperty("java.home"), "bin", "keytool").toString(),
        "-J-XX:TieredStopAtLevel=1", "-J-XX:+UseSerialGC")); // a short run: start fast
    cmd.addAll(List.of(args));
    cmd.addAll(List.of("-storetype", "PKCS12", "-storepass", PASSWORD, "-keypass", PASSWORD,
        "-noprompt"));
    Path log = dir.resolve("keytool.log");
    Process p = new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true)
        .redirectOutput(log.toFile()).start();
    try {
      if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
        p.destroyForcibly();
        throw new IOException("keytool " + args[0] + " failed: " + Files.readString(log));
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("interrupted", e);
    }
  }

  /** Writes the certificate and/or the private key under {@code alias} of a keystore as PEM. */
  private void writePem(String store, String alias, String certificate, String key)
      throws IOException, GeneralSecurityException {
    KeyStore ks = KeyStore.getInstance("PKCS12");
    try (InputStream in = Files.newInputStream(dir.resolve(store))) {
      ks.load(in, PASSWORD.toCharArray());
    }
    if (certificate != null) {
      Files.writeString(dir.resolve(certificate),
          pem("CERTIFICATE", ks.getCertificate(alias).getEncoded()), StandardCharsets.US_ASCII);
    }
    if (key != null) {
      Key k = ks.getKey(alias, PASSWORD.toCharArray());
      Files.writeString(dir.resolve(key), pem("PRIVATE KEY", k.getEncoded()),
          StandardCharsets.US_ASCII);
    }
  }

  private static String pem(String type, byte[] der) {
    return "-----BEGIN " + type + "-----\n"
        + Base64.getMimeEncoder(64, new byte[] {'\n'}).encodeToString(der)
        + "\n-----END " + type + "-----\n";
  }
}

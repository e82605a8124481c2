package io.github.llmratelimiter.gateway.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import io.github.llmratelimiter.gateway.TestHmac;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

class KeyIdsTests {

  private static final String SECRET = "0123456789abcdef-shared-secret";

  @Test
  void anIdIsTheHmacSha256PrefixUnderTheSecret() {
    KeyIds ids = KeyIds.of(SECRET);
    for (String key : List.of("a", "acme", "sk-live-secret-9f8e7d6c", "ключ-🔑")) {
      assertThat(ids.id(key)).matches("[0-9a-f]{16}").isEqualTo(TestHmac.hex16(SECRET, key));
    }
    assertThat(ids.id("a")).isNotEqualTo(ids.id("b"));
  }

  @Test
  void anIdIsNotTheUnkeyedHashOfTheKey() throws Exception {
    // what an attacker could recompute for a guessed key without the secret
    byte[] sha = MessageDigest.getInstance("SHA-256").digest("acme".getBytes(StandardCharsets.UTF_8));
    assertThat(KeyIds.of(SECRET).id("acme")).isNotEqualTo(HexFormat.of().formatHex(sha, 0, 8));
    assertThat(KeyIds.random().id("acme")).isNotEqualTo(HexFormat.of().formatHex(sha, 0, 8));
  }

  @Test
  void theSameSecretGivesTheSameIdsAndRandomSecretsDiffer() {
    assertThat(KeyIds.of(SECRET).id("acme")).isEqualTo(KeyIds.of(SECRET).id("acme"));
    assertThat(KeyIds.of(SECRET + "x").id("acme")).isNotEqualTo(KeyIds.of(SECRET).id("acme"));
    assertThat(KeyIds.random().id("acme")).isNotEqualTo(KeyIds.random().id("acme"));
  }

  @Test
  void aSecretShorterThanSixteenBytesIsRejectedWithoutShowingIt() {
    assertThatIllegalArgumentException().isThrownBy(() -> KeyIds.of("short-secret-15"))
        .withMessageContaining("secret").withMessageContaining("15").withMessageNotContaining("short-secret");
    assertThatIllegalArgumentException().isThrownBy(() -> KeyIds.of(""));
    // 16 bytes in UTF-8 (8 two-byte characters) is enough, whatever the number of characters
    assertThat(KeyIds.of("éééééééé").id("k")).isEqualTo(TestHmac.hex16("éééééééé", "k"));
    assertThat(KeyIds.of(SECRET).toString()).doesNotContain(SECRET);
  }

  @Test
  void concurrentCallersGetTheSameIds() throws Exception {
    KeyIds ids = KeyIds.of(SECRET);
    ExecutorService pool = Executors.newFixedThreadPool(4);
    try {
      List<Future<Boolean>> results = pool.invokeAll(IntStream.range(0, 2_000)
          .mapToObj(i -> (java.util.concurrent.Callable<Boolean>) () ->
              ids.id("key-" + (i % 50)).equals(TestHmac.hex16(SECRET, "key-" + (i % 50))))
          .toList());
      for (Future<Boolean> r : results) {
        assertThat(r.get()).isTrue();
      }
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void isIdAcceptsSixteenHexDigitsOnly() {
    assertThat(KeyIds.isId(KeyIds.random().id("k"))).isTrue();
    assertThat(KeyIds.isId("0123456789abcdeg")).isFalse();
    assertThat(KeyIds.isId("0123456789abcde")).isFalse();
    assertThat(KeyIds.isId("sk-live-secret-9f")).isFalse();
  }
}

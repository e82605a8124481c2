package io.github.llmratelimiter.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import io.lettuce.core.cluster.SlotHash;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class RedisKeysTests {

  private final RedisKeys keys = new RedisKeys("rl", false);
  private final RedisKeys hashed = new RedisKeys("rl", true);

  @Test
  void layoutIsPrefixRootTagBudgetKey() {
    assertThat(keys.state("acme", "org", "acme")).isEqualTo("rl:{acme}:org:acme:s");
    assertThat(keys.state("acme", "model", "k1/gpt-4o")).isEqualTo("rl:{acme}:model:k1/gpt-4o:s");
    assertThat(keys.level("acme", "tpm", "k1")).containsExactly(
        "rl:{acme}:tpm:k1:s", "rl:{acme}:tpm:k1:t", "rl:{acme}:tpm:k1:c");
  }

  @ParameterizedTest
  @ValueSource(strings = {"a}b", "{x}", "a:b", "50%", "*?[]\\", "plain", "ünï cödé"})
  void everyKeyOfOneCallSharesTheRootsSlotAndParsesBack(String root) {
    String a = keys.state(root, "org", root);
    String b = keys.state(root, "key:with:colons", "k}1");
    assertThat(SlotHash.getSlot(a)).isEqualTo(SlotHash.getSlot(b));
    assertThat(keys.parse(a)).extracting(keys::shown).containsExactly(root, root);
    assertThat(keys.parse(b)).extracting(keys::shown).containsExactly(root, "k}1");
  }

  @ParameterizedTest
  @ValueSource(strings = {"openai", "azure:east", "a*b", "upstream:x"})
  void anUpstreamsKeysShareItsOwnTagAndAreNoLevelsOrRoots(String name) {
    for (RedisKeys layout : List.of(keys, hashed)) {
      String[] up = layout.upstream(name);
      assertThat(up).hasSize(5);
      String tag = "upstream:" + RedisKeys.encode(name);
      for (String k : up) {
        assertThat(k).startsWith("rl:{" + tag + "}:");
        assertThat(SlotHash.getSlot(k)).isEqualTo(SlotHash.getSlot(up[0]));
        assertThat(layout.parse(k)).as(k).isNull();
        assertThat(layout.parseQuota(k)).as(k).isNull();
      }
      // no root's tag is an upstream's: a root's colons are encoded (or the root hashed)
      assertThat(layout.state("upstream:" + name, "org", "k")).doesNotStartWith("rl:{" + tag + "}");
    }
  }

  @Test
  void partsNeverRunIntoEachOther() {
    // without encoding both would read rl:{a}:b:c:d:w
    assertThat(keys.state("a", "b:c", "d")).isNotEqualTo(keys.state("a", "b", "c:d"));
    assertThat(keys.state("a}:b", "c", "d")).isNotEqualTo(keys.state("a", "b", "c}:d"));
  }

  @Test
  void patternsMatchOnlyTheirBudgetAndKey() {
    assertThat(keys.pattern("org", "a*")).isEqualTo("rl:{*}:org:a%2A:[stc]");
    assertThat(keys.pattern("org")).isEqualTo("rl:{*}:org:*:[stc]");
  }

  @Test
  void foreignKeysDoNotParse() {
    assertThat(keys.parse("other:{a}:b:c:w")).isNull();
    assertThat(keys.parse("rl:{a}:b:w")).isNull();
  }

  @Test
  void keysOfLayoutOneDoNotParse() {
    // layout 1 kept the window log in ':w' (a sorted set) and the bucket in ':b'
    assertThat(keys.parse("rl:{a}:org:a:w")).isNull();
    assertThat(keys.parse("rl:{a}:org:a:b")).isNull();
    assertThat(keys.parse("rl:{a}:org:a:s")).containsExactly("a", "a");
    assertThat(keys.parse("rl:{a}:org:a:t")).containsExactly("a", "a");
    assertThat(keys.parse("rl:{a}:org:a:c")).containsExactly("a", "a");
    // the earlier model-token keys: ':m' (a sorted set) and ':a' (a hash)
    assertThat(keys.parse("rl:{a}:org:a:m")).isNull();
    assertThat(keys.parse("rl:{a}:org:a:a")).isNull();
    assertThat(keys.parse("rl:{a}:org:a:]")).isNull();
  }

  @ParameterizedTest
  @ValueSource(strings = {"", " ", "a b", "a{", "x}", "a*", "q?", "[x]", "p%", "back\\slash"})
  void badPrefixesAreRejectedNamingTheValue(String prefix) {
    assertThatIllegalArgumentException().isThrownBy(() -> new RedisKeys(prefix, true))
        .withMessageContaining("keyPrefix").withMessageContaining("'" + prefix + "'");
  }

  @Test
  void hashedLayoutNamesKeysByTheirSha256AndNeverInClear() {
    String h = RedisKeys.hash("sk-secret-1234");
    assertThat(h).hasSize(23).startsWith("#").matches("#[A-Za-z0-9_-]{22}");
    assertThat(h).isEqualTo(RedisKeys.hash("sk-secret-1234")).isNotEqualTo(RedisKeys.hash("sk-secret-1235"));
    // base64url of the first 16 bytes of SHA-256("abc") = ba7816bf 8f01cfea 414140de 5dae2223
    assertThat(RedisKeys.hash("abc")).isEqualTo("#ungWv48Bz-pBQUDeXa4iIw");
    String w = hashed.state("acme", "org", "sk-secret-1234");
    assertThat(w).isEqualTo("rl:{" + RedisKeys.hash("acme") + "}:org:" + h + ":s")
        .doesNotContain("acme:").doesNotContain("sk-secret");
    assertThat(hashed.parse(w)).containsExactly(RedisKeys.hash("acme"), h);
    assertThat(hashed.shown(h)).isEqualTo(h);
  }

  @Test
  void theExamplesOfDocsRedisMdHold() {
    assertThat(hashed.state("acme", "org", "acme"))
        .isEqualTo("rl:{#giszrYfBSKCiClunzV68qg}:org:#giszrYfBSKCiClunzV68qg:s");
    assertThat(hashed.state("5:sk-12:gpt-4o", "api-key-model", "5:sk-12:gpt-4o"))
        .isEqualTo("rl:{#tePIGEmfBcr47W7RK0F1zg}:api-key-model:#tePIGEmfBcr47W7RK0F1zg:s");
    assertThat(keys.state("acme", "api-key-model", "5:sk-12:gpt-4o"))
        .isEqualTo("rl:{acme}:api-key-model:5%3Ask-12%3Agpt-4o:s");
  }

  @ParameterizedTest
  @ValueSource(strings = {"a}b", "{x}", "a:b", "plain", "ünï cödé"})
  void hashedKeysOfOneCallShareTheRootsSlot(String root) {
    String[] level = hashed.level(hashed.part(root), "key:with:colons", hashed.part("k}1"));
    assertThat(level).extracting(SlotHash::getSlot).containsOnly(SlotHash.getSlot(hashed.sequence(hashed.part(root))));
    assertThat(level).allSatisfy(k -> assertThat(hashed.parse(k)).isNotNull());
  }

  @Test
  void aHashedLayoutIgnoresKeysInClear() {
    assertThat(hashed.parse(keys.state("a", "b", "c"))).isNull();
    assertThat(hashed.pattern("org", "a*")).isEqualTo("rl:{*}:org:" + RedisKeys.hash("a*") + ":[stc]");
  }
}

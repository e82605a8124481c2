package io.github.llmratelimiter.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import io.lettuce.core.cluster.SlotHash;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class RedisKeysTest {

  private final RedisKeys keys = new RedisKeys("rl");

  @Test
  void layoutIsPrefixRootTagBudgetKey() {
    assertThat(keys.window("acme", "org", "acme")).isEqualTo("rl:{acme}:org:acme:w");
    assertThat(keys.bucket("acme", "model", "k1/gpt-4o")).isEqualTo("rl:{acme}:model:k1/gpt-4o:b");
  }

  @ParameterizedTest
  @ValueSource(strings = {"a}b", "{x}", "a:b", "50%", "*?[]\\", "plain", "ünï cödé"})
  void everyKeyOfOneCallSharesTheRootsSlotAndParsesBack(String root) {
    String a = keys.window(root, "org", root);
    String b = keys.bucket(root, "key:with:colons", "k}1");
    assertThat(SlotHash.getSlot(a)).isEqualTo(SlotHash.getSlot(b));
    assertThat(keys.parse(a)).containsExactly(root, root);
    assertThat(keys.parse(b)).containsExactly(root, "k}1");
  }

  @Test
  void partsNeverRunIntoEachOther() {
    // without encoding both would read rl:{a}:b:c:d:w
    assertThat(keys.window("a", "b:c", "d")).isNotEqualTo(keys.window("a", "b", "c:d"));
    assertThat(keys.window("a}:b", "c", "d")).isNotEqualTo(keys.window("a", "b", "c}:d"));
  }

  @Test
  void patternsMatchOnlyTheirBudgetAndKey() {
    assertThat(keys.pattern("org", "a*")).isEqualTo("rl:{*}:org:a%2A:?");
    assertThat(keys.pattern("org")).isEqualTo("rl:{*}:org:*");
  }

  @Test
  void foreignKeysDoNotParse() {
    assertThat(keys.parse("other:{a}:b:c:w")).isNull();
    assertThat(keys.parse("rl:{a}:b:w")).isNull();
  }

  @ParameterizedTest
  @ValueSource(strings = {"", " ", "a b", "a{", "x}", "a*", "q?", "[x]", "p%", "back\\slash"})
  void badPrefixesAreRejectedNamingTheValue(String prefix) {
    assertThatIllegalArgumentException().isThrownBy(() -> new RedisKeys(prefix))
        .withMessageContaining("keyPrefix").withMessageContaining("'" + prefix + "'");
  }
}

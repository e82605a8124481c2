package io.github.llmratelimiter.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.core.BucketLimit;
import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.ConcurrencyLimit;
import io.github.llmratelimiter.core.ModelTokenLimit;
import io.github.llmratelimiter.core.WindowLimit;
import java.time.Duration;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

class ScriptBudgetTests {

  private static final Budget ORG = new Budget("org", WindowLimit.perMinute(60), null);

  @Test
  void keysOfManyMoreLevelsThanSlotsAreThoseOfTheLayout() {
    for (RedisKeys layout : new RedisKeys[] {new RedisKeys("rl", false), new RedisKeys("rl", true)}) {
      ScriptBudget budget = new ScriptBudget(ORG, layout, false);
      // twice over four times as many (root, key) pairs as slots: slots are shared and replaced
      for (int round = 0; round < 2; round++) {
        for (int i = 0; i < 4 * ScriptBudget.SLOTS; i++) {
          String root = "tenant-" + (i % 97);
          // a key under several roots, and a root that is also a key
          String key = i % 3 == 0 ? root : "key-" + (i % 200);
          String[] keys = new String[3];
          String counter = budget.copyKeys(root, key, keys, 1);
          assertThat(keys[0]).isNull();
          assertThat(Arrays.copyOfRange(keys, 1, 3))
              .containsExactly(layout.level(layout.part(root), "org", layout.part(key))[0], null);
          assertThat(counter).isEqualTo(root.equals(key) ? layout.sequence(layout.part(root)) : null);
        }
      }
    }
  }

  @Test
  void aLevelPassesItsModelTokenKeysOnlyWhenItsBudgetLimitsModelTokens() {
    RedisKeys layout = new RedisKeys("rl", false);
    Budget tpm = new Budget("tpm", null, null, new ModelTokenLimit(1000, Duration.ofMinutes(1)));
    ScriptBudget withTokens = new ScriptBudget(tpm, layout, false);
    assertThat(withTokens.keyCount).isEqualTo(2);
    String[] keys = new String[3];
    withTokens.copyKeys("acme", "k", keys, 1);
    assertThat(keys).containsExactly(null, "rl:{acme}:tpm:k:s", "rl:{acme}:tpm:k:t");
    assertThat(new ScriptBudget(ORG, layout, false).keyCount).isEqualTo(1);
    // a variant passes its own values and shares its defaults' keys (the same name and state)
    Budget both = tpm.withConcurrency(ConcurrencyLimit.of(2));
    ScriptBudget defaults = new ScriptBudget(both, layout, false);
    ScriptBudget pro = defaults.view(both.variant(null, null,
        new ModelTokenLimit(5000, Duration.ofMinutes(1)), ConcurrencyLimit.of(8)));
    assertThat(pro.keyCount).isEqualTo(3);
    assertThat(pro.levelArg).isNotEqualTo(defaults.levelArg);
    String[] all = new String[3];
    pro.copyKeys("acme", "k", all, 0);
    assertThat(all).containsExactly("rl:{acme}:tpm:k:s", "rl:{acme}:tpm:k:t", "rl:{acme}:tpm:k:c");
    assertThat(defaults.view(both)).isSameAs(defaults);
  }

  @Test
  void levelValuesAreInTheScriptsTimeUnits() {
    Budget all = new Budget("all", new WindowLimit(5, Duration.ofSeconds(2)),
        new BucketLimit(10, 2.5), new ModelTokenLimit(1000, Duration.ofMinutes(1)));
    assertThat(ScriptBudget.values(all, false)).containsExactly(
        5, 2_000_000.0, 10, 2.5, 2.5 / 1e6, 1000, 6e7, 0, 0);
    assertThat(ScriptBudget.values(all, true)).containsExactly(
        5, 2e9, 10, 2.5, 2.5 / 1e9, 1000, 6e10, 0, 0);
    assertThat(ScriptBudget.values(all.withConcurrency(ConcurrencyLimit.of(3)), false))
        .containsExactly(5, 2_000_000.0, 10, 2.5, 2.5 / 1e6, 1000, 6e7, 3, 6e8);
    assertThat(ScriptBudget.values(ORG, false)).containsExactly(60, 6e7, 0, 0, 0, 0, 0, 0, 0);
    // packed for the scripts as one bulk string of little-endian doubles
    byte[] arg = new ScriptBudget(ORG, new RedisKeys("rl", false), false).levelArg;
    java.nio.ByteBuffer b = java.nio.ByteBuffer.wrap(arg).order(java.nio.ByteOrder.LITTLE_ENDIAN);
    byte[] head = new byte[5];
    b.get(head);
    assertThat(new String(head, java.nio.charset.StandardCharsets.US_ASCII)).isEqualTo("$72\r\n");
    assertThat(b.getDouble()).isEqualTo(60.0);
    assertThat(b.getDouble()).isEqualTo(6e7);
    assertThat(arg).hasSize(5 + 72 + 2).endsWith((byte) '\r', (byte) '\n');
  }
}

package io.github.llmratelimiter.benchmarks.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import io.github.llmratelimiter.core.Decision;
import io.github.llmratelimiter.redis.RedisRateLimitStore;
import io.lettuce.core.cluster.SlotHash;
import java.util.List;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

class ClusterScaleRunTests {

  @Test
  void theMastersSlotRangesCoverEverySlotOnceInOrder() {
    for (int masters : List.of(1, 3, 6, 7)) {
      assertThat(RedisCluster.firstSlot(0, masters)).isZero();
      assertThat(RedisCluster.firstSlot(masters, masters)).isEqualTo(SlotHash.SLOT_COUNT);
      for (int i = 0; i < masters; i++) {
        int size = RedisCluster.firstSlot(i + 1, masters) - RedisCluster.firstSlot(i, masters);
        // equal shares, the last master also taking the remainder
        assertThat(size).isEqualTo(SlotHash.SLOT_COUNT / masters
            + (i == masters - 1 ? SlotHash.SLOT_COUNT % masters : 0));
      }
    }
  }

  @Test
  void aClusterNeedsAtLeastOneMaster() {
    assertThatIllegalArgumentException().isThrownBy(() -> RedisCluster.start(0))
        .withMessageContaining("masters").withMessageContaining("0");
  }

  @Test
  void onlyLimiterKeysCountAndTheirTagIsTheHashedRoot() {
    assertThat(ClusterScaleRun.Layout.limiterTag("rl:{#abc}:api-key:#abc:s")).isEqualTo("#abc");
    assertThat(ClusterScaleRun.Layout.limiterTag("rl:{~1x}:api-key:~top:60000:1")).isNull();
    assertThat(ClusterScaleRun.Layout.limiterTag("rl:instances")).isNull();
    assertThat(ClusterScaleRun.Layout.limiterTag("other:{#abc}:s")).isNull();
  }

  @Test
  void layoutCountsTagsAndKeysPerMasterAndTagsFoundTwice() {
    ClusterScaleRun.Layout layout = ClusterScaleRun.Layout.of(List.of(
        List.of("rl:{#a}:api-key:#a:s", "rl:{#a}:model:#a1:s", "rl:{#a}:model:#a2:s",
            "rl:{~q}:api-key:~keys:60000:1"),
        List.of("rl:{#b}:api-key:#b:s", "rl:{#c}:api-key:#c:s", "rl:instances"),
        List.of("rl:{#c}:model:#c1:s")));
    assertThat(layout.tagsPerMaster()).containsExactly(1, 2, 1);
    assertThat(layout.keysPerMaster()).containsExactly(3L, 2L, 1L);
    assertThat(layout.tags()).isEqualTo(3);
    assertThat(layout.tagsOnSeveralMasters()).isEqualTo(1);
    assertThat(layout.minKeysPerTag()).isEqualTo(1);
    assertThat(layout.maxKeysPerTag()).isEqualTo(3);
  }

  @Test
  void hierarchyKeepsEachApiKeysLevelsOnOneMasterOfARealCluster() {
    try (RedisCluster cluster = RedisCluster.start(3);
        RedisRateLimitStore store = RedisLimiter.measured(
            RedisRateLimitStore.cluster(cluster.seeds())).build()) {
      ClusterScaleRun.Case hierarchy = ClusterScaleRun.hierarchy();
      Function<List<String>, Decision> decide = hierarchy.limiter().apply(store);
      // leaves 0, 1000, ..., 9000 are the 10 models of API key sk-0; 1, 1001, ... of sk-1
      for (int model = 0; model < ClusterScaleRun.MODELS; model++) {
        for (int apiKey = 0; apiKey < 20; apiKey++) {
          assertThat(decide.apply(hierarchy.keys().get(model * ClusterScaleRun.API_KEYS + apiKey))
              .allowed()).isTrue();
        }
      }
      assertThat(store.errorCount()).isZero();
      ClusterScaleRun.Layout layout = ClusterScaleRun.Layout.read(cluster);
      assertThat(layout.tags()).isEqualTo(20);
      assertThat(layout.tagsOnSeveralMasters()).isZero();
      // each API key's own level and its 10 models' levels, all under its tag
      assertThat(layout.minKeysPerTag()).isEqualTo(1 + ClusterScaleRun.MODELS);
      assertThat(layout.maxKeysPerTag()).isEqualTo(1 + ClusterScaleRun.MODELS);
      assertThat(layout.keysPerMaster().stream().mapToLong(Long::longValue).sum())
          .isEqualTo(20L * (1 + ClusterScaleRun.MODELS));
      assertThat(layout.tagsPerMaster()).hasSize(3).allSatisfy(n -> assertThat(n).isPositive());
    }
  }
}

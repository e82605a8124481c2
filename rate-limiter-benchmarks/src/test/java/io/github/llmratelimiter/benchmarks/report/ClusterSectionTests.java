package io.github.llmratelimiter.benchmarks.report;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import java.util.List;
import org.junit.jupiter.api.Test;

class ClusterSectionTests {

  private static final Machine TWO_CORES = new Machine(2, "Test CPU", "1 kB", "Linux", "Test JVM");

  private static ClusterFigure figure(int masters, String scenario, double perSecond,
      List<Integer> tags) {
    List<Long> scripts = tags.stream().map(t -> (long) t * 10).toList();
    List<Long> keys = tags.stream().map(t -> (long) t).toList();
    return new ClusterFigure(masters, scenario, 64, 10, (long) perSecond * 10, perSecond, 1.5,
        9.25, 50.0 * masters, 100, "1.00 0.50 0.20", scripts, tags, keys,
        tags.stream().mapToInt(Integer::intValue).sum(), 0, 1, 1);
  }

  private static final List<ClusterFigure> FIGURES = List.of(
      figure(1, "flat", 20_000, List.of(10_000)),
      figure(3, "flat", 25_000, List.of(3_400, 3_300, 3_300)),
      figure(3, "tree", 8_000, List.of(300, 330, 370)));

  @Test
  void tablesHaveTheRatioToOneMasterTheSpreadAndTheSharedCores() {
    StringBuilder md = new StringBuilder();
    ClusterSection.render(md, FIGURES, TWO_CORES);
    assertThat(md.toString()).contains("## Redis Cluster scale-out", "shared the same 2 cores",
        "| flat | 1 | 20,000 | 1.00 | 1.50 ms | 9.25 ms | 50 % | 25.0 µs | 100 % | 1.00 0.50 0.20 |",
        "| flat | 3 | 25,000 | 1.25 |",
        // no 1-master figure of this case: no ratio
        "| tree | 3 | 8,000 | – |",
        "| flat | 3 | 10,000 | 3,400 / 3,300 / 3,300 | 1.02 | 3,400 / 3,300 / 3,300 | 34.0 % / 33.0 % / 33.0 % | 0 | 1 |",
        "| tree | 3 | 1,000 | 300 / 330 / 370 | 1.11 |",
        "local Redis Cluster of 1, 3 and 6 masters", "What 2 cores can and cannot show", "together used 150 to 250 % of one core", "bounded by the machine");
  }

  @Test
  void aRunWithoutTheClusterSaysSo() {
    StringBuilder md = new StringBuilder();
    ClusterSection.render(md, List.of(), TWO_CORES);
    assertThat(md.toString()).isEqualTo("\nRedis Cluster scale-out: not in this run.\n");
  }

  @Test
  void theClusterRunIsSelectedByItsNameAloneAndIsAPartOfItsOwn() {
    assertThat(Suite.selected(Suite.CLUSTER, "ClusterScaleRun")).isTrue();
    assertThat(Suite.selected(Suite.PIPELINED, "ClusterScaleRun")).isFalse();
    assertThat(Suite.Part.valueOf("CLUSTER")).isNotEqualTo(Suite.Part.REDIS);
  }

  @Test
  void aFigureNeedsOneEntryPerMaster() {
    assertThatIllegalArgumentException().isThrownBy(() -> figure(3, "flat", 1, List.of(1, 2)))
        .withMessageContaining("scriptsPerMaster").withMessageContaining("(3)");
  }
}

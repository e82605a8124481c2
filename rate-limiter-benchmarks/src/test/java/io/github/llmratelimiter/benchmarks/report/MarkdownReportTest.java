package io.github.llmratelimiter.benchmarks.report;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class MarkdownReportTest {

  private static final MarkdownReport.Context CONTEXT = new MarkdownReport.Context(
      new Machine(2, "Test CPU", "1 kB", "Linux", "Test JVM"), Map.of("JMH", "1.37"),
      "test settings", "bench/run -wi 1", "1.00 0.50 0.20", "1.10 0.60 0.30", 1.5,
      "- tried a thing");

  private static final List<Figure> FIGURES = List.of(
      new Figure("GatewayLimiter", "SEQUENTIAL", "allowedOneKey", 1, 30e6, 1e6, 0.001),
      new Figure("GatewayLimiter", "SEQUENTIAL", "allowedOwnKey", 2, 45e6, 1e6, 0.002),
      new Figure("GatewayLimiter", "SEQUENTIAL", "allowedTenThousandKeys", 1, 12e6, 1e6, 0.0),
      new Figure("GatewayLimiter", "SEQUENTIAL", "deniedRpmOneKey", 1, 40e6, 1e6, 48.0),
      new Figure("GatewayLimiter", "RESERVE_COMMIT", "allowedOneKey", 1, 29e6, 1e6, 0.0),
      new Figure("Bucket4j", "", "allowedOneKey", 1, 20e6, 1e6, 128.0),
      new Figure("Bucket4j", "", "deniedOneKey", 1, 20e6, 1e6, 128.0),
      new Figure("Naive", "", "allowedTenThousandKeys", 1, 5e6, 1e6, 24.0),
      new Figure("Floor", "", "mapGetLockNanoTime", 1, 40e6, 1e6, 0.0));

  @Test
  void targetsAreJudgedOnRatiosOfTheSameRun() {
    List<Targets.Outcome> outcomes = Targets.evaluate(FIGURES);
    assertThat(outcomes.get(0).measured()).startsWith("1.50 ×");
    assertThat(outcomes.get(0).verdict()).isEqualTo("met");
    assertThat(outcomes.get(0).measured()).endsWith("the floor (map get + lock + nanoTime) is 2.00 × Bucket4j");
    assertThat(outcomes.get(1).verdict()).isEqualTo("not measured"); // no tryAcquire figure
    assertThat(outcomes.get(2).measured()).startsWith("2.40 ×");
    assertThat(outcomes.get(2).verdict()).isEqualTo("missed");
    assertThat(outcomes.get(4).verdict()).isEqualTo("missed"); // the RPM deny allocates 48 B
    assertThat(outcomes.get(4).measured()).contains("denied (window full), 1 key: 48.0");
    assertThat(outcomes.get(5).verdict()).isEqualTo("not measured");
    assertThat(outcomes.get(6).measured()).startsWith("1.50 ×");
    assertThat(outcomes.get(6).verdict()).isEqualTo("missed");
    assertThat(outcomes).extracting(Targets.Outcome::verdict).contains("not measured");
  }

  @Test
  void missingFiguresAreNotMeasuredRatherThanMissed() {
    List<Targets.Outcome> outcomes = Targets.evaluate(List.of(FIGURES.get(0)));
    assertThat(outcomes.get(0).verdict()).isEqualTo("not measured");
    assertThat(outcomes.get(4).verdict()).isEqualTo("not measured"); // 0 B/op so far, 4 cases missing
  }

  @Test
  void tableHasEveryFigureWithRatiosToEachPeerOnTheSameCase() {
    String md = MarkdownReport.render(FIGURES, CONTEXT);
    assertThat(md).contains(
        "| GatewayLimiter | SEQUENTIAL | allowed, 1 key | 1 | 30.00 M | 1.00 M | 0.0 | 1.50 | – | – | – |");
    assertThat(md).contains(
        "| GatewayLimiter | SEQUENTIAL | denied (window full), 1 key | 1 | 40.00 M | 1.00 M | 48.0 | 2.00 |");
    assertThat(md).contains("| Bucket4j | – | allowed, 1 key | 1 | 20.00 M | 1.00 M | 128.0 | – |");
    assertThat(md.lines().filter(l -> l.startsWith("| GatewayLimiter") || l.startsWith("| Bucket4j")
        || l.startsWith("| Naive") || l.startsWith("| Floor"))).hasSize(FIGURES.size());
    assertThat(md).contains("| Floor | – | mapGetLockNanoTime | 1 | 40.00 M | 1.00 M | 0.0 | – | – | – | – |");
    assertThat(md).contains("- CPU: Test CPU", "- Processors: 2", "- JVM: Test JVM", "- JMH: 1.37",
        "bench/run -wi 1", "## Profiling notes", "- tried a thing");
  }

  @Test
  void sequentialRowsComeBeforeReserveCommitAndOneThreadBeforeTwo() {
    String md = MarkdownReport.render(FIGURES, CONTEXT);
    assertThat(md.indexOf("| GatewayLimiter | SEQUENTIAL | allowed, 1 key | 1"))
        .isLessThan(md.indexOf("| GatewayLimiter | RESERVE_COMMIT | allowed, 1 key | 1"));
    assertThat(md.indexOf("| Naive |")).isLessThan(md.indexOf("| GatewayLimiter | SEQUENTIAL | allowed, own key"));
  }
}

package io.github.llmratelimiter.benchmarks.report;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.Test;

class HttpFigureTests {

  @Test
  void aSpreadIsTheMedianAndTheRangeOfItsValues() {
    assertThat(HttpFigure.Spread.of(1.2, 0.9, 1.0)).isEqualTo(new HttpFigure.Spread(1.0, 0.9, 1.2));
    assertThat(HttpFigure.Spread.of(4, 1, 3, 2)).isEqualTo(new HttpFigure.Spread(2.5, 1, 4));
    assertThat(HttpFigure.Spread.of(1.2, 0.9, 1.0)).hasToString("1.00 × (0.90 to 1.20)");
    assertThatThrownBy(HttpFigure.Spread::of).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("values");
  }

  @Test
  void aRoundComparesItsOnSliceWithItsOffSlice() {
    HttpFigure.Round r = new HttpFigure.Round(true, new HttpFigure.Slice(1_000, 2, 0.1),
        new HttpFigure.Slice(900, 2, 0.099));
    assertThat(r.throughputRatio()).isCloseTo(0.9, org.assertj.core.data.Offset.offset(1e-9));
    // 100 µs per request off, 110 on
    assertThat(r.off().cpuMicrosPerRequest()).isCloseTo(100, org.assertj.core.data.Offset.offset(1e-9));
    assertThat(r.cpuRatio()).isCloseTo(1.1, org.assertj.core.data.Offset.offset(1e-9));
  }

  @Test
  void theTotalsOfASideSumItsSlicesBeforeDividing() {
    HttpFigure f = new HttpFigure(HttpFigure.SERVLET, HttpFigure.MEMORY, HttpFigure.PLAIN, List.of(
        new HttpFigure.Round(false, new HttpFigure.Slice(100, 1, 0.01),
            new HttpFigure.Slice(100, 1, 0.02)),
        new HttpFigure.Round(true, new HttpFigure.Slice(300, 1, 0.01),
            new HttpFigure.Slice(100, 1, 0.02))),
        1, 2, 1, 2, 1, Double.NaN, Double.NaN, 0, 0);
    assertThat(f.offRequestsPerSecond()).isEqualTo(200);
    assertThat(f.offCpuMicros()).isCloseTo(50, org.assertj.core.data.Offset.offset(1e-9));
    assertThat(f.onCpuMicros()).isCloseTo(200, org.assertj.core.data.Offset.offset(1e-9));
    // per round: 2.0 and 6.0; the totals' ratio would be 4.0
    assertThat(f.cpuRatio().median()).isCloseTo(4.0, org.assertj.core.data.Offset.offset(1e-9));
    assertThat(f.cpuRatio().min()).isCloseTo(2.0, org.assertj.core.data.Offset.offset(1e-9));
  }

  @Test
  void theCompilerThreadsCpuIsLeftOutOfItsOwnRatioOnly() {
    // off: 100 µs per request, 20 of them compiling; on: 150 µs, 60 of them compiling
    HttpFigure f = new HttpFigure(HttpFigure.REACTIVE, HttpFigure.MEMORY, HttpFigure.PLAIN,
        List.of(new HttpFigure.Round(false, new HttpFigure.Slice(1_000, 1, 0.1, 0.02),
            new HttpFigure.Slice(1_000, 1, 0.15, 0.06))), 1, 2, 1, 2, 1, Double.NaN, Double.NaN, 0, 0);
    assertThat(f.cpuRatio().median()).isCloseTo(1.5, org.assertj.core.data.Offset.offset(1e-9));
    // (150 - 60) / (100 - 20)
    assertThat(f.cpuWithoutCompilerRatio().median())
        .isCloseTo(90.0 / 80, org.assertj.core.data.Offset.offset(1e-9));
    assertThat(f.compilerShare()).isCloseTo(0.08 / 0.25, org.assertj.core.data.Offset.offset(1e-9));
  }

  @Test
  void aSliceNeedsRequestsAndAFigureRounds() {
    assertThatThrownBy(() -> new HttpFigure.Slice(0, 1, 0)).isInstanceOf(
        IllegalArgumentException.class).hasMessage("requests must be >= 1, but was 0");
    assertThatThrownBy(() -> new HttpFigure(HttpFigure.SERVLET, HttpFigure.MEMORY,
        HttpFigure.PLAIN, List.of(), 1, 2, 1, 2, 1, Double.NaN, Double.NaN, 0, 0))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("rounds");
  }
}

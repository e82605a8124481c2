package io.github.llmratelimiter.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import org.junit.jupiter.api.Test;

/** A {@link Decision} cannot be built in a state a client could misread. */
class DecisionTests {

  @Test
  void aRetryableDenyNeverSaysRetryNow() {
    assertThatIllegalArgumentException()
        .isThrownBy(() -> new Decision(false, 0, 0, 0, Reason.BURST_LIMIT, true, "l"))
        .withMessageContaining("retryAfterMs=0");
  }

  @Test
  void aFinalDenyCarriesNoWait() {
    assertThatIllegalArgumentException()
        .isThrownBy(() -> new Decision(false, 0, 5, 0, Reason.BURST_LIMIT, false, "l"))
        .withMessageContaining("retryAfterMs=5");
    Decision d = Decision.finalDeny(Reason.BURST_LIMIT, 0, 0, "l");
    assertThat(d.retryable()).isFalse();
    assertThat(d.retryAfterMs()).isZero();
  }

  @Test
  void allowedExactlyWhenOk() {
    assertThatIllegalArgumentException()
        .isThrownBy(() -> new Decision(true, 0, 0, 0, Reason.RPM_LIMIT, true, "l"))
        .withMessageContaining("reason must be OK exactly when allowed");
    assertThatIllegalArgumentException()
        .isThrownBy(() -> new Decision(false, 0, 1, 0, Reason.OK, true, "l"))
        .withMessageContaining("reason must be OK exactly when allowed");
    assertThatIllegalArgumentException()
        .isThrownBy(() -> new Decision(true, 0, 3, 0, Reason.OK, true, "l"))
        .withMessageContaining("retryAfterMs=3");
  }

  @Test
  void countsAreNeverNegativeAndNamesPresent() {
    assertThatIllegalArgumentException()
        .isThrownBy(() -> Decision.allow(-1, 0, "l"))
        .withMessage("remaining must be >= 0, but was -1");
    assertThatIllegalArgumentException()
        .isThrownBy(() -> Decision.allow(1, 0, null))
        .withMessage("level must not be null");
  }
}

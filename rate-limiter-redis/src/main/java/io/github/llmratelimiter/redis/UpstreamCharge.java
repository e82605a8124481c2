package io.github.llmratelimiter.redis;

import io.github.llmratelimiter.core.Reason;
import java.util.List;

/**
 * The reply of {@code upstream-acquire.lua}: what an upstream decided on its own Cluster slot
 * before the caller's levels were decided on the root's, and what it charged (to give back when
 * they deny).
 *
 * @param admitted whether the upstream admitted the call (and charged it)
 * @param waitMs the wait of a deny, ms
 * @param id the number its counter gave the call, without the base (0: none)
 * @param ranAt the time the script ran, in the scripts' time units
 * @param remaining the unit-cost calls it admits (after the call when it admitted it)
 * @param resetMs ms until its window and model-token window are empty
 * @param modelTokens the model tokens it admits after the call ({@link Long#MAX_VALUE}: no limit)
 * @param modelTokensResetMs ms until its model-token window is empty
 * @param counted what the charge counted down in the report: 1 a request, 2 the model tokens, 3
 *     both
 * @param requestsResetAt the report's reset of its requests then (0: none)
 * @param tokensResetAt the report's reset of its model tokens then (0: none)
 * @param figures its {@value AcquireReply#FIGURES} figures, as a level's
 * @param orderUndo for a call with a turn, what undoes its count in the upstream's order (the six
 *     values of lib.lua's {@code OR.admitted}, NaN for none; the first 0 when nothing was
 *     counted); empty for a call without a turn
 */
record UpstreamCharge(boolean admitted, long waitMs, long id, double ranAt, long remaining,
    long resetMs, long modelTokens, long modelTokensResetMs, int counted, double requestsResetAt,
    double tokensResetAt, long[] figures, double[] orderUndo) {

  /** Reads the reply, numbers as strings ({@code %.17g}, {@code inf} for no limit). */
  static UpstreamCharge of(List<Object> reply) {
    double[] v = new double[reply.size()];
    for (int i = 0; i < v.length; i++) {
      v[i] = number(String.valueOf(reply.get(i)));
    }
    long[] figures = new long[AcquireReply.FIGURES];
    for (int i = 0; i < figures.length; i++) {
      figures[i] = (long) v[11 + i];
    }
    int undo = 11 + figures.length;
    double[] orderUndo = v.length > undo ? java.util.Arrays.copyOfRange(v, undo, undo + 6)
        : new double[0];
    return new UpstreamCharge(v[0] == 1, (long) v[1], (long) v[2], v[3], (long) v[4], (long) v[5],
        (long) v[6], (long) v[7], (int) v[8], v[9], v[10], figures, orderUndo);
  }

  private static double number(String s) {
    return switch (s) {
      case "inf" -> Double.POSITIVE_INFINITY;
      case "-inf" -> Double.NEGATIVE_INFINITY;
      case "nan", "-nan" -> Double.NaN;
      default -> Double.parseDouble(s);
    };
  }

  /**
   * The reply of the whole call: the caller's levels' reply ({@code levels} of them, from
   * acquire.lua's mode 2 or 3) joined with this upstream's part, as one acquire.lua call deciding
   * both would have replied it (the upstream the last level).
   */
  AcquireReply joined(AcquireReply caller, int levels) {
    caller.upstream = this;
    if (caller.expired || caller.conflict) {
      return caller;
    }
    long[] v = caller.values;
    if (caller.components.length == levels * AcquireReply.FIGURES) {
      long[] all = new long[caller.components.length + figures.length];
      System.arraycopy(caller.components, 0, all, 0, caller.components.length);
      System.arraycopy(figures, 0, all, caller.components.length, figures.length);
      caller.components = all;
    }
    if (v[0] == 1) {
      if (remaining < v[3]) {
        v[3] = remaining;
        v[2] = levels + 1;
      }
      v[5] = Math.max(v[5], resetMs);
      v[8] = Math.min(v[8], modelTokens);
      v[9] = Math.max(v[9], modelTokensResetMs);
    } else if (caller.reason == Reason.UPSTREAM_LIMIT) {
      v[3] = Math.min(v[3], remaining);
      v[5] = Math.max(v[5], resetMs);
      v[8] = Math.min(v[8], figures[5]);
      v[9] = Math.max(v[9], figures[6]);
    }
    return caller;
  }
}

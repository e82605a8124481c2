package io.github.llmratelimiter.autoconfigure;

import io.github.llmratelimiter.gateway.RateLimitObserver;
import io.github.llmratelimiter.gateway.RateLimitOutcome;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/** Every reconciliation of model tokens an application made, queued for the tests to await. */
public final class Reconciliations implements RateLimitObserver {

  /**
   * One reconciliation.
   *
   * @param policy the policy
   * @param estimate the model tokens reserved
   * @param actual the model tokens settled
   */
  public record Settled(String policy, long estimate, long actual) {}

  private final BlockingQueue<Settled> queue = new LinkedBlockingQueue<>();

  @Override
  public void onDecision(RateLimitOutcome outcome, long nanos) {}

  @Override
  public void onReconcile(String policy, long estimate, long actual) {
    queue.add(new Settled(policy, estimate, actual));
  }

  /**
   * Waits (bounded) for the next reconciliation.
   *
   * @return it
   * @throws InterruptedException if interrupted
   */
  public Settled next() throws InterruptedException {
    Settled s = queue.poll(10, TimeUnit.SECONDS);
    if (s == null) {
      throw new AssertionError("no reconciliation within 10 s");
    }
    return s;
  }

  /** Forgets what was recorded. */
  public void clear() {
    queue.clear();
  }

  /**
   * Returns the reconciliations recorded and not yet taken.
   *
   * @return how many
   */
  public int pending() {
    return queue.size();
  }
}

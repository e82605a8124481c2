package io.github.llmratelimiter.benchmarks.report;

/**
 * One round of the scaling check: the same benchmark at 1 and at 2 threads, each thread on a key
 * of its own, measured one after the other in separate JVM forks.
 *
 * @param round the round, from 1
 * @param twoFirst whether the 2-thread run came first in this round (the rounds alternate)
 * @param oneThread the throughput at 1 thread, ops/s
 * @param twoThreads the throughput of both threads together at 2 threads, ops/s
 */
public record ScalingRound(int round, boolean twoFirst, double oneThread, double twoThreads) {

  /**
   * Returns how much faster 2 threads were than 1.
   *
   * @return the 2-thread throughput divided by the 1-thread throughput
   */
  public double ratio() {
    return twoThreads / oneThread;
  }
}

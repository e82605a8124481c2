package io.github.llmratelimiter.core;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletionStage;
import java.util.function.Consumer;

/**
 * The fair order of the calls that wait for an upstream, shared by every caller of one store (on
 * a distributed store, by every gateway instance), and enforced by the store's upstream admission
 * ({@link RateLimitStore#reserve(java.util.List, java.util.List, double, Consumption, Composition,
 * Upstream, UpstreamTurn)}).
 *
 * <p><b>Order.</b> Per upstream, priority class first (a lower class always goes first), then,
 * within a class, the Virtual Token Counter of Sheng et al., "Fairness in Serving Large Language
 * Models" (OSDI 2024): every tenant has a counter of the model tokens it was served on the upstream
 * after waiting, each call's estimate divided by its weight, counted when the upstream admits the
 * call and corrected by {@link #settled}. The backlogged tenant (one with a call waiting) with the
 * least counter goes first; on a tie, the tenant whose earliest waiting call entered first; a
 * tenant's own calls go in the order they entered. The first waiting call is the earliest call of
 * that tenant. A tenant that becomes backlogged has its counter lifted to the least counter of the
 * tenants backlogged in its class, or, when none is, to the class's last-left counter, so that time
 * spent idle is not banked. The last-left counter is set by the last tenant that left the class's
 * backlog (to its counter) and by each call admitted without waiting (none waits then), which
 * passes through its class at once: the class's last-left counter becomes the greater of itself and
 * the tenant's counter (0 when the order keeps none), plus the call's estimate over its weight; the
 * tenant's own counter is left as it was (a tenant that becomes backlogged in that class is lifted
 * at least to the mark anyway; in another class the call's service is not held against it). A
 * tenant neither backlogged nor served after waiting for a while (a minute or more; the
 * implementation says) is forgotten.
 *
 * <p><b>Admission.</b> While an upstream has waiting calls, its admission takes them in this
 * order: a call whose turn names the first waiting call may be admitted (and leaves the order in
 * the same atomic step); any other call with a turn is denied {@link Reason#UPSTREAM_LIMIT},
 * charging nothing, as a call the upstream has no room for. A waiting call whose deadline passed
 * is no longer in the order (it left), so a caller that dies with calls waiting holds the order
 * for at most their longest wait.
 *
 * <p><b>Wake-ups.</b> {@link #signal} tells every listener of the order, on every instance, that
 * an upstream may admit a call again; an implementation may drop a signal (a subscription that
 * reconnects), so a listener with calls waiting also asks {@link #first} now and then. Thread-safe.
 */
public interface UpstreamOrder {

  /**
   * Puts a call in the order of its upstream.
   *
   * @param upstream the upstream the call waits for
   * @param turn the call's tenant, weight, priority class and estimate; its waiter is ignored
   * @param maxWait how long the call waits at most: it leaves the order once that passed; positive
   * @return a stage that completes with the call's id, unique among the store's callers
   * @throws IllegalArgumentException if an argument is null or out of range
   */
  CompletionStage<String> enter(Upstream upstream, UpstreamTurn turn, Duration maxWait);

  /**
   * Takes a waiting call out of the order without admitting it (it timed out, its caller left, or
   * its own budgets denied it); nothing happens for a call no longer in it.
   *
   * @param upstream the upstream the call waited for
   * @param waiter the id {@link #enter} gave the call
   * @return a stage that completes once the call is out of the order
   * @throws IllegalArgumentException if an argument is null or blank
   */
  CompletionStage<Void> leave(Upstream upstream, String waiter);

  /**
   * Returns the call first in an upstream's order.
   *
   * @param upstream the upstream
   * @return a stage that completes with the first waiting call's id, or empty when none waits
   * @throws IllegalArgumentException if the argument is null
   */
  CompletionStage<Optional<String>> first(Upstream upstream);

  /**
   * Corrects a tenant's counter with what one of its admitted calls used: adds the tokens used
   * minus the estimate counted at admission, divided by the turn's weight, whether the call waited
   * or not (the estimate of a call admitted without waiting went to its class's last-left counter,
   * the correction goes to the tenant's). A tenant the order keeps no counter for (it has not
   * waited lately, or the order forgot it) is left alone.
   *
   * @param upstream the upstream that served the call
   * @param turn the turn the call was admitted with
   * @param actual the model tokens (input and output) the call used, at least 0
   * @return a stage that completes once the counter is corrected
   * @throws IllegalArgumentException if an argument is null or out of range
   */
  CompletionStage<Void> settled(Upstream upstream, UpstreamTurn turn, long actual);

  /**
   * Tells every listener of the order, on every instance, that an upstream may admit a call again
   * (a slot released, model tokens given back, a provider's report applied). Does not block.
   *
   * @param upstream the upstream's name
   * @throws IllegalArgumentException if the argument is null or blank
   */
  void signal(String upstream);

  /**
   * Registers a listener told the name of an upstream whenever {@link #signal} is called for it
   * by any caller of the store, on a thread of the implementation's (it must not block).
   *
   * @param listener the listener
   * @return a handle whose {@code close} removes the listener
   * @throws IllegalArgumentException if the argument is null
   */
  AutoCloseable listen(Consumer<String> listener);

  /**
   * Returns how many calls wait for an upstream in the order, on every instance.
   *
   * @param upstream the upstream
   * @return a stage that completes with the number of waiting calls whose deadline has not passed
   * @throws IllegalArgumentException if the argument is null
   */
  CompletionStage<Long> waiting(Upstream upstream);

  /**
   * Returns how long a waiting call that finds no answer waits before asking {@link #first}
   * again: the bound on a wake-up the implementation lost.
   *
   * @return the poll interval, positive
   */
  default Duration pollInterval() {
    return Duration.ofSeconds(1);
  }
}

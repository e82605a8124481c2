package io.github.llmratelimiter.core;

import java.util.List;
import java.util.Optional;

/**
 * Reads and forgets the per-key state of a store, for monitoring and operators: never on the
 * request path.
 *
 * <p>A store that supports it offers it through {@link RateLimitStore#administration()}. What it
 * reads is the store's own state: a distributed store's administration sees what every instance
 * that shares it counted.
 */
public interface StoreAdministration {

  /**
   * Returns the state of one key, if the store tracks it.
   *
   * @param budget the budget
   * @param key the key
   * @return the key's state, or empty when it is untracked (which means fresh)
   */
  Optional<KeySnapshot> inspect(Budget budget, String key);

  /**
   * Returns up to {@code limit} tracked keys of a budget, the most used first.
   *
   * <p>Every returned state is read at the call, and the list is ordered by {@link
   * KeySnapshot#BUSIEST_FIRST}. Which keys are considered depends on the store. The {@linkplain
   * RateLimitStore#inMemory() in-memory store} reads at most 2,048 keys per call, whatever the
   * number tracked:
   * <ul>
   *   <li>while the budget tracks at most 2,048 keys, it reads them all, so the answer is exact;
   *   <li>above, it reads only candidates: the 1,024 keys its maintenance found busiest in its last
   *       complete pass over the budget, and the 1,024 busiest so far in the pass under way. A key
   *       becomes a candidate on its use when maintenance last examined it, so a key whose use rose
   *       since (or a key new since) is listed only once maintenance has examined it again; the
   *       candidates themselves are ranked on their state at the call. Maintenance
   *       examines 100,000 keys per run, budget after budget, so a pass over a budget ends within
   *       {@code 2 * ceil(T / 100,000) + 2} runs, {@code T} being the keys tracked in the store
   *       (about ten seconds per 1,000,000 keys with the default scheduler, one run a second). A
   *       store whose maintenance never runs has no candidates, and lists none above 2,048 keys.
   * </ul>
   * A distributed store may read only candidates its decisions recorded, in structures of a bounded
   * size, as its own documentation states.
   *
   * @param budget the budget
   * @param limit the most keys to return, at least 1
   * @return the keys' states
   * @throws IllegalArgumentException if {@code limit} is below 1
   */
  List<KeySnapshot> top(Budget budget, int limit);

  /**
   * Forgets one key's state, giving it a full budget again.
   *
   * @param budget the budget
   * @param key the key
   * @return whether the key was tracked
   */
  boolean reset(Budget budget, String key);

  /**
   * Forgets the state of every key in every budget, as {@link #reset} does for one, and every plan
   * assignment: afterwards the store answers as a new one would. Meant for tests, to start each
   * case from full budgets; a distributed store forgets what every instance that shares it counted.
   * A call in flight meanwhile may leave its own charge behind.
   *
   * @throws IllegalStateException when a distributed store cannot reach its server now
   */
  void resetAll();

  /**
   * Returns how many keys the store tracks for a budget.
   *
   * <p>The in-memory store counts its entries exactly. A distributed store may answer an estimate
   * read from a structure of a bounded size, as its own documentation states.
   *
   * @param budget the budget
   * @return the number of tracked keys, or a distributed store's estimate of it
   */
  long trackedKeys(Budget budget);

  /**
   * Returns where each quota of {@code budget} stands for a key in its current period, in the
   * budget's order (what a call with these limits would be checked against; nothing is charged
   * and no threshold reported).
   *
   * @param budget the budget (or a plan's variant of it), whose quotas are read
   * @param key the key
   * @return one status per quota; empty when the budget has none or the store keeps no quotas
   */
  default List<QuotaStatus> quotas(Budget budget, String key) {
    return List.of();
  }

  /**
   * Returns the keys that used the most of a quota in its current period, most first.
   *
   * @param budget the budget that holds the quota
   * @param quota the quota
   * @param limit the most keys returned, at least 1
   * @return up to {@code limit} keys with what they used, most first; empty when the store keeps
   *     no quotas
   */
  default List<QuotaSpend> topSpenders(Budget budget, QuotaLimit quota, int limit) {
    return List.of();
  }
}

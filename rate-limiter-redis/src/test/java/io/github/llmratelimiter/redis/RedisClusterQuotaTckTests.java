package io.github.llmratelimiter.redis;

import io.github.llmratelimiter.core.AbstractQuotaStoreTests;
import io.github.llmratelimiter.core.ManualClock;
import io.github.llmratelimiter.core.ManualTicker;
import io.github.llmratelimiter.core.RateLimitStore;

/** The Redis store, on a 3-master Redis Cluster with keys in clear, passes the quota TCK. */
class RedisClusterQuotaTckTests extends AbstractQuotaStoreTests {

  @Override
  protected RateLimitStore newStore(ManualTicker ticker, ManualClock clock) {
    return TestRedis.cluster(ticker).wallClock(clock).build();
  }
}

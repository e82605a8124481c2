package io.github.llmratelimiter.redis;

import io.github.llmratelimiter.core.ConcurrencyLimit;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.StoreAdministration;
import io.github.llmratelimiter.core.Ticker;
import io.github.llmratelimiter.core.internal.Args;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.SslOptions;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.resource.ClientResources;
import java.time.Duration;
import java.time.InstantSource;
import java.util.List;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.atomic.LongAdder;
import org.jspecify.annotations.Nullable;

/**
 * A {@link RateLimitStore} on Redis (a standalone server, a master found through Sentinel, or a
 * Cluster, in clear or over TLS), shared by every gateway instance that points at the same Redis and
 * key prefix.
 *
 * <p>Each decision, a hierarchy's included, is one {@code EVALSHA} of a Lua script that does what
 * the in-memory store does under its lock, so both stores give the same decisions (reasons, retry
 * and reset times, remaining, levels) in both {@link io.github.llmratelimiter.core.Composition}
 * modes, a budget's variants (a tenant's plan: other limits over the same state) and slots for
 * calls in flight (leases that expire on the server's clock; a release is one more {@code EVALSHA})
 * included. Time is the Redis server's {@code TIME}, so gateway clocks never disagree. Every key
 * expires once its state would be fresh again, except a non-refilling bucket that was charged.
 *
 * <p>{@linkplain io.github.llmratelimiter.core.QuotaLimit Quotas} (requests, model tokens or cost
 * per hour, day, week or month) are checked and charged in the same {@code EVALSHA}, and settled
 * with the model tokens in one more ({@code reconcile}). Their periods are the exception to
 * server time: each instance computes them from its {@linkplain Builder#wallClock wall clock}
 * (the calendar of a time zone is not something Lua can read), so the instances' clocks must
 * agree on the boundaries. A key's counter of a period lives until a day after the period ends;
 * each threshold of it is reported once, by one decision, across every instance.
 *
 * <p>{@linkplain io.github.llmratelimiter.core.Upstream Upstreams} (provider accounts every caller
 * shares) keep one state for every instance, under their own hash tag, and what their provider
 * reports ({@code report}) holds for every instance on the server's clock. On a standalone server
 * (or Sentinel's master) a call to an upstream is decided with the caller's levels in the same
 * {@code EVALSHA}; on a Cluster whose upstream's slot is not the caller's root's, the upstream is
 * decided and charged on its slot first and its charge given back when the caller's levels deny:
 * two round trips, three on such a deny, and never a call admitted that either side denies.
 *
 * <p>The fair order of the calls that wait for an upstream ({@link #upstreamOrder()}) lives in
 * Redis under the upstream's hash tag, one for every instance: a decision with a turn is gated by
 * it in the script that decides the upstream, and wake-ups reach every instance over
 * publish/subscribe.
 *
 * <p>A slot for a call in flight counts only while the store that took it renews it: every third
 * of the {@linkplain Builder#slotLease slot lease} the store renews the slots of all its calls in
 * flight in one {@code EVALSHA} (one per Cluster hash slot that holds some), so a call keeps its
 * slot for as long as it runs, up to its lease timeout (the last-resort cap), while the slots of an
 * instance that crashed, or whose release never reached Redis, free themselves within one slot
 * lease.
 *
 * <p>While Redis does not answer within the command timeout, the {@link FailurePolicy} decides;
 * Redis is tried again after the retry interval, and the store recovers by itself. On a Cluster
 * this holds per master: a master that does not answer sends to the policy only the calls on the
 * keys it serves. Bad input is rejected with an {@link IllegalArgumentException} before Redis is
 * asked.
 *
 * <pre>{@code
 * RedisRateLimitStore store = RedisRateLimitStore.builder("redis://localhost:6379")
 *     .failurePolicy(FailurePolicy.LOCAL_FALLBACK)
 *     .build();
 * GatewayLimiter limiter = GatewayLimiter.builder().requestsPerMinute(60).store(store).build();
 * }</pre>
 *
 * <p>It keeps plan assignments ({@link #planAssignments()}) and offers administration ({@link
 * #administration()}), both under the same circuit breaker as decisions.
 *
 * <p>Limiter keys are API keys and other secrets: by default the store names them in Redis only by
 * a hash ({@link #hashedKey(String)}), so {@link StoreAdministration#top}
 * and {@link StoreAdministration#topSpenders} report hashed keys,
 * while {@link StoreAdministration#inspect} and {@link StoreAdministration#reset} take keys in
 * clear and hash them the same way. {@link Builder#hashKeys hashKeys(false)} keeps them readable.
 *
 * <p>The administration finds keys with {@code SCAN} (on every master of a Cluster): its calls cost
 * time in the number of keys in the database and are meant for monitoring, not for the request
 * path. A lower level of a hierarchy keeps its state per root key (the hash tag); the
 * administration looks under every root key, and {@code inspect} reports the most used state
 * found.
 */
public interface RedisRateLimitStore extends RateLimitStore {

  /**
   * Returns a builder for a standalone Redis at {@code uri}, on a client the store owns; see {@link
   * #builder(RedisURI)} for Sentinel and TLS.
   *
   * @param uri a Redis URI such as {@code redis://localhost:6379}, {@code rediss://host:6380} (TLS)
   *     or {@code redis-sentinel://sentinel-1:26379,sentinel-2:26379#mymaster}
   * @return a new builder
   * @throws IllegalArgumentException if the URI is blank or malformed
   */
  static Builder builder(String uri) {
    Args.notBlank("uri", uri);
    try {
      return builder(RedisURI.create(uri));
    } catch (RuntimeException e) {
      throw new IllegalArgumentException("uri must be a Redis URI, but was '" + uri + "'", e);
    }
  }

  /**
   * Returns a builder for a standalone Redis, on a client the store owns.
   *
   * <p>A URI with sentinels and a master id ({@link RedisURI.Builder#sentinel}) reaches the master
   * through Sentinel: the store asks the sentinels for the master's address at every
   * (re)connection, so after a failover it reconnects to the promoted replica (in the meantime the
   * failure policy answers). A URI with {@link RedisURI#setSsl(boolean) SSL} on (scheme {@code
   * rediss}) connects over TLS, verifying the server's certificate and host name by default; {@link
   * Builder#sslOptions} sets the trusted certificates and the client's key.
   *
   * @param uri the server's URI, or the sentinels' with the master id
   * @return a new builder
   */
  static Builder builder(RedisURI uri) {
    return new Builder(Args.notNull("uri", uri), null, null, null);
  }

  /**
   * Returns a builder for a Redis Cluster reached through the given nodes (any of its nodes: the
   * client learns the others from them), on a client the store owns; nodes given with {@link
   * RedisURI#setSsl(boolean) SSL} on connect over TLS.
   *
   * @param seeds one or more nodes of the cluster
   * @return a new builder
   * @throws IllegalArgumentException if {@code seeds} is null or empty
   */
  static Builder cluster(List<RedisURI> seeds) {
    Args.notNull("seeds", seeds);
    if (seeds.isEmpty()) {
      throw new IllegalArgumentException("seeds must not be empty, but was " + seeds);
    }
    return new Builder(null, List.copyOf(seeds), null, null);
  }

  /**
   * Returns a builder on an existing standalone client (for example one shared with the
   * application); the store opens its own connection to {@code uri} and never shuts the client
   * down.
   *
   * @param client the client
   * @param uri the server's URI
   * @return a new builder
   */
  static Builder builder(RedisClient client, RedisURI uri) {
    return new Builder(Args.notNull("uri", uri), null, Args.notNull("client", client), null);
  }

  /**
   * Returns a builder on an existing Cluster client; the store opens its own connection and never
   * shuts the client down.
   *
   * @param client the client
   * @return a new builder
   */
  static Builder builder(RedisClusterClient client) {
    return new Builder(null, null, null, Args.notNull("client", client));
  }

  /**
   * Returns the form in which a store that hashes keys (the default) names {@code key} in Redis
   * and in {@link StoreAdministration#top}: {@code #} followed by the first 128 bits of the SHA-256 of its UTF-8
   * bytes, in base64url without padding (23 characters in all).
   *
   * @param key a limiter key in clear
   * @return its hashed form
   * @throws IllegalArgumentException if the key is null or blank
   */
  static String hashedKey(String key) {
    return RedisKeys.hash(Args.notBlank("key", key));
  }

  /**
   * Returns how many calls to Redis failed (errors and timeouts) since the store was built, on
   * every master of a Cluster.
   *
   * @return the error count, for a metric
   */
  long errorCount();

  /**
   * Returns whether Redis is considered unavailable, so that the failure policy answers; on a
   * Cluster, whether any master is (the policy then answers the calls on the keys that master
   * serves, and Redis decides the others).
   *
   * @return {@code true} from a failed call until Redis answers again
   */
  boolean degraded();

  /**
   * Sends a {@code PING} within the command timeout, for a health check; an answer ends a
   * degraded period at once. On a Cluster every master is sent one, and each answer ends that
   * master's degraded period.
   *
   * @return whether Redis answered (on a Cluster, every master)
   */
  boolean ping();

  /**
   * Returns the policy applied while Redis does not answer.
   *
   * @return the failure policy
   */
  FailurePolicy failurePolicy();

  /**
   * Closes the store's connection, and the client if the store created it.
   */
  @Override
  void close();

  /** Builds a {@link RedisRateLimitStore}; every setting has a default. */
  final class Builder {

    /**
     * The default command timeout: 1 s of silence. A healthy Redis answers a queued call within
     * microseconds of the calls before it; on a busy host it may not be scheduled for a few
     * hundred milliseconds, which must not count as an outage.
     */
    public static final Duration DEFAULT_COMMAND_TIMEOUT = Duration.ofSeconds(1);

    /** The default longest wait for one reply: 5 s. */
    public static final Duration DEFAULT_MAX_WAIT = Duration.ofSeconds(5);

    /** The default retry interval after the circuit breaker opens: 1 s. */
    public static final Duration DEFAULT_RETRY_INTERVAL = Duration.ofSeconds(1);

    /** The default heartbeat interval: 1 s (an instance counts as live for three intervals). */
    public static final Duration DEFAULT_HEARTBEAT_INTERVAL = Duration.ofSeconds(1);

    /**
     * The default slot lease: 5 s. A slot taken on Redis for a call in flight expires this long
     * after it was taken or last renewed, and its holder renews it every third of it.
     */
    public static final Duration DEFAULT_SLOT_LEASE = Duration.ofSeconds(5);

    /** The default failure rate, in percent, at which the circuit breaker opens: 50. */
    public static final float DEFAULT_FAILURE_RATE_THRESHOLD = 50;

    /** The default number of most recent calls whose failure rate the circuit breaker watches: 20. */
    public static final int DEFAULT_SLIDING_WINDOW_SIZE = 20;

    /** The default number of calls the circuit breaker needs before it computes a rate: 10. */
    public static final int DEFAULT_MINIMUM_NUMBER_OF_CALLS = 10;

    /** The default number of probe calls after the retry interval: 3. */
    public static final int DEFAULT_PERMITTED_CALLS_IN_HALF_OPEN_STATE = 3;

    /** The default key prefix: {@code rl}. */
    public static final String DEFAULT_KEY_PREFIX = "rl";

    private static final Duration MIN_CONNECT_TIMEOUT = Duration.ofSeconds(1);

    private final @Nullable RedisURI uri;
    private final @Nullable List<RedisURI> seeds;
    private final @Nullable RedisClient client;
    private final @Nullable RedisClusterClient clusterClient;
    private String keyPrefix = DEFAULT_KEY_PREFIX;
    private boolean hashKeys = true;
    private byte @Nullable [] hashSecret;
    private Duration commandTimeout = DEFAULT_COMMAND_TIMEOUT;
    private @Nullable Duration maxWait;
    private Duration retryInterval = DEFAULT_RETRY_INTERVAL;
    private Duration heartbeatInterval = DEFAULT_HEARTBEAT_INTERVAL;
    private Duration slotLease = DEFAULT_SLOT_LEASE;
    private float failureRateThreshold = DEFAULT_FAILURE_RATE_THRESHOLD;
    private int slidingWindowSize = DEFAULT_SLIDING_WINDOW_SIZE;
    private int minimumNumberOfCalls = DEFAULT_MINIMUM_NUMBER_OF_CALLS;
    private int permittedCallsInHalfOpenState = DEFAULT_PERMITTED_CALLS_IN_HALF_OPEN_STATE;
    private FailurePolicy failurePolicy = FailurePolicy.LOCAL_FALLBACK;
    private @Nullable Ticker ticker;
    private InstantSource wallClock = InstantSource.system();
    private @Nullable ClientResources clientResources;
    private boolean traceCommands;
    private @Nullable SslOptions sslOptions;

    private Builder(
        @Nullable RedisURI uri,
        @Nullable List<RedisURI> seeds,
        @Nullable RedisClient client,
        @Nullable RedisClusterClient clusterClient) {
      this.uri = uri;
      this.seeds = seeds;
      this.client = client;
      this.clusterClient = clusterClient;
    }

    /**
     * Sets the prefix of every key (default {@value #DEFAULT_KEY_PREFIX}); stores that share a
     * prefix on one Redis share their budgets.
     *
     * @param keyPrefix the prefix, not blank, without whitespace or any of {@code %{}*?[]\}
     * @return this builder
     * @throws IllegalArgumentException on a bad prefix
     */
    public Builder keyPrefix(String keyPrefix) {
      new RedisKeys(keyPrefix, hashKeys);
      this.keyPrefix = keyPrefix;
      return this;
    }

    /**
     * Sets whether limiter keys (API keys, tenants) are hashed in Redis key names (default {@code
     * true}): with hashing, Redis never holds a key in clear and {@link StoreAdministration#top}
     * names keys by their {@link #hashedKey(String) hashed form}; without, key names and {@code
     * top} are readable. Stores sharing a prefix must agree on this setting, or they do not share
     * budgets.
     *
     * @param hashKeys whether to hash keys
     * @return this builder
     */
    public Builder hashKeys(boolean hashKeys) {
      this.hashKeys = hashKeys;
      return this;
    }

    /**
     * Sets how long Redis may answer nothing while a call waits for it (default 1 s): a call fails
     * once no reply at all has come on the store's connection (on a Cluster, from the master that
     * serves the call's keys) for this long since it was sent or since the last reply. A call
     * queued behind a burst keeps waiting while Redis answers the calls before it, up to {@link
     * #maxWait}. This is also the longest a call waits for a connection and for a monitoring call
     * (those of {@link #administration()}); a health check's {@code PING} waits at most the shorter
     * of this and 300 ms.
     *
     * @param commandTimeout the timeout, positive
     * @return this builder
     * @throws IllegalArgumentException if the timeout is null, zero or negative
     */
    public Builder commandTimeout(Duration commandTimeout) {
      this.commandTimeout = positive("commandTimeout", commandTimeout);
      return this;
    }

    /**
     * Sets the longest a call waits for its reply in all (default 5 s, or the command timeout if
     * that is longer), however busy Redis is. A call that runs on Redis after this has passed
     * charges nothing there.
     *
     * @param maxWait the longest wait, at least the command timeout when the store is built
     * @return this builder
     * @throws IllegalArgumentException if the wait is null, zero or negative
     */
    public Builder maxWait(Duration maxWait) {
      this.maxWait = positive("maxWait", maxWait);
      return this;
    }

    /**
     * Sets how long the circuit breaker stays open once it has opened, answering every call by the
     * failure policy without asking Redis (default 1 s); then a few probe calls go to Redis. A
     * fail-closed deny asks callers to retry after this long.
     *
     * @param retryInterval the interval, positive
     * @return this builder
     * @throws IllegalArgumentException if the interval is null, zero or negative
     */
    public Builder retryInterval(Duration retryInterval) {
      this.retryInterval = positive("retryInterval", retryInterval);
      return this;
    }

    /**
     * Sets the circuit breaker that decides when Redis counts as unavailable (on a Cluster, each
     * master has one with these settings, and counts as unavailable on its own): it opens when at
     * least {@code failureRateThreshold} percent of the last {@code slidingWindowSize} calls
     * failed (counted once {@code minimumNumberOfCalls} calls were made), and after the retry
     * interval lets {@code permittedCallsInHalfOpenState} probe calls through (defaults 50, 20, 10
     * and 3).
     *
     * @param failureRateThreshold the failure rate in percent, above 0 and at most 100
     * @param slidingWindowSize the number of most recent calls watched, at least 1
     * @param minimumNumberOfCalls the calls needed before a rate counts, 1 to the window size
     * @param permittedCallsInHalfOpenState the probe calls, at least 1
     * @return this builder
     * @throws IllegalArgumentException if a value is out of range, naming it
     */
    public Builder circuitBreaker(float failureRateThreshold, int slidingWindowSize,
        int minimumNumberOfCalls, int permittedCallsInHalfOpenState) {
      if (!(failureRateThreshold > 0 && failureRateThreshold <= 100)) {
        throw new IllegalArgumentException(
            "failureRateThreshold must be above 0 and at most 100, but was " + failureRateThreshold);
      }
      atLeastOne("slidingWindowSize", slidingWindowSize);
      atLeastOne("minimumNumberOfCalls", minimumNumberOfCalls);
      atLeastOne("permittedCallsInHalfOpenState", permittedCallsInHalfOpenState);
      if (minimumNumberOfCalls > slidingWindowSize) {
        throw new IllegalArgumentException("minimumNumberOfCalls must be at most slidingWindowSize ("
            + slidingWindowSize + "), but was " + minimumNumberOfCalls);
      }
      this.failureRateThreshold = failureRateThreshold;
      this.slidingWindowSize = slidingWindowSize;
      this.minimumNumberOfCalls = minimumNumberOfCalls;
      this.permittedCallsInHalfOpenState = permittedCallsInHalfOpenState;
      return this;
    }

    /**
     * Sets how often this instance marks itself live in Redis (default 1 s); an instance counts
     * as live for three intervals after its last mark. Under {@link FailurePolicy#LOCAL_FALLBACK}
     * each instance takes its share of every limit from the live count.
     *
     * @param heartbeatInterval the interval, positive
     * @return this builder
     * @throws IllegalArgumentException if the interval is null, zero or negative
     */
    public Builder heartbeatInterval(Duration heartbeatInterval) {
      this.heartbeatInterval = positive("heartbeatInterval", heartbeatInterval);
      return this;
    }

    /**
     * Sets how long a slot taken on Redis for a call in flight (a budget's {@link
     * ConcurrencyLimit}) counts without being renewed (default 5 s).
     * The store renews the slots of its calls still in flight every third of this, all at once (one
     * script call per interval on a standalone server, one per Cluster hash slot that holds some),
     * so a call holds its slot for as long as it runs, up to its lease timeout, which stays the
     * last-resort cap; a slot whose holder died, or whose release never reached Redis, frees itself
     * within this long. Shorter frees a dead instance's slots sooner, at more renewal calls; it
     * should stay well above the command timeout, or a slow renewal lets live slots expire.
     *
     * @param slotLease the lease, positive and at most a day
     * @return this builder
     * @throws IllegalArgumentException if the lease is null, not positive or longer than a day
     */
    public Builder slotLease(Duration slotLease) {
      positive("slotLease", slotLease);
      if (slotLease.compareTo(ConcurrencyLimit.MAX_LEASE) > 0) {
        throw new IllegalArgumentException("slotLease must be at most "
            + ConcurrencyLimit.MAX_LEASE + ", but was " + slotLease);
      }
      this.slotLease = slotLease;
      return this;
    }

    /**
     * Keys the hashes that name limiter keys in Redis (when {@link #hashKeys} is on, the default):
     * HMAC-SHA-256 under {@code secret} instead of plain SHA-256, so that a hash seen in Redis or
     * in {@link StoreAdministration#top} cannot be reversed by hashing guessed keys. Stores sharing
     * a prefix must use the same secret, or they do not share budgets; {@link #hashedKey(String)}
     * is then not the form keys take.
     *
     * @param secret the secret, at least 16 bytes
     * @return this builder
     * @throws IllegalArgumentException if the secret is null or shorter than 16 bytes
     */
    public Builder hashSecret(byte[] secret) {
      Args.notNull("secret", secret);
      if (secret.length < 16) {
        throw new IllegalArgumentException(
            "secret must have at least 16 bytes, but had " + secret.length);
      }
      this.hashSecret = secret.clone();
      return this;
    }

    /**
     * Sets the policy applied while Redis does not answer (default {@link
     * FailurePolicy#LOCAL_FALLBACK}).
     *
     * @param failurePolicy the policy
     * @return this builder
     */
    public Builder failurePolicy(FailurePolicy failurePolicy) {
      this.failurePolicy = Args.notNull("failurePolicy", failurePolicy);
      return this;
    }

    /**
     * Sets the Lettuce resources (event loops) of the client the store creates; the store never
     * shuts them down. Ignored when the store is built on an existing client.
     *
     * @param clientResources the resources, for example the application's shared ones
     * @return this builder
     */
    public Builder clientResources(ClientResources clientResources) {
      this.clientResources = Args.notNull("clientResources", clientResources);
      return this;
    }

    /**
     * Sets whether the client the store creates on shared {@link #clientResources resources} traces
     * its commands with their Lettuce tracing (Spring Boot's, for example, observes every command
     * through Micrometer: a timer and a span each). Off by default: every decision is a command, those
     * observations take about half of the client's CPU per command, and the limiter measures its
     * decisions itself. A client the store creates on
     * resources of its own never traces.
     *
     * @param traceCommands whether to trace the store's commands with the shared resources' tracing
     * @return this builder
     */
    public Builder traceCommands(boolean traceCommands) {
      this.traceCommands = traceCommands;
      return this;
    }

    /**
     * Sets the TLS options (trusted certificates, the client's key and certificate, protocols,
     * cipher suites) of the client the store creates, for a URI with SSL on (scheme {@code
     * rediss}); without them, TLS trusts the JVM's default certificates and presents no client
     * certificate. The URI, not this setting, turns TLS on.
     *
     * @param sslOptions the options, for example {@code SslOptions.builder().trustManager(pemFile)}
     * @return this builder
     * @throws IllegalStateException if the store is built on an existing client, whose own options
     *     apply
     */
    public Builder sslOptions(SslOptions sslOptions) {
      Args.notNull("sslOptions", sslOptions);
      if (client != null || clusterClient != null) {
        throw new IllegalStateException("sslOptions apply to a client the store creates; set them"
            + " in the ClientOptions of the client given to the builder");
      }
      this.sslOptions = sslOptions;
      return this;
    }

    /**
     * Reads time from {@code ticker} instead of the Redis server's {@code TIME}; <strong>for tests
     * and special cases only</strong>.
     *
     * <p>Every store sharing the Redis keys must then read the same ticker, and the retry interval
     * runs on it too. Since ticker time need not follow the wall clock, keys then live at least an
     * hour of wall-clock time instead of expiring exactly when fresh.
     *
     * @param ticker the time source, in nanoseconds; readings must stay below 2^53 (about 104
     *     days) for exact arithmetic in Lua
     * @return this builder
     */
    public Builder ticker(Ticker ticker) {
      this.ticker = Args.notNull("ticker", ticker);
      return this;
    }

    /**
     * Reads the calendar of {@linkplain io.github.llmratelimiter.core.QuotaLimit quota} periods
     * from {@code wallClock} instead of the system clock; for tests, which drive it.
     *
     * <p>Periods are computed by each instance from its own wall clock, never from Redis's: the
     * instances sharing the Redis keys must have clocks that agree (NTP), or a call near a
     * period's boundary may count in the period next to it.
     *
     * @param wallClock the clock of quota periods
     * @return this builder
     * @throws IllegalArgumentException if the clock is null
     */
    public Builder wallClock(InstantSource wallClock) {
      this.wallClock = Args.notNull("wallClock", wallClock);
      return this;
    }

    /**
     * Builds the store and starts connecting; it never fails because Redis is down (the failure
     * policy answers until Redis does).
     *
     * @return the store
     * @throws IllegalArgumentException if {@link #sslOptions} were set but no URI has SSL on, or
     *     {@link #maxWait} is shorter than the command timeout
     */
    public RedisRateLimitStore build() {
      if (sslOptions != null && !usesTls()) {
        throw new IllegalArgumentException("sslOptions are set, but the uri does not use TLS: use"
            + " the scheme rediss:// or RedisURI.setSsl(true), but was " + (uri != null ? uri : seeds));
      }
      Duration maxWait = this.maxWait != null ? this.maxWait
          : DEFAULT_MAX_WAIT.compareTo(commandTimeout) >= 0 ? DEFAULT_MAX_WAIT : commandTimeout;
      if (maxWait.compareTo(commandTimeout) < 0) {
        throw new IllegalArgumentException("maxWait must be at least commandTimeout ("
            + commandTimeout + "), but was " + maxWait);
      }
      Duration connectTimeout =
          commandTimeout.compareTo(MIN_CONNECT_TIMEOUT) > 0 ? commandTimeout : MIN_CONNECT_TIMEOUT;
      RedisConnection connection = RedisConnection.open(uri, seeds, client, clusterClient,
          clientResources, traceCommands, sslOptions, commandTimeout, connectTimeout);
      ScheduledExecutorService timer = RedisHeartbeat.newTimer();
      Ticker clock = ticker != null ? ticker : Ticker.system();
      RedisBreaker.Settings breaker = new RedisBreaker.Settings(failureRateThreshold,
          slidingWindowSize, minimumNumberOfCalls, permittedCallsInHalfOpenState);
      FailurePolicy policy = failurePolicy;
      Duration retry = retryInterval;
      LongAdder errors = new LongAdder();
      RedisMasters masters = new RedisMasters(connection.link(),
          new Replies(commandTimeout.toNanos(), maxWait.toNanos(), connection.loop(), timer),
          master -> new RedisBreaker(master, breaker, retry, policy, clock, errors), errors);
      LuaRateLimitStore redis = new LuaRateLimitStore(connection.link(),
          new RedisKeys(keyPrefix, hashKeys, hashSecret), ticker, masters, slotLease, wallClock);
      GuardedRedisStore store = new GuardedRedisStore(redis, failurePolicy, retryInterval,
          heartbeatInterval, slotLease, clock, wallClock, timer);
      store.start(connectTimeout);
      return store;
    }

    private boolean usesTls() {
      if (uri != null) {
        return uri.isSsl() || uri.getSentinels().stream().anyMatch(RedisURI::isSsl);
      }
      return seeds != null && seeds.stream().anyMatch(RedisURI::isSsl);
    }

    private static void atLeastOne(String name, int value) {
      if (value < 1) {
        throw new IllegalArgumentException(name + " must be >= 1, but was " + value);
      }
    }

    private static Duration positive(String name, @Nullable Duration value) {
      Args.notNull(name, value);
      if (value.isNegative() || value.isZero()) {
        throw new IllegalArgumentException(name + " must be > 0, but was " + value);
      }
      return value;
    }
  }
}

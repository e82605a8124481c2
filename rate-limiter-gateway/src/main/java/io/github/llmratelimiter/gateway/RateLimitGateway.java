package io.github.llmratelimiter.gateway;

import io.github.llmratelimiter.core.ProviderReport;
import io.github.llmratelimiter.core.Reason;
import io.github.llmratelimiter.core.Upstream;
import io.github.llmratelimiter.gateway.internal.UsageScanner;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.function.Function;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;

/**
 * The one charge step every front door calls (a servlet filter or interceptor, an aspect, a reactive
 * filter, a gateway's rate-limiter hook). A front door only translates: it reads its request into
 * plain values (a credential, a model, the body) and writes back the headers and problems this class
 * returns as data. A request goes through these steps:
 *
 * <ol>
 *   <li><b>check</b> ({@link #check}): a body above {@code max-body} (413), a JSON body too large to
 *       read the model from on a route that reads it (413), completion caps or {@code n} that would
 *       make the estimate wrong (400) are rejected before anything is charged;
 *   <li><b>resolve the key</b> ({@link #apiKey}, {@link #resolveKey}): the caller's credential, or
 *       the anonymous key, or a 401 ({@link MissingApiKeyException});
 *   <li><b>charge</b> ({@link #charge}, or {@link #chargeAsync} without blocking): one atomic store
 *       call on every level of the policy, the model-token estimate reserved, the outcome recorded
 *       on the request's {@link RateLimitContext} (a request is charged once); a deny throws {@link
 *       RateLimitExceededException};
 *   <li><b>render</b>: {@link #headers} for an admitted call, {@link #reject} for every failure of
 *       the steps above (429, 401, 400, 413, 503 with their headers and problem body);
 *   <li><b>settle</b> ({@link #settle}, {@link #settleAsync}): the reserved model tokens and quota
 *       charges reconciled with the response's usage (its cost priced from the prompt, cached and
 *       completion tokens), refunded for a failed call, or kept as estimated;
 *   <li><b>report</b> ({@link #report(RateLimitContext, int, Function)}): for a call that went to
 *       an upstream, what the provider's rate-limit headers said ({@link ProviderHeaders}) is
 *       applied to the upstream's state for every instance; a provider's 429 closes the upstream
 *       until its retry time.
 * </ol>
 *
 * <p>Thread-safe; one instance serves every request.
 */
public final class RateLimitGateway {

  private final RateLimitEnforcer enforcer;
  private final JsonReader json;
  private final ModelTokenEstimator estimator;
  private final BodyLimits bodyLimits;
  private final MissingKey missingKey;
  private final String anonymousKey;
  private final RateLimitProblemFactory problems;
  private final ProviderHeaders providerHeaders;
  /**
   * Whether a call checked before its policy is known (an annotated handler's) may be estimated: its
   * body is then parsed whole at once, as the estimate reads it.
   */
  private final boolean mayEstimate;

  private RateLimitGateway(Builder b) {
    this.enforcer = b.enforcer;
    this.json = b.json;
    this.estimator = b.estimator;
    this.bodyLimits = b.bodyLimits;
    this.missingKey = b.missingKey;
    this.anonymousKey = b.anonymousKey;
    this.problems = b.problems;
    this.providerHeaders = b.providerHeaders;
    this.mayEstimate = b.enforcer.anyMayEstimate();
  }

  /**
   * Starts a gateway on an enforcer, with the properties' defaults for everything else.
   *
   * @param enforcer the enforcer that asks the store
   * @param json the parser of request and response bodies
   * @return the builder
   * @throws IllegalArgumentException if an argument is null
   */
  public static Builder builder(RateLimitEnforcer enforcer, JsonReader json) {
    return new Builder(enforcer, json);
  }

  /**
   * Rejects a request the limiter cannot charge correctly; a front door calls it before it reads
   * the credential and model, and {@link #charge} calls it again (it runs once per request). It
   * reads the body now if nothing has: a reactive front door hands the context a buffered body.
   * Its policy is not known yet (an annotated handler's): when some policy may estimate the call's
   * model tokens, the JSON body is parsed whole, once for the checks and the estimate alike.
   *
   * @param context the request's context
   * @throws RequestBodyTooLargeException if its body is above {@code max-body}, or is a JSON body
   *     above {@code max-body-peek} on a route that reads the model from the body
   * @throws InvalidRateLimitRequestException if its JSON body's completion caps or {@code n} are
   *     invalid ({@link CompletionFields})
   */
  public void check(RateLimitContext context) {
    check(context, mayEstimate);
  }

  /**
   * Checks a request before it is charged on a policy, like {@link #check(RateLimitContext)}; when
   * the policy may estimate the call's model tokens, its JSON body is parsed whole at once, for the
   * checks and the estimate alike (else only its members are read, without their nested values).
   *
   * @param context the request's context
   * @param policy the name of the policy the request is to be charged on, or {@code null} for the
   *     default policy
   * @throws RequestBodyTooLargeException as {@link #check(RateLimitContext)} does
   * @throws InvalidRateLimitRequestException as {@link #check(RateLimitContext)} does
   */
  public void check(RateLimitContext context, @Nullable String policy) {
    check(context, enforcer.mayEstimate(policy));
  }

  private void check(RateLimitContext context, boolean whole) {
    if (context.checked()) {
      return;
    }
    long declared = context.contentLength();
    RequestBody body = context.body();
    if (declared > bodyLimits.maxBody() || (declared < 0 && body != null && body.tooLong())) {
      throw new RequestBodyTooLargeException(BodyLimits.MAX_BODY, bodyLimits.maxBody());
    }
    if (bodyLimits.readBodies()) {
      boolean isJson = context.json();
      long length = declared >= 0 ? declared : context.bodyLength();
      if (isJson && length > bodyLimits.maxPeek() && context.modelSource().readsBody()) {
        throw new RequestBodyTooLargeException(BodyLimits.MAX_BODY_PEEK, bodyLimits.maxPeek());
      }
      byte[] bytes = isJson ? context.jsonBytes() : null;
      Map<String, Object> map = bytes == null ? null
          : whole ? context.parsed(bytes) : context.members(bytes);
      if (map != null) {
        CompletionFields.check(map);
      }
    }
    context.markChecked();
  }

  /**
   * Creates the context of a request, which the front door keeps with it until its model tokens are
   * settled.
   *
   * @param contentLength the length the request's {@code Content-Length} declares, or -1 when it
   *     declares none
   * @param contentType the request's content type, or {@code null}
   * @return a new context
   */
  public RateLimitContext context(long contentLength, @Nullable String contentType) {
    return new RateLimitContext(contentLength, contentType, json, bodyLimits);
  }

  /**
   * Estimates the model tokens of a request for the tokens-per-window budgets: from its JSON body,
   * else from its length alone (also when the body is not a JSON object: the handler reports that).
   *
   * @param context the request's context
   * @return the estimate
   * @throws InvalidRateLimitRequestException if the estimator rejects the body
   */
  public long estimateModelTokens(RateLimitContext context) {
    try {
      byte[] bytes = context.jsonBytes();
      if (bytes == null) {
        long declared = context.contentLength();
        return estimator.estimateUnread(declared >= 0 ? declared : context.bodyLength());
      }
      Map<String, Object> map = context.parsed(bytes);
      return map == null ? estimator.estimateUnread(bytes.length) : estimator.estimate(map);
    } catch (IllegalArgumentException e) {
      throw e instanceof InvalidRateLimitRequestException i ? i
          : new InvalidRateLimitRequestException("the request's model tokens cannot be estimated: "
              + e.getMessage(), e);
    }
  }

  /**
   * Returns the API key a request is charged to: its credential, else the anonymous key when
   * missing keys are anonymous.
   *
   * @param credential the API key the request carries, or {@code null} (or blank) when none
   * @return the API key
   * @throws MissingApiKeyException if the request carries none and missing keys are rejected
   * @throws InvalidRateLimitRequestException if it starts with another source's prefix ({@code
   *     principal:}, {@code ip:})
   */
  public String apiKey(@Nullable String credential) {
    return callerKey(KeySource.API_KEY, credential);
  }

  /**
   * Returns the key a request is charged to when its caller is found by a source: the value found,
   * with the source's prefix ({@link KeySource#prefix()}); when the source finds nothing (null or
   * blank), the anonymous key if missing keys are anonymous, else a rejection. A rejection never
   * names the source's expression or any internal name.
   *
   * @param source where the value was found
   * @param value the value the source found, or {@code null} (or blank) when it found none
   * @return the key
   * @throws IllegalArgumentException if {@code source} is null
   * @throws MissingApiKeyException if it found none and missing keys are rejected, for a source
   *     that authenticates (the API key, the principal): a 401
   * @throws InvalidRateLimitRequestException if it found none and missing keys are rejected, for
   *     another source (the client address, an expression): a 400; or if an API key starts with
   *     another source's prefix (it would share that caller's budget): a 400
   */
  public String callerKey(KeySource source, @Nullable String value) {
    if (source == null) {
      throw new IllegalArgumentException("source must not be null");
    }
    if (value != null && !value.isBlank()) {
      if (source == KeySource.API_KEY && KeySource.prefixed(value)) {
        throw new InvalidRateLimitRequestException("The request's API key must not start with '"
            + KeySource.PRINCIPAL.prefix() + "' or '" + KeySource.CLIENT_IP.prefix() + "'.", null);
      }
      return source.prefix().isEmpty() ? value : source.prefix() + value;
    }
    if (missingKey == MissingKey.ANONYMOUS) {
      return anonymousKey;
    }
    if (source == KeySource.API_KEY || source == KeySource.PRINCIPAL) {
      throw new MissingApiKeyException(source);
    }
    throw new InvalidRateLimitRequestException(
        "The request does not carry what this endpoint's rate limit is counted by.", null);
  }

  /**
   * Returns the key a request is charged to ({@link #apiKey}) with the model it names.
   *
   * @param credential the API key the request carries, or {@code null} (or blank) when none
   * @param model the model the request names, or {@code null} (or blank) when none
   * @return the key
   * @throws MissingApiKeyException if the request carries no key and missing keys are rejected
   */
  public RateLimitKey resolveKey(@Nullable String credential, @Nullable String model) {
    return RateLimitKey.of(apiKey(credential), model);
  }

  /**
   * Charges one call: checks the request, decides on every level of the policy in one store call
   * (reserving the request's model-token estimate where a level limits model tokens) and records
   * the outcome on the context. A request already charged is not charged again: its recorded
   * outcome is returned as it is.
   *
   * @param context the request's context, or {@code null} for a call outside HTTP (nothing is
   *     checked or recorded, and the model-token estimate is 0)
   * @param policy the policy, or {@code null} or blank for the default policy
   * @param key the caller
   * @param cost the call's cost in bucket tokens, a finite number above 0 (the window counts 1)
   * @return the allowed outcome (or a degraded one, when the store failed and failures allow)
   * @throws RateLimitExceededException if the call is denied (the outcome is recorded first)
   * @throws RequestBodyTooLargeException if the check rejects the body's size
   * @throws InvalidRateLimitRequestException if the check rejects the body, or the policy, cost or
   *     estimate is invalid
   * @throws RateLimitStoreUnavailableException if the store fails and failures deny
   */
  public RateLimitOutcome charge(
      @Nullable RateLimitContext context, @Nullable String policy, RateLimitKey key, double cost) {
    if (context != null) {
      RateLimitOutcome charged = context.outcome();
      if (charged != null) {
        return charged;
      }
      check(context, policy);
    }
    return recorded(context, enforcer.acquire(policy, key, cost, estimate(context)));
  }

  /**
   * Charges one call like {@link #charge} without blocking the caller on the store: through the
   * store's asynchronous API. The check and the estimate run on the calling thread and read only the
   * body the context holds (a reactive front door hands it a buffered one).
   *
   * @param context the request's context, or {@code null} for a call outside HTTP
   * @param policy the policy, or {@code null} or blank for the default policy
   * @param key the caller
   * @param cost the call's cost in bucket tokens, a finite number above 0
   * @return a stage that completes with the allowed (or degraded) outcome, or fails with an
   *     exception {@code charge} would throw, never wrapped in a {@link CompletionException}; this
   *     method itself never throws. Cancelling it while the store decides gives up the call: an
   *     admitted outcome is then recorded, its slots released and its model tokens refunded; a
   *     call waiting for its upstream leaves the wait at once
   */
  public CompletionStage<RateLimitOutcome> chargeAsync(
      @Nullable RateLimitContext context, @Nullable String policy, RateLimitKey key, double cost) {
    CompletableFuture<RateLimitOutcome> result = new CompletableFuture<>();
    try {
      if (context != null) {
        RateLimitOutcome charged = context.outcome();
        if (charged != null) {
          result.complete(charged);
          return result;
        }
        check(context, policy);
      }
    } catch (RuntimeException e) {
      result.completeExceptionally(e);
      return result;
    }
    CompletionStage<RateLimitOutcome> decided = enforcer.acquireAsync(policy, key, cost,
        estimate(context));
    result.whenComplete((ignored, failure) -> { // a caller gone takes a waiting call out at once
      if (result.isCancelled()) {
        RateLimitEnforcer.leave(decided);
      }
    });
    decided.whenComplete((outcome, failure) -> {
      if (failure != null) {
        result.completeExceptionally(RateLimitEnforcer.unwrap(failure));
        return;
      }
      RateLimitOutcome admitted;
      try {
        admitted = recorded(context, outcome);
      } catch (RuntimeException | Error e) { // in a callback: nothing else would complete the result
        result.completeExceptionally(e);
        return;
      }
      if (!result.complete(admitted)) {
        abandon(context, admitted); // cancelled while pending: nobody proceeds with the call
      }
    });
    return result;
  }

  /** Ends an admitted call nobody proceeds with: its slots released, its model tokens refunded. */
  private void abandon(@Nullable RateLimitContext context, RateLimitOutcome outcome) {
    if (context != null) {
      finishUsageAsync(context, null, true);
      return;
    }
    outcome.abandon();
  }

  private LongSupplier estimate(@Nullable RateLimitContext context) {
    return context == null ? () -> 0 : () -> estimateModelTokens(context);
  }

  private static RateLimitOutcome recorded(@Nullable RateLimitContext context, RateLimitOutcome outcome) {
    if (context != null) {
      context.charged(outcome);
    }
    if (outcome.decision().denied()) {
      throw new RateLimitExceededException(outcome);
    }
    return outcome;
  }

  /**
   * Charges model tokens used outside a request, after the fact (a batch job's, a tool call's):
   * they fill the caller's model-token windows on the policy without a request slot ({@link
   * RateLimitEnforcer#chargeModelTokens}).
   *
   * @param policy the policy, or {@code null} or blank for the default policy
   * @param key the caller
   * @param modelTokens the model tokens used, at least 0
   * @throws InvalidRateLimitRequestException if the policy is unknown or the tokens are negative
   */
  public void chargeModelTokens(@Nullable String policy, RateLimitKey key, long modelTokens) {
    enforcer.chargeModelTokens(policy, key, modelTokens);
  }

  /**
   * Charges model tokens used outside a request like {@link #chargeModelTokens} without blocking
   * the caller on the store.
   *
   * @param policy the policy, or {@code null} or blank for the default policy
   * @param key the caller
   * @param modelTokens the model tokens used, at least 0
   * @return a stage that completes once charged (or the charge was lost, and logged); never fails
   * @throws InvalidRateLimitRequestException if the policy is unknown or the tokens are negative
   */
  public CompletionStage<Void> chargeModelTokensAsync(
      @Nullable String policy, RateLimitKey key, long modelTokens) {
    return enforcer.chargeModelTokensAsync(policy, key, modelTokens);
  }

  /**
   * Returns the rate-limit headers of an outcome ({@link RateLimitHeaders}): an admitted call's go
   * on its response.
   *
   * @param outcome the outcome
   * @return the headers; none for a degraded outcome
   */
  public List<ResponseHeader> headers(RateLimitOutcome outcome) {
    return RateLimitHeaders.of(outcome);
  }

  /**
   * Returns the response that answers a failure of the steps above, as data:
   *
   * <ul>
   *   <li>{@link RateLimitExceededException}: 429 with the outcome's rate-limit headers ({@code
   *       Retry-After} and {@code retry-after-ms} when retryable; the headers describe the caller's
   *       policy even when the call's upstream denied it, whose problem is {@link
   *       RateLimitProblemFactory#upstreamLimited}); a deny whose reason is {@link
   *       Reason#STORE_UNAVAILABLE} (a store whose backend is down, failing closed) is not a rate
   *       limit and becomes the 503 below, with the store's retry time;
   *   <li>{@link MissingApiKeyException}: 401, with {@code WWW-Authenticate: Bearer} when the
   *       request lacks an API key (a route keyed on the principal answers without a challenge:
   *       the application's authentication owns its scheme);
   *   <li>{@link InvalidRateLimitRequestException}: 400;
   *   <li>{@link RequestBodyTooLargeException}: 413;
   *   <li>{@link RateLimitStoreUnavailableException}: 503, with {@code Retry-After} and {@code
   *       retry-after-ms} when the retry time is known.
   * </ul>
   *
   * @param failure the failure; a {@link CompletionException} or {@link ExecutionException} is
   *     looked through
   * @param path the request's path (the problem's instance), or {@code null}
   * @return the response, or {@code null} when the failure is not the limiter's
   */
  public @Nullable RateLimitRejection reject(Throwable failure, @Nullable String path) {
    Throwable t = RateLimitEnforcer.unwrap(failure);
    if (t instanceof RateLimitExceededException e) {
      if (e.decision().reason() == Reason.STORE_UNAVAILABLE) {
        return unavailable(new RateLimitStoreUnavailableException(
            e.outcome().policy().name(), Math.max(1, e.decision().retryAfterMs())), path);
      }
      return new RateLimitRejection(e.outcome().upstreamDenied()
          ? problems.upstreamLimited(e.outcome(), path)
          : problems.rateLimited(e.outcome(), path), headers(e.outcome()));
    }
    if (t instanceof MissingApiKeyException e) {
      return e.source() == KeySource.PRINCIPAL
          ? new RateLimitRejection(problems.missingPrincipal(path), List.of())
          : new RateLimitRejection(problems.missingApiKey(path),
              List.of(new ResponseHeader("WWW-Authenticate", "Bearer")));
    }
    if (t instanceof InvalidRateLimitRequestException e) {
      return new RateLimitRejection(problems.invalidRequest(e, path), List.of());
    }
    if (t instanceof RequestBodyTooLargeException e) {
      return new RateLimitRejection(problems.bodyTooLarge(e, path), List.of());
    }
    if (t instanceof RateLimitStoreUnavailableException e) {
      return unavailable(e, path);
    }
    return null;
  }

  private RateLimitRejection unavailable(RateLimitStoreUnavailableException e, @Nullable String path) {
    List<ResponseHeader> headers = new ArrayList<>(2);
    if (e.retryAfterMs() > 0) {
      headers.addAll(RateLimitHeaders.retryAfter(e.retryAfterMs()));
    }
    return new RateLimitRejection(problems.storeUnavailable(e, path), headers);
  }

  /**
   * Settles the model tokens a request reserved, from what its response showed ({@link
   * ModelTokenReservation#settle}); nothing when it reserved none or they were settled already.
   *
   * @param context the request's context
   * @param usage the model tokens the response reported, or {@code null} when it reported none
   * @param failed whether the call failed (an error before the response, or an error status)
   * @return whether this call settled the reservation
   * @throws IllegalArgumentException if the usage is negative
   */
  public boolean settle(RateLimitContext context, @Nullable Long usage, boolean failed) {
    return settleUsage(context, usage == null ? null : ModelUsage.ofTotal(usage), failed);
  }

  /**
   * Settles the model tokens and quotas a request reserved, from the itemized usage its response
   * showed ({@link ModelTokenReservation#settleUsage}: the cost priced from the
   * prompt, cached and completion tokens); nothing when it reserved none or they were settled
   * already.
   *
   * @param context the request's context
   * @param usage the usage the response reported, or {@code null} when it reported none
   * @param failed whether the call failed (an error before the response, or an error status)
   * @return whether this call settled the reservation
   */
  public boolean settleUsage(RateLimitContext context, @Nullable ModelUsage usage, boolean failed) {
    ModelTokenReservation reservation = context.modelTokens();
    return reservation != null && !reservation.settled() && reservation.settleUsage(usage, failed);
  }

  /**
   * Settles the model tokens a request reserved like {@link #settle} without blocking the caller.
   *
   * @param context the request's context
   * @param usage the model tokens the response reported, or {@code null} when it reported none
   * @param failed whether the call failed
   * @return a stage that completes with whether this call settled the reservation; it never fails
   * @throws IllegalArgumentException if the usage is negative
   */
  public CompletionStage<Boolean> settleAsync(
      RateLimitContext context, @Nullable Long usage, boolean failed) {
    return settleUsageAsync(context, usage == null ? null : ModelUsage.ofTotal(usage), failed);
  }

  /**
   * Settles the model tokens and quotas a request reserved like {@link #settleUsage} without blocking the caller.
   *
   * @param context the request's context
   * @param usage the usage the response reported, or {@code null} when it reported none
   * @param failed whether the call failed
   * @return a stage that completes with whether this call settled the reservation; it never fails
   */
  public CompletionStage<Boolean> settleUsageAsync(
      RateLimitContext context, @Nullable ModelUsage usage, boolean failed) {
    ModelTokenReservation reservation = context.modelTokens();
    return reservation == null || reservation.settled()
        ? CompletableFuture.completedFuture(false) : reservation.settleUsageAsync(usage, failed);
  }

  /**
   * Ends a request's call once its response is over, however it ended (completed, its stream
   * ended, its client disconnected, its handler failed): settles its model tokens like {@link
   * #settle} and releases the slots it holds on limits on calls in flight ({@link CallSlots}),
   * each exactly once however many times this is called.
   *
   * @param context the request's context
   * @param usage the model tokens the response reported, or {@code null} when it reported none
   * @param failed whether the call failed (an error before the response, or an error status)
   * @throws IllegalArgumentException if the usage is negative
   */
  public void finish(RateLimitContext context, @Nullable Long usage, boolean failed) {
    finishUsage(context, usage == null ? null : ModelUsage.ofTotal(usage), failed);
  }

  /**
   * Ends a request's call like {@link #finish(RateLimitContext, Long, boolean)}, settling it from
   * the itemized usage its response showed.
   *
   * @param context the request's context
   * @param usage the usage the response reported, or {@code null} when it reported none
   * @param failed whether the call failed (an error before the response, or an error status)
   */
  public void finishUsage(RateLimitContext context, @Nullable ModelUsage usage, boolean failed) {
    CallSlots slots = context.slots();
    try {
      settleUsage(context, usage, failed);
    } finally {
      if (slots != null) {
        slots.release();
      }
    }
  }

  /**
   * Ends a request's call like {@link #finish} without blocking the caller.
   *
   * @param context the request's context
   * @param usage the model tokens the response reported, or {@code null} when it reported none
   * @param failed whether the call failed
   * @return a stage that completes once both are done; it never fails
   * @throws IllegalArgumentException if the usage is negative
   */
  public CompletionStage<Void> finishAsync(
      RateLimitContext context, @Nullable Long usage, boolean failed) {
    return finishUsageAsync(context, usage == null ? null : ModelUsage.ofTotal(usage), failed);
  }

  /**
   * Ends a request's call like {@link #finishUsage} without
   * blocking the caller.
   *
   * @param context the request's context
   * @param usage the usage the response reported, or {@code null} when it reported none
   * @param failed whether the call failed
   * @return a stage that completes once both are done; it never fails
   */
  public CompletionStage<Void> finishUsageAsync(
      RateLimitContext context, @Nullable ModelUsage usage, boolean failed) {
    CallSlots slots = context.slots();
    CompletionStage<Boolean> released =
        slots == null ? CompletableFuture.completedFuture(false) : slots.releaseAsync();
    return settleUsageAsync(context, usage, failed).thenCombine(released, (a, b) -> null);
  }

  /**
   * Reads the provider's rate-limit headers from the response of a request that went to an
   * upstream, and applies them to the upstream's state ({@link RateLimitEnforcer#report}), once
   * per request; nothing for a request that was not admitted to an upstream. The values the
   * limiter itself wrote on the response (its own {@code x-ratelimit-*} and {@code Retry-After}
   * headers of the caller's policy) are left out, so that a front door may pass the headers of the
   * response it sends, where the application copied the provider's.
   *
   * @param context the request's context
   * @param status the status of the provider's response (429: the provider refused the call)
   * @param headers every value of a response header by its lower-case name, null or empty when
   *     absent
   * @return whether a report was made (the request went to an upstream and was not reported yet)
   */
  public boolean report(RateLimitContext context, int status,
      Function<String, @Nullable List<String>> headers) {
    RateLimitOutcome outcome = context.outcome();
    return context.claimReport() != null && outcome != null && report(outcome, status, headers);
  }

  /**
   * Reads the provider's rate-limit headers from the response to an admitted call and applies them
   * to its upstream, like {@link #report(RateLimitContext, int, Function)}, for a front door that
   * keeps the outcome rather than a context (it reports each call once); nothing for an outcome
   * that was denied, degraded or went to no upstream.
   *
   * @param outcome the call's outcome
   * @param status the status of the provider's response (429: the provider refused the call)
   * @param headers every value of a response header by its lower-case name
   * @return whether a report was made
   */
  public boolean report(RateLimitOutcome outcome, int status,
      Function<String, @Nullable List<String>> headers) {
    Upstream upstream = reportable(outcome);
    if (upstream == null) {
      return false;
    }
    enforcer.report(upstream, providerReport(outcome, status, headers), status);
    return true;
  }

  /**
   * Reports a response like {@link #report(RateLimitOutcome, int, Function)} without blocking the
   * caller on the store.
   *
   * @param outcome the call's outcome
   * @param status the status of the provider's response
   * @param headers every value of a response header by its lower-case name
   * @return a stage that completes once the report is applied (or lost, and logged), with whether a
   *     report was made; it never fails
   */
  public CompletionStage<Boolean> reportAsync(RateLimitOutcome outcome, int status,
      Function<String, @Nullable List<String>> headers) {
    Upstream upstream = reportable(outcome);
    if (upstream == null) {
      return CompletableFuture.completedFuture(false);
    }
    return enforcer.reportAsync(upstream, providerReport(outcome, status, headers), status)
        .thenApply(ignored -> true);
  }

  /** The upstream of an admitted call, or null. */
  private static @Nullable Upstream reportable(RateLimitOutcome outcome) {
    return outcome == null || outcome.decision().denied() || outcome.degraded() ? null
        : outcome.upstream();
  }

  /**
   * Reports a response like {@link #report(RateLimitContext, int, Function)} without blocking the
   * caller on the store.
   *
   * @param context the request's context
   * @param status the status of the provider's response
   * @param headers every value of a response header by its lower-case name
   * @return a stage that completes once the report is applied (or lost, and logged), with whether a
   *     report was made; it never fails
   */
  public CompletionStage<Boolean> reportAsync(RateLimitContext context, int status,
      Function<String, @Nullable List<String>> headers) {
    RateLimitOutcome outcome = context.outcome();
    return context.claimReport() == null || outcome == null
        ? CompletableFuture.completedFuture(false) : reportAsync(outcome, status, headers);
  }

  /**
   * Reports a provider's response to a call on a named upstream: the hook for code that calls the
   * provider itself (a {@code @RateLimited} method, a client), with the headers of the provider's
   * response as they came.
   *
   * @param upstream the name of a configured upstream ({@code ratelimiter.upstreams.<name>})
   * @param status the status of the provider's response (429: the provider refused the call)
   * @param headers every value of a response header by its lower-case name, null or empty when
   *     absent
   * @throws IllegalArgumentException if no upstream has that name, or an argument is null
   */
  public void report(String upstream, int status, Function<String, @Nullable List<String>> headers) {
    if (headers == null) {
      throw new IllegalArgumentException("headers must not be null");
    }
    enforcer.report(named(upstream), providerHeaders.parse(status, headers), status);
  }

  /**
   * Reports a provider's response to a call on a named upstream like {@link #report(String, int,
   * Function)} without blocking the caller on the store.
   *
   * @param upstream the name of a configured upstream
   * @param status the status of the provider's response
   * @param headers every value of a response header by its lower-case name
   * @return a stage that completes once the report is applied or lost (logged); it never fails
   * @throws IllegalArgumentException if no upstream has that name, or an argument is null
   */
  public CompletionStage<Void> reportAsync(String upstream, int status,
      Function<String, @Nullable List<String>> headers) {
    if (headers == null) {
      throw new IllegalArgumentException("headers must not be null");
    }
    return enforcer.reportAsync(named(upstream), providerHeaders.parse(status, headers), status);
  }

  private Upstream named(String upstream) {
    return enforcer.upstreamRoutes().upstream(upstream).orElseThrow(() ->
        new IllegalArgumentException("upstream must be one of "
            + enforcer.upstreamRoutes().upstreams().keySet() + ", but was '" + upstream + "'"));
  }

  /** The provider's report from a response's headers, without the values the limiter wrote. */
  private ProviderReport providerReport(RateLimitOutcome outcome, int status,
      Function<String, @Nullable List<String>> headers) {
    Map<String, List<String>> ours = new java.util.HashMap<>();
    for (ResponseHeader h : headers(outcome)) {
      ours.computeIfAbsent(h.name().toLowerCase(Locale.ROOT), n -> new ArrayList<>()).add(h.value());
    }
    return providerHeaders.parse(status, name -> {
      List<String> values = headers.apply(name);
      List<String> own = ours.get(name);
      if (values == null || values.isEmpty() || own == null) {
        return values;
      }
      List<String> theirs = new ArrayList<>(values);
      for (String v : own) {
        theirs.remove(v);
      }
      return theirs;
    });
  }

  /**
   * Returns a scanner that finds the usage in a response's body as it is written.
   *
   * @return a new scanner, for one response
   */
  public UsageScanner usageScanner() {
    return new UsageScanner(json);
  }

  /**
   * Returns the enforcer this gateway charges through.
   *
   * @return the enforcer
   */
  public RateLimitEnforcer enforcer() {
    return enforcer;
  }

  /**
   * Returns how much of a body this gateway accepts and reads.
   *
   * @return the limits
   */
  public BodyLimits bodyLimits() {
    return bodyLimits;
  }

  /**
   * Returns the parser of request and response bodies.
   *
   * @return the parser
   */
  public JsonReader json() {
    return json;
  }

  /** Builds a {@link RateLimitGateway}; every setting but the enforcer and parser has a default. */
  public static final class Builder {

    private final RateLimitEnforcer enforcer;
    private final JsonReader json;
    private ModelTokenEstimator estimator = ModelTokenEstimator.defaults();
    private BodyLimits bodyLimits = BodyLimits.defaults();
    private MissingKey missingKey = MissingKey.REJECT;
    private String anonymousKey = "anonymous";
    private RateLimitProblemFactory problems =
        new DefaultRateLimitProblemFactory(DefaultRateLimitProblemFactory.RATE_LIMITED_TYPE);
    private ProviderHeaders providerHeaders = ProviderHeaders.system();

    private Builder(RateLimitEnforcer enforcer, JsonReader json) {
      if (enforcer == null || json == null) {
        throw new IllegalArgumentException("enforcer and json must not be null");
      }
      this.enforcer = enforcer;
      this.json = json;
    }

    /**
     * Sets the estimator of model tokens; the default is {@link ModelTokenEstimator#defaults()}.
     *
     * @param modelTokenEstimator the estimator
     * @return this builder
     * @throws IllegalArgumentException if it is null
     */
    public Builder estimator(ModelTokenEstimator modelTokenEstimator) {
      this.estimator = notNull("estimator", modelTokenEstimator);
      return this;
    }

    /**
     * Sets how much of a body is accepted and read; the default is {@link BodyLimits#defaults()}.
     *
     * @param limits the limits
     * @return this builder
     * @throws IllegalArgumentException if they are null
     */
    public Builder bodyLimits(BodyLimits limits) {
      this.bodyLimits = notNull("bodyLimits", limits);
      return this;
    }

    /**
     * Sets what a request without an API key gets, and the key such requests share when they are
     * let through; the default rejects them.
     *
     * @param missing what a keyless request gets
     * @param anonymous the key keyless requests share under {@link MissingKey#ANONYMOUS}, not blank
     * @return this builder
     * @throws IllegalArgumentException if {@code missing} is null or {@code anonymous} is blank
     */
    public Builder missingKey(MissingKey missing, String anonymous) {
      if (anonymous == null || anonymous.isBlank()) {
        throw new IllegalArgumentException("anonymous must not be blank, but was '" + anonymous + "'");
      }
      this.missingKey = notNull("missing", missing);
      this.anonymousKey = anonymous;
      return this;
    }

    /**
     * Sets the factory of problem bodies; the default is a {@link DefaultRateLimitProblemFactory}
     * with {@link DefaultRateLimitProblemFactory#RATE_LIMITED_TYPE}.
     *
     * @param factory the factory
     * @return this builder
     * @throws IllegalArgumentException if it is null
     */
    public Builder problems(RateLimitProblemFactory factory) {
      this.problems = notNull("problems", factory);
      return this;
    }

    /**
     * Sets the parser of providers' rate-limit headers; the default is {@link
     * ProviderHeaders#system()}.
     *
     * @param parser the parser
     * @return this builder
     * @throws IllegalArgumentException if it is null
     */
    public Builder providerHeaders(ProviderHeaders parser) {
      this.providerHeaders = notNull("providerHeaders", parser);
      return this;
    }

    /**
     * Builds the gateway.
     *
     * @return the gateway
     */
    public RateLimitGateway build() {
      return new RateLimitGateway(this);
    }

    private static <T> T notNull(String name, @Nullable T value) {
      if (value == null) {
        throw new IllegalArgumentException(name + " must not be null");
      }
      return value;
    }
  }
}

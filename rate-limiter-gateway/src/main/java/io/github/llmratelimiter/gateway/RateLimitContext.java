package io.github.llmratelimiter.gateway;

import io.github.llmratelimiter.core.Upstream;
import io.github.llmratelimiter.gateway.internal.BodyModel;
import io.github.llmratelimiter.gateway.internal.HttpFields;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;
import org.jspecify.annotations.Nullable;

/**
 * Everything the limiter knows about one request, from the moment a front door first sees it until
 * its model tokens are settled: what the request declares (its length and content type), its body as
 * the limiter may read it, the route that matched (where its model is read), whether it is to be
 * charged, and once charged the outcome and its model-token reservation.
 *
 * <p>A front door creates one per request ({@link RateLimitGateway#context}) and keeps it with the
 * request (a servlet adapter in one request attribute, a reactive one in the exchange), so that every
 * part of it (a body filter, the route check, an annotated method, the usage filter) sees the same
 * state. The body is read as the gateway that created the context says ({@link BodyLimits}). A request is charged once
 * ({@link #charged()}), whichever part charges it first. Its state is safe to read from another
 * thread; the parts of one request update it one at a time.
 */
public final class RateLimitContext {

  /** The cached parse of a body that is not a JSON object. */
  private static final Object NOT_AN_OBJECT = new Object();

  private final long contentLength;
  private final @Nullable String contentType;
  private final JsonReader json;
  private final BodyLimits limits;
  private volatile @Nullable RequestBody body;
  private volatile @Nullable ModelSource modelSource;
  private volatile @Nullable String routeCaller;
  private volatile boolean limited;
  private volatile boolean checked;
  /** The parsed JSON body: a map, {@link #NOT_AN_OBJECT}, or null until parsed. */
  private volatile @Nullable Object parsedBody;
  /**
   * The JSON body's members without their nested values ({@link JsonReader#parseMembers}): a map,
   * {@link #NOT_AN_OBJECT}, or null until read.
   */
  private volatile @Nullable Object parsedMembers;
  private volatile @Nullable RateLimitOutcome outcome;
  /** 1 once the provider's response was read; a field, so that no request allocates for it. */
  private volatile int reported;
  private static final AtomicIntegerFieldUpdater<RateLimitContext> REPORTED =
      AtomicIntegerFieldUpdater.newUpdater(RateLimitContext.class, "reported");

  RateLimitContext(
      long contentLength, @Nullable String contentType, JsonReader json, BodyLimits limits) {
    this.contentLength = contentLength < 0 ? -1 : contentLength;
    this.contentType = contentType;
    this.json = json;
    this.limits = limits;
  }

  /**
   * Returns the body length the request declares.
   *
   * @return the length, or -1 when it declares none (a chunked body, or no body)
   */
  public long contentLength() {
    return contentLength;
  }

  /**
   * Returns the request's content type.
   *
   * @return the content type, or {@code null}
   */
  public @Nullable String contentType() {
    return contentType;
  }

  /**
   * Returns whether the request's content type is JSON ({@link HttpFields#isJson}).
   *
   * @return whether it is a JSON type
   */
  public boolean json() {
    return HttpFields.isJson(contentType);
  }

  /**
   * Returns the request's body as the front door buffered it.
   *
   * @return the body, or {@code null} when the front door does not let the limiter read it
   */
  public @Nullable RequestBody body() {
    return body;
  }

  /**
   * Hands the limiter the request's body, before it is charged.
   *
   * @param requestBody the body
   */
  public void body(RequestBody requestBody) {
    this.body = requestBody;
    this.parsedBody = null;
    this.parsedMembers = null;
  }

  /**
   * Returns where the request's model is read: the source of the route that matched it, else the
   * default ({@link BodyLimits#defaultModelSource()}).
   *
   * @return the source
   */
  public ModelSource modelSource() {
    ModelSource source = modelSource;
    return source != null ? source : limits.defaultModelSource();
  }

  /**
   * Records where the route that matched the request reads its model.
   *
   * @param source the route's source
   */
  public void modelSource(ModelSource source) {
    this.modelSource = source;
  }

  /**
   * Returns the caller the route that matched the request found by its own key source (the
   * principal, the client address, an expression), which an annotated handler without a key of its
   * own is charged to.
   *
   * @return the caller's key, or {@code null} when the route is keyed on the API key, or none
   *     matched
   */
  public @Nullable String routeCaller() {
    return routeCaller;
  }

  /**
   * Records the caller the route that matched the request found by its key source.
   *
   * @param caller the caller's key, as {@link RateLimitGateway#callerKey} returned it
   */
  public void routeCaller(String caller) {
    this.routeCaller = caller;
  }

  /**
   * Returns whether the request is one the limiter will charge (a route matched it, or its handler
   * is annotated): its body is then kept even when the handler reads it first.
   *
   * @return whether it was marked
   */
  public boolean limited() {
    return limited;
  }

  /** Marks the request as one the limiter will charge. */
  public void markLimited() {
    this.limited = true;
  }

  /**
   * Returns whether the request was charged (by a route or an annotated method).
   *
   * @return whether an outcome was recorded
   */
  public boolean charged() {
    return outcome != null;
  }

  /**
   * Returns the outcome the request was charged with.
   *
   * @return the outcome, or {@code null} when it was not charged
   */
  public @Nullable RateLimitOutcome outcome() {
    return outcome;
  }

  /**
   * Returns the upstream of an admitted call whose provider's response is still to be read, and
   * marks it read: the upstream once, then {@code null}.
   *
   * @return the upstream, or {@code null} when the call was not admitted to an upstream or its
   *     response was read already
   */
  @Nullable Upstream claimReport() {
    RateLimitOutcome o = outcome;
    if (o == null || o.upstream() == null || o.decision().denied() || o.degraded()
        || !REPORTED.compareAndSet(this, 0, 1)) {
      return null;
    }
    return o.upstream();
  }

  /**
   * Returns whether the request was admitted to an upstream whose response is still to be read.
   *
   * @return whether a front door should report the response's provider headers
   */
  public boolean reports() {
    RateLimitOutcome o = outcome;
    return o != null && o.upstream() != null && o.decision().allowed() && reported == 0;
  }

  /**
   * Returns the model tokens the request reserved, to be settled with its usage.
   *
   * @return the reservation, or {@code null} when it was not charged or reserved none
   */
  public @Nullable ModelTokenReservation modelTokens() {
    RateLimitOutcome o = outcome;
    return o == null ? null : o.modelTokens();
  }

  /**
   * Returns the slots the request holds on limits on calls in flight, to be released when its
   * response is over.
   *
   * @return the slots, or {@code null} when it was not charged or took none
   */
  public @Nullable CallSlots slots() {
    RateLimitOutcome o = outcome;
    return o == null ? null : o.slots();
  }

  /**
   * Returns whether the request's call is still open: it reserved model tokens not yet settled or
   * holds slots not yet released ({@link RateLimitGateway#finish} closes it).
   *
   * @return whether something remains to settle or release
   */
  public boolean open() {
    RateLimitOutcome o = outcome;
    if (o == null) {
      return false;
    }
    ModelTokenReservation tokens = o.modelTokens();
    CallSlots slots = o.slots();
    return (tokens != null && !tokens.settled()) || (slots != null && !slots.released());
  }

  /** Records the outcome the request was charged with. */
  void charged(RateLimitOutcome charged) {
    this.outcome = charged;
  }

  /** Whether the request passed the checks before its charge. */
  boolean checked() {
    return checked;
  }

  void markChecked() {
    this.checked = true;
  }

  /**
   * Returns the request's JSON body, parsed once however many ask.
   *
   * @return the body's object, an empty map for an empty body, or {@code null} when the body is not
   *     JSON, was not read, is longer than {@code max-body-peek} or is not a JSON object
   */
  public @Nullable Map<String, Object> jsonBody() {
    byte[] bytes = jsonBytes();
    return bytes == null ? null : parsed(bytes);
  }

  /**
   * Returns what the request's JSON body says about the model: its top-level {@code "model"}
   * string. A {@code null} model counts as absent; a body that is not a JSON object names no model
   * but may carry one, so it lets no other source stand in.
   *
   * @return what the body says; {@link BodyModel#NONE} for a body that is not JSON, is empty or was
   *     not read
   * @throws InvalidRateLimitRequestException if the body's {@code "model"} is not a string
   */
  public BodyModel jsonBodyModel() {
    byte[] bytes = jsonBytes();
    if (bytes == null || bytes.length == 0) {
      return BodyModel.NONE;
    }
    Map<String, Object> map = members(bytes);
    if (map == null) {
      return new BodyModel(true, null); // not a JSON object: the handler rejects it
    }
    Object model = map.get(HttpFields.MODEL);
    if (model == null) {
      return BodyModel.NONE;
    }
    if (!(model instanceof String s)) {
      throw new InvalidRateLimitRequestException("the body's \"model\" must be a string, but was a "
          + (model instanceof Map ? "JSON object" : model instanceof List ? "JSON array" : "JSON "
              + (model instanceof Boolean ? "boolean" : "number")), null);
    }
    return new BodyModel(true, s.isBlank() ? null : s);
  }

  /**
   * The JSON body's bytes when it is JSON, was read and is at most {@code max-body-peek}; reads it
   * now if nothing has.
   */
  byte @Nullable [] jsonBytes() {
    RequestBody b = body;
    if (b == null || !json()) {
      return null;
    }
    byte[] bytes = b.bytes();
    return bytes == null || bytes.length > limits.maxPeek() ? null : bytes;
  }

  /** The length of the body as read, or -1 when it was not read (or is longer than max-body). */
  long bodyLength() {
    RequestBody b = body;
    byte[] bytes = b == null ? null : b.bytes();
    return bytes == null ? -1 : bytes.length;
  }

  /** The body parsed as a JSON object, once; {@code null} when it is not one. */
  @Nullable Map<String, Object> parsed(byte[] bytes) {
    Object cached = parsedBody;
    if (cached == null) {
      cached = parse(bytes, false);
      parsedBody = cached;
    }
    return map(cached);
  }

  /**
   * The body's members, once, without their nested values unless the whole body was parsed
   * already; {@code null} when it is not a JSON object.
   */
  @Nullable Map<String, Object> members(byte[] bytes) {
    Object whole = parsedBody;
    Object cached = whole != null ? whole : parsedMembers;
    if (cached == null) {
      cached = parse(bytes, true);
      parsedMembers = cached;
    }
    return map(cached);
  }

  private Object parse(byte[] bytes, boolean membersOnly) {
    byte[] read = bytes.length == 0 ? bytes : HttpFields.jsonAsRead(bytes, contentType);
    Map<String, Object> parsed = read.length == 0 ? Map.of()
        : membersOnly ? json.parseMembers(read, 0, read.length)
        : json.parseObject(read, 0, read.length);
    return parsed == null ? NOT_AN_OBJECT : parsed;
  }

  @SuppressWarnings("unchecked")
  private static @Nullable Map<String, Object> map(Object cached) {
    return cached == NOT_AN_OBJECT ? null : (Map<String, Object>) cached;
  }

  @Override
  public String toString() {
    RateLimitOutcome o = outcome;
    return "RateLimitContext[contentLength=" + contentLength + ", contentType=" + contentType
        + ", limited=" + limited + ", charged=" + (o == null ? "no" : o.decision()) + "]";
  }
}

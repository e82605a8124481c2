package io.github.llmratelimiter.gateway;

/** What a request without an API key gets ({@code ratelimiter.missing-key}). */
public enum MissingKey {

  /** A 401 problem response ({@link MissingApiKeyException}); the request is not served. */
  REJECT,

  /** The request is limited on the shared budget of the anonymous key. */
  ANONYMOUS
}

package io.github.llmratelimiter.gateway;

/** What a policy's budget is counted per. */
public enum KeyScope {

  /** One budget per API key, shared by every model the key calls. */
  API_KEY,

  /**
   * One budget per API key and model; a request that names no model falls back to the API key
   * alone.
   */
  API_KEY_AND_MODEL,

  /** One budget shared by every caller (for example a gateway-wide cap above per-key budgets). */
  GLOBAL
}

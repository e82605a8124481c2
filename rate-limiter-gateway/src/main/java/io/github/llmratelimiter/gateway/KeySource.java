package io.github.llmratelimiter.gateway;

/**
 * Where a front door finds the caller a request is charged to ({@code
 * ratelimiter.web.routes[n].key}, {@code key-expression}), and how the key it finds is named in the
 * store. A built-in source's key carries a prefix of its own ({@code principal:}, {@code ip:}), so
 * that no caller can pick an API key that shares another source's budget. A source that finds
 * nothing follows {@code ratelimiter.missing-key} ({@link RateLimitGateway#callerKey}).
 */
public enum KeySource {

  /** The API key the request carries ({@code Authorization: Bearer}, {@code X-API-Key}), as is. */
  API_KEY(""),

  /** The name of the request's authenticated principal, as {@code principal:<name>}. */
  PRINCIPAL("principal:"),

  /**
   * The client's IP address, as {@code ip:<address>}: the remote address of the connection, which
   * only the server's own forwarded-header support rewrites (never a header read here).
   */
  CLIENT_IP("ip:"),

  /** What an application's expression gives, as is. */
  EXPRESSION("");

  private final String prefix;

  KeySource(String prefix) {
    this.prefix = prefix;
  }

  /**
   * Returns the prefix of the keys this source finds.
   *
   * @return the prefix; empty for the API key and expressions
   */
  public String prefix() {
    return prefix;
  }
}

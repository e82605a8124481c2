package io.github.llmratelimiter.gateway;

/**
 * Where a front door finds the caller a request is charged to ({@code
 * ratelimiter.web.routes[n].key}, {@code key-expression}), and how the key it finds is named in the
 * store. The principal's and the client address's keys carry a prefix of their own ({@code
 * principal:}, {@code ip:}), and an API key that starts with either is rejected (a 400), so that no
 * caller can pick an API key that shares another source's budget. An API key and what an expression
 * gives carry none: a route keyed on an expression shares the budget of an API key equal to what
 * the expression gives (an expression that must not, gives its keys a prefix of its own). A source
 * that finds nothing follows {@code ratelimiter.missing-key} ({@link RateLimitGateway#callerKey}).
 */
public enum KeySource {

  /**
   * The API key the request carries ({@code Authorization: Bearer}, {@code X-API-Key}), as is; one
   * that starts with another source's prefix is rejected.
   */
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
   * Returns whether a key starts with the prefix of a source that has one.
   *
   * @param key the key
   * @return whether it starts with {@code principal:} or {@code ip:}
   */
  static boolean prefixed(String key) {
    return key.startsWith(PRINCIPAL.prefix) || key.startsWith(CLIENT_IP.prefix);
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

package io.github.llmratelimiter.gateway.internal;

import io.github.llmratelimiter.gateway.InvalidRateLimitRequestException;
import java.net.InetAddress;
import java.net.URLDecoder;
import java.net.UnknownHostException;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * Reads the limiter's inputs from HTTP fields, the same way on every stack: the API key from {@code
 * Authorization: Bearer} and {@code X-API-Key}, the model from the query string, and what a content
 * type says about the body. A front door hands in the raw values its request carries.
 */
public final class HttpFields {

  /** The header that carries an API key on its own. */
  public static final String API_KEY_HEADER = "X-API-Key";
  /** The header that carries a {@code Bearer} token. */
  public static final String AUTHORIZATION = "Authorization";
  /** The query parameter, form field and JSON member that name the model. */
  public static final String MODEL = "model";

  private static final String BEARER = "bearer";
  private static final String FORM = "application/x-www-form-urlencoded";
  /** The charsets whose JSON a reader decodes by itself, detecting the encoding from the bytes. */
  private static final Set<String> UNICODE = Set.of("UTF-8", "UTF-16", "UTF-16BE", "UTF-16LE",
      "UTF-32", "UTF-32BE", "UTF-32LE");

  private HttpFields() {}

  /**
   * Returns the API key a request carries: the token of {@code Authorization: Bearer <key>} or the
   * value of {@code X-API-Key}. A {@code Bearer} without a token, a blank {@code X-API-Key} and an
   * {@code Authorization} of another scheme carry no key; the same key sent twice is that key.
   *
   * @param authorization the values of every {@code Authorization} header, in order
   * @param apiKeys the values of every {@code X-API-Key} header, in order
   * @return the key, or {@code null} when the request carries none
   * @throws InvalidRateLimitRequestException if it carries more than one different key (a Bearer
   *     token and an {@code X-API-Key} that differ, or two headers of one kind that differ): the
   *     application's authentication may read the other one, so it is charged to neither
   */
  public static @Nullable String apiKey(
      Iterable<@Nullable String> authorization, Iterable<@Nullable String> apiKeys) {
    String key = null;
    for (String header : authorization) {
      key = same(key, bearerToken(header));
    }
    for (String header : apiKeys) {
      key = same(key, header == null || header.isBlank() ? null : header.trim());
    }
    return key;
  }

  /**
   * Returns a client's address as the key of {@link KeySource#CLIENT_IP}: the connection's remote
   * address as the server reports it (after its own forwarded-header support, if enabled), trimmed
   * and named alike on every stack. An IPv4 address is itself. An IPv6 address is its /64 network,
   * for example {@code 2001:db8:0:7::/64}: one host or subscriber holds a whole /64 and may send
   * from any address in it, so keying a single IPv6 address would give it 2^64 budgets. An
   * IPv4-mapped IPv6 address is its IPv4 address. Anything else is kept as reported.
   *
   * @param remoteAddress the address, or {@code null} when the server knows none
   * @return the key-ready address, or {@code null} when it is null or blank
   */
  public static @Nullable String clientAddress(@Nullable String remoteAddress) {
    if (remoteAddress == null || remoteAddress.isBlank()) {
      return null;
    }
    String a = remoteAddress.trim();
    if (a.length() > 2 && a.charAt(0) == '[' && a.charAt(a.length() - 1) == ']') {
      a = a.substring(1, a.length() - 1);
    }
    return a.indexOf(':') < 0 ? a : ipv6Network(a);
  }

  /** An IPv6 address's /64 network (or an IPv4-mapped address's IPv4), else the text as given. */
  private static String ipv6Network(String address) {
    int zone = address.indexOf('%');
    String literal = zone < 0 ? address : address.substring(0, zone);
    for (int i = 0; i < literal.length(); i++) {
      char c = literal.charAt(i);
      // only a literal reaches InetAddress, which then parses it and never asks DNS
      if (c != ':' && c != '.' && Character.digit(c, 16) < 0) {
        return address;
      }
    }
    byte[] b;
    try {
      b = InetAddress.getByName(literal).getAddress();
    } catch (UnknownHostException e) {
      return address;
    }
    if (b.length == 4) {
      return (b[0] & 0xff) + "." + (b[1] & 0xff) + "." + (b[2] & 0xff) + "." + (b[3] & 0xff);
    }
    StringBuilder network = new StringBuilder(24);
    for (int i = 0; i < 8; i += 2) {
      network.append(Integer.toHexString((b[i] & 0xff) << 8 | (b[i + 1] & 0xff))).append(':');
    }
    return network.append(":/64").toString();
  }

  /** The token of a {@code Bearer} authorization, or {@code null} for another scheme or none. */
  private static @Nullable String bearerToken(@Nullable String authorization) {
    if (authorization == null) {
      return null;
    }
    String value = authorization.trim();
    if (!value.regionMatches(true, 0, BEARER, 0, BEARER.length())
        || (value.length() > BEARER.length() && !Character.isWhitespace(value.charAt(BEARER.length())))) {
      return null;
    }
    String token = value.substring(BEARER.length()).trim();
    return token.isEmpty() ? null : token;
  }

  /** The one key of a request: the first found, unless another differs. */
  private static @Nullable String same(@Nullable String found, @Nullable String next) {
    if (found == null) {
      return next;
    }
    if (next != null && !next.equals(found)) {
      throw new InvalidRateLimitRequestException("The request carries more than one API key "
          + "(Authorization: Bearer and X-API-Key, or one of them twice, with different values): "
          + "send one", null);
    }
    return found;
  }

  /**
   * Returns the values of the {@code model} parameter of a raw query string, decoded as servlet
   * containers decode them (UTF-8, {@code +} as a space; a malformed escape compared as sent).
   *
   * @param rawQuery the query string as sent, without {@code ?}, or {@code null}
   * @return the values, in order; empty when there is none
   */
  public static List<String> queryModels(@Nullable String rawQuery) {
    List<String> values = new ArrayList<>(1);
    if (rawQuery == null || rawQuery.isEmpty()) {
      return values;
    }
    for (String pair : rawQuery.split("&")) {
      int eq = pair.indexOf('=');
      String name = decode(eq < 0 ? pair : pair.substring(0, eq));
      if (MODEL.equals(name)) {
        values.add(eq < 0 ? "" : decode(pair.substring(eq + 1)));
      }
    }
    return values;
  }

  private static String decode(String s) {
    try {
      return URLDecoder.decode(s, StandardCharsets.UTF_8);
    } catch (IllegalArgumentException e) {
      return s; // a malformed escape: compared as sent
    }
  }

  /**
   * Returns the one model that values of a query parameter or a form field name.
   *
   * @param values the values, in order; blank ones are ignored
   * @param where what the values are, for the message (for example {@code query parameter})
   * @return the model, or {@code null} when no value is set
   * @throws InvalidRateLimitRequestException if two values differ
   */
  public static @Nullable String oneModel(List<@Nullable String> values, String where) {
    String model = null;
    for (String v : values) {
      if (v == null || v.isBlank()) {
        continue;
      }
      if (model != null && !model.equals(v)) {
        throw new InvalidRateLimitRequestException("the request names more than one model in its "
            + "\"model\" " + where + " (" + quoteAll(values) + ")", null);
      }
      model = v;
    }
    return model;
  }

  private static String quoteAll(List<@Nullable String> values) {
    StringBuilder joined = new StringBuilder();
    for (String v : values) {
      joined.append(joined.length() == 0 ? "" : ", ").append(v);
    }
    return joined.length() > 80 ? joined.substring(0, 80) + "..." : joined.toString();
  }

  /**
   * Returns whether a content type is JSON: its media type (the part before any parameter) has the
   * subtype {@code json} or a {@code +json} suffix, in any case, as the servers' JSON readers take
   * it. A parameter never makes a type JSON.
   *
   * @param contentType the content type
   * @return whether it is a JSON type
   */
  public static boolean isJson(@Nullable String contentType) {
    if (contentType == null) {
      return false;
    }
    int end = mediaTypeEnd(contentType);
    int slash = contentType.indexOf('/');
    if (slash < 0 || slash >= end) {
      return false;
    }
    return end - slash - 1 == 4 ? contentType.regionMatches(true, slash + 1, "json", 0, 4)
        : end - slash - 1 > 5 && contentType.regionMatches(true, end - 5, "+json", 0, 5);
  }

  /**
   * Returns whether a content type is a form a server parses into request parameters: its media
   * type (the part before any parameter) is {@code application/x-www-form-urlencoded} or {@code
   * multipart/*}, in any case. A parameter never makes a type a form.
   *
   * @param contentType the content type
   * @return whether it is a form
   */
  public static boolean isForm(@Nullable String contentType) {
    if (contentType == null) {
      return false;
    }
    int start = 0;
    while (start < contentType.length() && Character.isWhitespace(contentType.charAt(start))) {
      start++;
    }
    int end = mediaTypeEnd(contentType);
    return end - start > 10 && contentType.regionMatches(true, start, "multipart/", 0, 10)
        || end - start == FORM.length() && contentType.regionMatches(true, start, FORM, 0, FORM.length());
  }

  /** Where a content type's media type ends: before its first parameter and trailing spaces. */
  private static int mediaTypeEnd(String contentType) {
    int semi = contentType.indexOf(';');
    int end = semi < 0 ? contentType.length() : semi;
    while (end > 0 && Character.isWhitespace(contentType.charAt(end - 1))) {
      end--;
    }
    return end;
  }

  /**
   * Returns a JSON body's bytes as the servers' JSON readers read them: as they are when the content
   * type declares no charset or a Unicode one (UTF-8, UTF-16 or UTF-32, whose encoding the reader
   * detects from the bytes), else decoded with the declared charset and encoded in UTF-8, so that
   * the limiter reads the model and the numbers the handler will read.
   *
   * @param body the body as sent
   * @param contentType the request's content type, or {@code null}
   * @return the bytes to parse
   * @throws InvalidRateLimitRequestException if the declared charset is not one this JVM knows
   */
  public static byte[] jsonAsRead(byte[] body, @Nullable String contentType) {
    String name = charset(contentType);
    if (name == null) {
      return body;
    }
    Charset charset;
    try {
      charset = Charset.forName(name);
    } catch (IllegalArgumentException e) { // an illegal or unsupported name
      throw new InvalidRateLimitRequestException("the request's charset is not supported", null);
    }
    return UNICODE.contains(charset.name()) ? body
        : new String(body, charset).getBytes(StandardCharsets.UTF_8);
  }

  /**
   * The value of a content type's {@code charset} parameter, unquoted, or {@code null}, read as
   * Spring's {@code MimeType} reads it: parameters split at the semicolons outside double quotes,
   * names in any case, the last of repeated names winning.
   */
  private static @Nullable String charset(@Nullable String contentType) {
    if (contentType == null) {
      return null;
    }
    String found = null;
    int start = contentType.indexOf(';');
    while (start >= 0 && start < contentType.length()) {
      int end = start + 1;
      boolean quoted = false;
      while (end < contentType.length() && (quoted || contentType.charAt(end) != ';')) {
        if (contentType.charAt(end) == '"') {
          quoted = !quoted;
        }
        end++;
      }
      String parameter = contentType.substring(start + 1, end).trim();
      int eq = parameter.indexOf('=');
      if (eq > 0 && parameter.substring(0, eq).trim().equalsIgnoreCase("charset")) {
        String value = parameter.substring(eq + 1).trim();
        if (value.length() >= 2 && value.charAt(0) == '"' && value.charAt(value.length() - 1) == '"') {
          value = value.substring(1, value.length() - 1);
        }
        found = value.isBlank() ? null : value.trim();
      }
      start = end;
    }
    return found;
  }
}

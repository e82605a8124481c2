package io.github.llmratelimiter.gateway;

import java.net.URI;
import java.net.URISyntaxException;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * An RFC 9457 problem body as data: the standard members and the extra ones, in order. A front door
 * serializes it as {@code application/problem+json} (in Spring, as a {@code ProblemDetail}), so the
 * servlet and reactive stacks send the same body.
 *
 * @param status the HTTP status, from 400 to 599
 * @param type the problem type; {@link #BLANK_TYPE} when the status says it all
 * @param title a short summary of the problem type
 * @param detail what happened to this request, or {@code null}
 * @param instance the request's path, or {@code null}
 * @param members the extension members by name, in order; values may be null, nested maps and lists
 */
public record RateLimitProblem(
    int status,
    URI type,
    String title,
    @Nullable String detail,
    @Nullable URI instance,
    Map<String, @Nullable Object> members) {

  /** The type of a problem that has no more specific one than its status. */
  public static final URI BLANK_TYPE = URI.create("about:blank");

  /** The standard members, which an extension member may not shadow. */
  private static final Set<String> STANDARD = Set.of("type", "title", "status", "detail", "instance");

  /**
   * Validates the problem and copies the members, keeping their order.
   *
   * @throws IllegalArgumentException if the status is not from 400 to 599, the type, title or
   *     members are null, or a member's name is null or one of the standard members'
   */
  public RateLimitProblem {
    if (status < 400 || status > 599) {
      throw new IllegalArgumentException("status must be from 400 to 599, but was " + status);
    }
    if (type == null || title == null || members == null) {
      throw new IllegalArgumentException("type, title and members must not be null");
    }
    Map<String, @Nullable Object> copy = new LinkedHashMap<>();
    members.forEach((name, value) -> {
      if (name == null || STANDARD.contains(name)) {
        throw new IllegalArgumentException(
            "a member's name must not be null or one of " + STANDARD + ", but was " + name);
      }
      copy.put(name, value);
    });
    members = Collections.unmodifiableMap(copy);
  }

  /**
   * Returns a problem of the blank type whose title is the status's reason phrase.
   *
   * @param status the HTTP status, from 400 to 599
   * @param detail what happened to this request, or {@code null}
   * @param path the request's path, which becomes the instance; {@code null}, or one that is not a
   *     valid URI reference, leaves the instance out
   * @return the problem
   * @throws IllegalArgumentException if the status is not from 400 to 599
   */
  public static RateLimitProblem of(int status, @Nullable String detail, @Nullable String path) {
    return new RateLimitProblem(status, BLANK_TYPE, reasonPhrase(status), detail, instance(path),
        Map.of());
  }

  /**
   * Returns this problem with one extension member added (or replaced, keeping its place).
   *
   * @param name the member's name, not one of the standard members'
   * @param value its value: a string, number, boolean, null, or a map or list of those
   * @return the new problem
   * @throws IllegalArgumentException if the name is null or a standard member's
   */
  public RateLimitProblem with(String name, @Nullable Object value) {
    Map<String, @Nullable Object> all = new LinkedHashMap<>(members);
    all.put(name, value);
    return new RateLimitProblem(status, type, title, detail, instance, all);
  }

  /**
   * Returns this problem with another type.
   *
   * @param problemType the type
   * @return the new problem
   * @throws IllegalArgumentException if the type is null
   */
  public RateLimitProblem withType(URI problemType) {
    return new RateLimitProblem(status, problemType, title, detail, instance, members);
  }

  /**
   * Returns this problem with the {@code error} member OpenAI's API answers with, so that an
   * OpenAI client reads it as OpenAI's own error: its {@code message} is this problem's detail.
   *
   * @param errorType OpenAI's error type, for example {@code requests}, {@code tokens} or {@code
   *     invalid_request_error}
   * @param param the request parameter at fault, or {@code null}
   * @param code OpenAI's error code, for example {@code rate_limit_exceeded}, or {@code null}
   * @return the new problem
   * @throws IllegalArgumentException if the error type is null or blank
   */
  public RateLimitProblem withOpenAiError(
      String errorType, @Nullable String param, @Nullable String code) {
    return with("error", openAiError(detail, errorType, param, code));
  }

  /**
   * Returns OpenAI's error object: {@code message}, {@code type}, {@code param} and {@code code}, in
   * that order, the absent ones as {@code null}.
   *
   * @param message the error's message, or {@code null}
   * @param errorType the error's type, not blank
   * @param param the request parameter at fault, or {@code null}
   * @param code the error's code, or {@code null}
   * @return the error object, unmodifiable
   * @throws IllegalArgumentException if the error type is null or blank
   */
  public static Map<String, @Nullable Object> openAiError(@Nullable String message,
      String errorType, @Nullable String param, @Nullable String code) {
    if (errorType == null || errorType.isBlank()) {
      throw new IllegalArgumentException("errorType must not be blank, but was '" + errorType + "'");
    }
    Map<String, @Nullable Object> error = new LinkedHashMap<>();
    error.put("message", message);
    error.put("type", errorType);
    error.put("param", param);
    error.put("code", code);
    return Collections.unmodifiableMap(error);
  }

  /**
   * Returns the reason phrase of a status the limiter answers with (RFC 9110), else {@code Error}.
   *
   * @param status the status
   * @return the phrase
   */
  public static String reasonPhrase(int status) {
    return switch (status) {
      case 400 -> "Bad Request";
      case 401 -> "Unauthorized";
      case 403 -> "Forbidden";
      case 404 -> "Not Found";
      case 413 -> "Content Too Large";
      case 429 -> "Too Many Requests";
      case 500 -> "Internal Server Error";
      case 502 -> "Bad Gateway";
      case 503 -> "Service Unavailable";
      case 504 -> "Gateway Timeout";
      default -> "Error";
    };
  }

  private static @Nullable URI instance(@Nullable String path) {
    if (path == null) {
      return null;
    }
    try {
      return new URI(path);
    } catch (URISyntaxException e) {
      return null; // a path the container let through but URI rejects: no instance, never a 500
    }
  }
}

package io.github.llmratelimiter.sample;

import io.github.llmratelimiter.gateway.RateLimitProblem;
import jakarta.servlet.http.HttpServletRequest;
import java.net.URI;
import java.util.List;
import java.util.Set;
import org.jspecify.annotations.Nullable;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpMethod;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.http.converter.HttpMessageNotReadableException;
import org.springframework.web.HttpMediaTypeNotSupportedException;
import org.springframework.web.HttpRequestMethodNotSupportedException;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.RestControllerAdvice;
import org.springframework.web.multipart.MaxUploadSizeExceededException;
import org.springframework.web.multipart.MultipartException;
import org.springframework.web.servlet.resource.NoResourceFoundException;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.exc.MismatchedInputException;

/**
 * Malformed or invalid requests: a 400 problem that also carries OpenAI's {@code error} object (a
 * 404 for a model the gateway does not serve); a path the gateway does not serve: a 404, and a
 * method a path does not take: a 405 with {@code Allow}, in the same shape; a multipart body the
 * container cannot parse: a 400 (a 413 past its upload limits); a failed upstream call:
 * a 502 in the same shape; a call the provider refused with a 429: a 429 with the provider's
 * {@code retry-after}, in the same shape (the provider's own {@code x-ratelimit-*} figures, the
 * operator's account, are not passed to the tenant).
 */
@RestControllerAdvice
class OpenAiErrorHandler {

  @ExceptionHandler(InvalidOpenAiRequestException.class)
  ResponseEntity<ProblemDetail> invalid(InvalidOpenAiRequestException e, HttpServletRequest request) {
    return problem(HttpStatus.valueOf(e.status()), e.getMessage(), e.param(), e.code(), request,
        Set.of());
  }

  @ExceptionHandler(NoResourceFoundException.class)
  ResponseEntity<ProblemDetail> notFound(HttpServletRequest request) {
    return problem(HttpStatus.NOT_FOUND, "Invalid URL (" + request.getMethod() + " "
        + request.getRequestURI() + ")", null, null, request, Set.of());
  }

  @ExceptionHandler(HttpRequestMethodNotSupportedException.class)
  ResponseEntity<ProblemDetail> methodNotAllowed(HttpRequestMethodNotSupportedException e,
      HttpServletRequest request) {
    Set<HttpMethod> allowed = e.getSupportedHttpMethods();
    return problem(HttpStatus.METHOD_NOT_ALLOWED, "Invalid method for URL (" + request.getMethod()
        + " " + request.getRequestURI() + ")", null, null, request,
        allowed == null ? Set.of() : allowed);
  }

  @ExceptionHandler(UpstreamFailureException.class)
  ResponseEntity<ProblemDetail> upstream(UpstreamFailureException e, HttpServletRequest request) {
    String message = "The model provider failed to answer; no model tokens were charged for it.";
    return ResponseEntity.status(HttpStatus.BAD_GATEWAY).contentType(MediaType.APPLICATION_PROBLEM_JSON)
        .body(openAiProblem(HttpStatus.BAD_GATEWAY, message, "api_error", null, "upstream_error",
            URI.create(request.getRequestURI())));
  }

  @ExceptionHandler(ProviderRateLimitException.class)
  ResponseEntity<ProblemDetail> providerLimited(ProviderRateLimitException e,
      HttpServletRequest request) {
    String message = "The model provider's capacity for this gateway is used up (" + e.limit()
        + "); retry after the time in Retry-After. The model tokens reserved for this call were"
        + " given back; its request still counts against your key's request limits.";
    ProblemDetail problem = openAiProblem(HttpStatus.TOO_MANY_REQUESTS, message, "rate_limit_error",
        null, "rate_limit_exceeded", URI.create(request.getRequestURI()));
    ResponseEntity.BodyBuilder response = ResponseEntity.status(HttpStatus.TOO_MANY_REQUESTS)
        .contentType(MediaType.APPLICATION_PROBLEM_JSON);
    String retry = e.headers().get("retry-after");
    if (retry != null) {
      response.header(HttpHeaders.RETRY_AFTER, retry);
    }
    return response.body(problem);
  }

  /**
   * A body that is not JSON, or not the object a chat call takes: a 400; a member of the wrong type
   * (a string where a boolean goes, an object where a string goes) is named, with the type it takes,
   * as OpenAI names it ({@code Invalid type for 'stream': expected a boolean}).
   */
  @ExceptionHandler(HttpMessageNotReadableException.class)
  ResponseEntity<ProblemDetail> unreadable(HttpMessageNotReadableException e,
      HttpServletRequest request) {
    for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
      if (t instanceof MismatchedInputException mismatch && !mismatch.getPath().isEmpty()) {
        String param = path(mismatch.getPath());
        return badRequest("Invalid type for '" + param + "': expected "
            + typeName(mismatch.getTargetType()), param, null, request);
      }
    }
    return badRequest("We could not parse the JSON body of your request: send a JSON object "
        + "like {\"model\": \"gpt-4o\", \"messages\": [...]}", null, null, request);
  }

  /** A member's path as OpenAI writes it: {@code messages[0].content}. */
  private static String path(List<JacksonException.Reference> references) {
    StringBuilder path = new StringBuilder();
    for (JacksonException.Reference r : references) {
      if (r.getPropertyName() != null) {
        path.append(path.isEmpty() ? "" : ".").append(r.getPropertyName());
      } else if (r.getIndex() >= 0) {
        path.append('[').append(r.getIndex()).append(']');
      }
    }
    return path.toString();
  }

  /** What a member of a type holds, in words: a boolean, an integer, a number, a string, ... */
  private static String typeName(@Nullable Class<?> type) {
    if (type == null) {
      return "another type";
    }
    if (type == Boolean.class || type == boolean.class) {
      return "a boolean";
    }
    if (type == Integer.class || type == int.class || type == Long.class || type == long.class) {
      return "an integer";
    }
    if (Number.class.isAssignableFrom(type) || type.isPrimitive()) {
      return "a number";
    }
    if (CharSequence.class.isAssignableFrom(type)) {
      return "a string";
    }
    if (type.isArray() || java.util.Collection.class.isAssignableFrom(type)) {
      return "an array";
    }
    return "an object";
  }

  /**
   * A multipart body the container could not parse (no boundary, a part cut short): a 400; one
   * past the container's upload limits ({@code spring.servlet.multipart.*}): a 413.
   */
  @ExceptionHandler(MultipartException.class)
  ResponseEntity<ProblemDetail> unreadableForm(MultipartException e, HttpServletRequest request) {
    if (e instanceof MaxUploadSizeExceededException) {
      return problem(HttpStatus.CONTENT_TOO_LARGE, "The request body is larger than this gateway"
          + " accepts", null, null, request, Set.of());
    }
    return badRequest("We could not parse the multipart body of your request: send the request"
        + " body as application/json", null, null, request);
  }

  @ExceptionHandler(HttpMediaTypeNotSupportedException.class)
  ResponseEntity<ProblemDetail> unsupported(HttpServletRequest request) {
    return badRequest("Send the request body as application/json", null, null, request);
  }

  private static ResponseEntity<ProblemDetail> badRequest(
      String message, @Nullable String param, @Nullable String code, HttpServletRequest request) {
    return problem(HttpStatus.BAD_REQUEST, message, param, code, request, Set.of());
  }

  /** A problem with OpenAI's {@code error} object; a 405 names the {@code allowed} methods. */
  private static ResponseEntity<ProblemDetail> problem(HttpStatus status, String message,
      @Nullable String param, @Nullable String code, HttpServletRequest request,
      Set<HttpMethod> allowed) {
    ProblemDetail problem = openAiProblem(status, message, "invalid_request_error", param, code,
        URI.create(request.getRequestURI()));
    ResponseEntity.BodyBuilder response = ResponseEntity.status(status)
        .contentType(MediaType.APPLICATION_PROBLEM_JSON);
    if (!allowed.isEmpty()) {
      response.allow(allowed.toArray(HttpMethod[]::new));
    }
    return response.body(problem);
  }

  /**
   * A problem of the gateway: its status, title and detail, and OpenAI's {@code error} object with
   * the same message.
   */
  static ProblemDetail openAiProblem(HttpStatus status, String message, String type,
      @Nullable String param, @Nullable String code, @Nullable URI instance) {
    ProblemDetail problem = ProblemDetail.forStatusAndDetail(status, message);
    problem.setTitle(status.getReasonPhrase());
    problem.setInstance(instance);
    problem.setProperty("error", RateLimitProblem.openAiError(message, type, param, code));
    return problem;
  }
}

package io.github.llmratelimiter.sample;

import io.github.llmratelimiter.gateway.RateLimitProblem;
import jakarta.servlet.http.HttpServletRequest;
import java.net.URI;
import org.jspecify.annotations.Nullable;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.http.converter.HttpMessageNotReadableException;
import org.springframework.web.HttpMediaTypeNotSupportedException;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.RestControllerAdvice;

/**
 * Malformed or invalid requests: a 400 problem that also carries OpenAI's {@code error} object; a
 * failed upstream call: a 502 in the same shape.
 */
@RestControllerAdvice
class OpenAiErrorHandler {

  @ExceptionHandler(InvalidOpenAiRequestException.class)
  ResponseEntity<ProblemDetail> invalid(InvalidOpenAiRequestException e, HttpServletRequest request) {
    return badRequest(e.getMessage(), e.param(), e.code(), request);
  }

  @ExceptionHandler(UpstreamFailureException.class)
  ResponseEntity<ProblemDetail> upstream(UpstreamFailureException e, HttpServletRequest request) {
    String message = "The model provider failed to answer; no model tokens were charged for it.";
    ProblemDetail problem = ProblemDetail.forStatusAndDetail(HttpStatus.BAD_GATEWAY, message);
    problem.setTitle(HttpStatus.BAD_GATEWAY.getReasonPhrase());
    problem.setInstance(URI.create(request.getRequestURI()));
    problem.setProperty("error",
        RateLimitProblem.openAiError(message, "api_error", null, "upstream_error"));
    return ResponseEntity.status(HttpStatus.BAD_GATEWAY).contentType(MediaType.APPLICATION_PROBLEM_JSON)
        .body(problem);
  }

  @ExceptionHandler(HttpMessageNotReadableException.class)
  ResponseEntity<ProblemDetail> unreadable(HttpServletRequest request) {
    return badRequest("We could not parse the JSON body of your request: send a JSON object "
        + "like {\"model\": \"gpt-4o\", \"messages\": [...]}", null, null, request);
  }

  @ExceptionHandler(HttpMediaTypeNotSupportedException.class)
  ResponseEntity<ProblemDetail> unsupported(HttpServletRequest request) {
    return badRequest("Send the request body as application/json", null, null, request);
  }

  private static ResponseEntity<ProblemDetail> badRequest(
      String message, @Nullable String param, @Nullable String code, HttpServletRequest request) {
    ProblemDetail problem = ProblemDetail.forStatusAndDetail(HttpStatus.BAD_REQUEST, message);
    problem.setTitle(HttpStatus.BAD_REQUEST.getReasonPhrase());
    problem.setInstance(URI.create(request.getRequestURI()));
    problem.setProperty("error",
        RateLimitProblem.openAiError(message, "invalid_request_error", param, code));
    return ResponseEntity.badRequest().contentType(MediaType.APPLICATION_PROBLEM_JSON).body(problem);
  }
}

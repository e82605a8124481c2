package io.github.llmratelimiter.sample;

import jakarta.servlet.RequestDispatcher;
import jakarta.servlet.http.HttpServletRequest;
import org.springframework.boot.webmvc.error.ErrorController;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * The error page of the gateway: what the container answers itself once a request reached the
 * application but no handler answered it (a body that breaks off or is cut mid-chunk, a read that
 * times out, a method the container refuses) is a problem ({@code application/problem+json})
 * that also carries OpenAI's {@code error} object, as every other error of the gateway is, never
 * Spring Boot's default error body. It names the status only: never the exception, the request's
 * headers or its body.
 */
@RestController
class ProblemErrorController implements ErrorController {

  @RequestMapping("${server.error.path:${error.path:/error}}")
  ResponseEntity<ProblemDetail> error(HttpServletRequest request) {
    Object code = request.getAttribute(RequestDispatcher.ERROR_STATUS_CODE);
    HttpStatus resolved = code instanceof Integer c ? HttpStatus.resolve(c) : null;
    HttpStatus status = resolved != null && resolved.isError() ? resolved
        : HttpStatus.INTERNAL_SERVER_ERROR;
    boolean client = status.is4xxClientError();
    String message = client
        ? "The server could not read the request (" + status.value() + " " + status.getReasonPhrase()
            + "): send it whole, with a body that matches its Content-Length or chunked encoding."
        : "The server failed to answer the request (" + status.value() + " "
            + status.getReasonPhrase() + ").";
    return ResponseEntity.status(status).contentType(MediaType.APPLICATION_PROBLEM_JSON).body(
        OpenAiErrorHandler.openAiProblem(status, message,
            client ? "invalid_request_error" : "api_error", null, null, null));
  }
}

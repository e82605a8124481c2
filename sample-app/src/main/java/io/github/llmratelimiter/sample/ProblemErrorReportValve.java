package io.github.llmratelimiter.sample;

import java.io.IOException;
import java.io.PrintWriter;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.catalina.connector.Request;
import org.apache.catalina.connector.Response;
import org.apache.catalina.valves.ErrorReportValve;
import org.apache.coyote.ActionCode;
import org.springframework.http.HttpStatus;

/**
 * Tomcat's answer to a request it rejects before any filter or servlet sees it (an encoded slash
 * in the path, a request line or header larger than the connector takes): a problem ({@code
 * application/problem+json}) that also carries OpenAI's {@code error} object, as every other error
 * of the gateway does, instead of Tomcat's HTML page. It writes only when nothing else wrote the
 * response: an error that reached the application keeps the application's body.
 */
final class ProblemErrorReportValve extends ErrorReportValve {

  @Override
  protected void report(Request request, Response response, Throwable throwable) {
    int status = response.getStatus();
    if (status < 400 || response.getContentWritten() > 0) {
      return;
    }
    AtomicBoolean io = new AtomicBoolean();
    response.getCoyoteResponse().action(ActionCode.IS_IO_ALLOWED, io);
    if (!io.get()) {
      return; // the connection cannot take a reply any more
    }
    HttpStatus known = HttpStatus.resolve(status);
    String title = known == null ? "Error" : known.getReasonPhrase();
    String detail = status < 500
        ? "The server could not read the request (" + status + " " + title + "): check its path "
            + "(no encoded '/' or '\\\\'), and the size of its request line and headers."
        : "The server failed to answer the request (" + status + " " + title + ").";
    String type = status < 500 ? "invalid_request_error" : "api_error";
    String json = "{\"type\":\"about:blank\",\"title\":\"" + title + "\",\"status\":" + status
        + ",\"detail\":\"" + detail + "\",\"error\":{\"message\":\"" + detail + "\",\"type\":\""
        + type + "\",\"param\":null,\"code\":null}}";
    try {
      response.setContentType("application/problem+json");
      response.setCharacterEncoding("UTF-8");
      PrintWriter writer = response.getReporter();
      if (writer != null) {
        writer.write(json);
        response.finishResponse();
      }
    } catch (IOException | IllegalStateException e) {
      // the client is gone, or the response was committed meanwhile: nothing more to send
    }
  }
}

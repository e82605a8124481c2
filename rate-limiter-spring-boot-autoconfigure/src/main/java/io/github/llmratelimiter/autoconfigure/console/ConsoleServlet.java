package io.github.llmratelimiter.autoconfigure.console;

import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;

/** The console on the servlet stack: a servlet mapped to {@code /ratelimiter/console/*}. */
final class ConsoleServlet extends HttpServlet {

  private static final long serialVersionUID = 1L;

  private final transient ConsolePage page;

  ConsoleServlet(ConsolePage page) {
    this.page = page;
  }

  @Override
  protected void service(HttpServletRequest request, HttpServletResponse response) throws IOException {
    String path = request.getServletPath() + (request.getPathInfo() == null ? "" : request.getPathInfo());
    // mapped to the console's paths only: whatever else the path names is the page's 404
    ConsolePage.Answer answer = page.answer(request.getMethod(), path, request.getContextPath());
    response.setStatus(answer.status());
    response.setContentType(answer.contentType());
    answer.headers().forEach(response::setHeader);
    response.setContentLength(answer.body().length);
    if (!request.getMethod().equals("HEAD")) {
      response.getOutputStream().write(answer.body());
    }
  }
}

package io.github.llmratelimiter.autoconfigure.tomcat;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.autoconfigure.RateLimiterAutoConfiguration;
import jakarta.servlet.http.HttpServletRequest;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.apache.coyote.AbstractProtocol;
import org.apache.coyote.Processor;
import org.apache.tomcat.util.net.AbstractEndpoint;
import org.apache.tomcat.util.net.AbstractEndpoint.Handler;
import org.apache.tomcat.util.net.SocketEvent;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.boot.tomcat.TomcatConnectorCustomizer;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.servlet.mvc.method.annotation.StreamingResponseBody;

/**
 * On a real Tomcat, a streamed response whose request met an async timeout raised for the request
 * before it on the connection still ends: the guard keeps its processor on the connection. The
 * timeout is raised as Tomcat's sweep raises it with a processor reference it took before the
 * processor was recycled: for the processor of a request that has not started async yet (the limiter has charged it, its handler runs); the stream's events come once
 * Tomcat has handled that timeout, after the container thread left the request. Without the guard
 * Tomcat loses the request's dispatch and the response never ends, which shows what the guard is
 * for.
 */
@ExtendWith(OutputCaptureExtension.class)
class AsyncTimeoutGuardTests {

  private static final String STREAM = "GET /v1/stream HTTP/1.1\r\nHost: localhost\r\n"
      + "Authorization: Bearer sk-guard-test\r\n\r\n";
  private static final String TIMED_OUT = "GET /v1/stream?stale-timeout=true HTTP/1.1\r\n"
      + "Host: localhost\r\nAuthorization: Bearer sk-guard-test\r\n\r\n";

  private final WebApplicationContextRunner runner = new WebApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(RateLimiterAutoConfiguration.class,
          RateLimiterTomcatAutoConfiguration.class));

  @Test
  void aStreamedResponseEndsAfterAStaleAsyncTimeout(CapturedOutput output) throws IOException {
    try (ConfigurableApplicationContext app = start();
        Socket connection = connect(app)) {
      assertThat(call(connection, STREAM)).endsWith("data: [DONE]\n\n\r\n0\r\n\r\n");
      assertThat(output).doesNotContain("the processor is back");
      assertThat(call(connection, TIMED_OUT)).endsWith("data: [DONE]\n\n\r\n0\r\n\r\n");
      assertThat(output).containsOnlyOnce("the processor is back"); // the guard put it back
      assertThat(call(connection, STREAM)).startsWith("HTTP/1.1 200 ") // the connection goes on
          .contains("RateLimit-Policy").endsWith("\r\n0\r\n\r\n");
    }
  }

  @Test
  void withoutTheGuardTomcatLosesTheDispatchAndTheResponseNeverEnds() throws IOException {
    try (ConfigurableApplicationContext app = start("ratelimiter.web.tomcat-async-timeout-guard=false");
        Socket connection = connect(app)) {
      assertThat(call(connection, STREAM)).endsWith("\r\n0\r\n\r\n");
      assertThat(call(connection, TIMED_OUT))
          .as("Tomcat ended the response: it no longer loses the dispatch, and the guard may go")
          .contains("data: [DONE]").endsWith("(no end)");
    }
  }

  @Test
  void aRealAsyncTimeoutIsStillTimedOut() throws IOException {
    try (ConfigurableApplicationContext app = start("spring.mvc.async.request-timeout=200ms")) {
      try (Socket connection = connect(app)) {
        String slow = STREAM.replace("/v1/stream", "/v1/stream?slow=true");
        assertThat(call(connection, slow)).startsWith("HTTP/1.1 503 ").doesNotContain("(no end)");
      }
      try (Socket connection = connect(app)) {
        assertThat(call(connection, STREAM)).startsWith("HTTP/1.1 200 ").endsWith("\r\n0\r\n\r\n");
      }
    }
  }

  @Test
  void runWhenOnTomcatShouldRegisterTheGuard() {
    runner.run(context -> assertThat(context)
        .getBean("rateLimiterTomcatAsyncTimeoutGuard").isInstanceOf(AsyncTimeoutGuard.class));
  }

  @Test
  void runWhenTheGuardIsOffShouldNotRegisterIt() {
    runner.withPropertyValues("ratelimiter.web.tomcat-async-timeout-guard=false")
        .run(context -> assertThat(context).doesNotHaveBean("rateLimiterTomcatAsyncTimeoutGuard"));
  }

  @Test
  void runWhenTheWebFrontDoorIsOffShouldNotRegisterTheGuard() {
    runner.withPropertyValues("ratelimiter.web.enabled=false")
        .run(context -> assertThat(context).doesNotHaveBean("rateLimiterTomcatAsyncTimeoutGuard"));
  }

  @Test
  void runWhenTheLimiterIsOffShouldNotRegisterTheGuard() {
    runner.withPropertyValues("ratelimiter.enabled=false")
        .run(context -> assertThat(context).doesNotHaveBean("rateLimiterTomcatAsyncTimeoutGuard"));
  }

  private static ConfigurableApplicationContext start(String... properties) {
    return new SpringApplicationBuilder(App.class)
        .properties("server.port=0", "server.address=127.0.0.1", "ratelimiter.rpm.limit=1000",
            "ratelimiter.web.routes[0].include=/v1/**", "spring.main.banner-mode=off",
            "server.shutdown=immediate") // a lost request would hold a graceful one 30 s
        .properties(properties)
        .run();
  }

  private static Socket connect(ConfigurableApplicationContext app) throws IOException {
    int port = app.getEnvironment().getRequiredProperty("local.server.port", Integer.class);
    Socket socket = new Socket("127.0.0.1", port);
    socket.setSoTimeout(5000);
    return socket;
  }

  /**
   * Sends a request on the keep-alive connection and reads its response to the end of its chunked
   * body, or what came of it followed by "(no end)" when nothing more comes for 5 s.
   */
  private static String call(Socket connection, String request) throws IOException {
    OutputStream out = connection.getOutputStream();
    out.write(request.getBytes(StandardCharsets.US_ASCII));
    out.flush();
    InputStream in = connection.getInputStream();
    ByteArrayOutputStream got = new ByteArrayOutputStream();
    byte[] buffer = new byte[4096];
    while (!got.toString(StandardCharsets.US_ASCII).endsWith("\r\n0\r\n\r\n")) {
      int n;
      try {
        n = in.read(buffer);
      } catch (SocketTimeoutException e) {
        return got.toString(StandardCharsets.US_ASCII) + "(no end)";
      }
      if (n < 0) {
        return got.toString(StandardCharsets.US_ASCII) + "(closed)";
      }
      got.write(buffer, 0, n);
    }
    return got.toString(StandardCharsets.US_ASCII);
  }

  @SpringBootConfiguration
  @EnableAutoConfiguration
  @RestController
  static class App {

    /** Released each time Tomcat has handled a timeout event. */
    static final Semaphore TIMEOUTS = new Semaphore(0);

    /**
     * A streamed chat completion whose events come after the handler returned (the container thread
     * has left the request): with {@code stale-timeout}, its processor first meets the async timeout
     * Tomcat's sweep raises with a reference it took before the processor was recycled; with
     * {@code slow}, they come after 6 s.
     */
    @GetMapping("/v1/stream")
    StreamingResponseBody stream(HttpServletRequest request) {
      boolean staleTimeout = request.getParameter("stale-timeout") != null;
      if (staleTimeout) {
        TIMEOUTS.drainPermits();
        // -1: raised whatever the processor's times say, as the sweep raises it when it finds a
        // processor recycled since it took it (a start time of 0), which this one need not be
        processorOf(request).timeoutAsync(-1);
      }
      boolean slow = request.getParameter("slow") != null;
      return out -> {
        if (staleTimeout) { // the events come once Tomcat has handled that timeout
          assertThat(acquireUninterruptibly(TIMEOUTS, 20_000)).isTrue();
        }
        // not cut short when the request times out: the timeout's answer is the response
        long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(slow ? 6_000 : 50);
        while (System.nanoTime() < end) {
          LockSupport.parkNanos(end - System.nanoTime());
        }
        out.write("data: [DONE]\n\n".getBytes(StandardCharsets.US_ASCII));
        out.flush();
      };
    }

    /**
     * Counts the timeout events Tomcat's connection handler has handled: the outermost handler of
     * the connector, whatever it holds (with the guard, the guard).
     */
    @Bean
    TomcatConnectorCustomizer timeoutCounter() {
      return connector -> {
        try {
          Method getEndpoint = AbstractProtocol.class.getDeclaredMethod("getEndpoint");
          getEndpoint.setAccessible(true);
          count((AbstractEndpoint<?, ?>) getEndpoint.invoke(connector.getProtocolHandler()));
        } catch (ReflectiveOperationException e) {
          throw new IllegalStateException(e);
        }
      };
    }

    @SuppressWarnings("unchecked")
    private static <S> void count(AbstractEndpoint<S, ?> endpoint) {
      Handler<S> handler = endpoint.getHandler();
      endpoint.setHandler((Handler<S>) Proxy.newProxyInstance(Handler.class.getClassLoader(),
          new Class<?>[] {Handler.class}, (proxy, method, args) -> {
            try {
              return method.invoke(handler, args);
            } catch (InvocationTargetException e) {
              throw e.getCause();
            } finally {
              if (method.getName().equals("process") && args[1] == SocketEvent.TIMEOUT) {
                TIMEOUTS.release();
              }
            }
          }));
    }

    private static boolean acquireUninterruptibly(Semaphore semaphore, long millis) {
      long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
      while (!semaphore.tryAcquire()) {
        if (System.nanoTime() > end) {
          return false;
        }
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5));
      }
      return true;
    }

    /** The Coyote processor serving a request: its Coyote request's action hook. */
    private static Processor processorOf(HttpServletRequest request) {
      try {
        Field facade = request.getClass().getDeclaredField("request");
        facade.setAccessible(true);
        org.apache.catalina.connector.Request connector =
            (org.apache.catalina.connector.Request) facade.get(request);
        Field hook = org.apache.coyote.Request.class.getDeclaredField("hook");
        hook.setAccessible(true);
        return (Processor) hook.get(connector.getCoyoteRequest());
      } catch (ReflectiveOperationException e) {
        throw new IllegalStateException(e);
      }
    }
  }
}

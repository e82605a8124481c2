import jakarta.servlet.AsyncContext;
import jakarta.servlet.DispatcherType;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.reflect.Field;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.apache.catalina.Context;
import org.apache.catalina.startup.Tomcat;
import org.apache.coyote.Processor;

/**
 * A plain Tomcat, no Spring and no rate limiter, losing the dispatch of an asynchronous request
 * (bench/notes.md, "A streamed call that never ends").
 *
 * <p>Tomcat's async-timeout sweep (once a second over {@code AbstractProtocol.waitingProcessors},
 * a weakly consistent set) can hold a processor that has since finished its request, been recycled
 * ({@code lastAsyncStart} 0, its {@code asyncTimeout} kept) and taken by the next request on the
 * connection, which has not started async yet: {@code timeoutAsync(now)} then finds {@code now - 0 >
 * asyncTimeout} and raises a TIMEOUT for that cycle. By the time the TIMEOUT event runs, the request
 * has started async (a new cycle), so {@code ConnectionHandler.process} judges it stale and returns
 * at once, after it took the processor from the socket and without putting it back. The request's
 * dispatch then finds no processor on the socket: a new one reads nothing and the connection waits
 * for a next request; the response never ends.
 *
 * <p>This program makes that interleaving happen on purpose: the second request on a keep-alive
 * connection waits before it starts async while the program calls {@code timeoutAsync(now)} on its
 * processor, as the sweep would with a reference it took before the recycle. Its asynchronous task
 * writes an event, flushes and dispatches 300 ms later; the dispatched request ends the response.
 *
 * <pre>
 *   bench/tomcat-lost-dispatch/run [TOMCAT_VERSION] [control]
 * </pre>
 *
 * Prints "LOST" (the response never ended, exit status 1) or "completed"; with "control" the sweep
 * is not simulated and the same requests complete.
 */
public class TomcatLostDispatch {

  private static final CountDownLatch BEFORE_ASYNC = new CountDownLatch(1);
  private static final CountDownLatch GO_ON = new CountDownLatch(1);
  private static volatile Processor processor;

  public static void main(String[] args) throws Exception {
    boolean control = args.length > 0 && args[0].equals("control");
    ExecutorService tasks = Executors.newCachedThreadPool();
    Tomcat tomcat = new Tomcat();
    File base = Files.createTempDirectory("tomcat-lost-dispatch").toFile();
    tomcat.setBaseDir(base.getPath());
    tomcat.setPort(0);
    tomcat.getConnector();
    Context context = tomcat.addContext("", base.getPath());
    Tomcat.addServlet(context, "streaming", new HttpServlet() {
      @Override
      protected void doGet(HttpServletRequest request, HttpServletResponse response) {
        if (request.getDispatcherType() == DispatcherType.ASYNC) {
          return; // the dispatch after the stream: returning ends the response
        }
        if (request.getRequestURI().equals("/stale")) {
          processor = processorOf(request);
          BEFORE_ASYNC.countDown(); // work before the async start (a store's answer, a database call)
          await(GO_ON);
        }
        AsyncContext async = request.startAsync();
        tasks.execute(() -> {
          try {
            TimeUnit.MILLISECONDS.sleep(300);
            response.setContentType("text/event-stream");
            OutputStream out = response.getOutputStream();
            out.write("data: [DONE]\n\n".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            async.dispatch();
          } catch (Exception e) {
            e.printStackTrace();
          }
        });
      }
    }).setAsyncSupported(true);
    context.addServletMappingDecoded("/*", "streaming");
    tomcat.start();
    System.out.println("# " + org.apache.catalina.util.ServerInfo.getServerInfo() + " on port "
        + tomcat.getConnector().getLocalPort() + (control ? " (control: no sweep simulated)" : ""));
    boolean ended;
    try (Socket socket = new Socket("127.0.0.1", tomcat.getConnector().getLocalPort())) {
      socket.setSoTimeout(5000);
      System.out.println("# first call: " + (call(socket, "/warm") ? "completed" : "LOST"));
      Thread.sleep(100); // its processor goes back to the connection handler, which recycles it
      Thread second = new Thread(() -> {
        await(BEFORE_ASYNC);
        if (!control) { // what the sweep does with a reference to a processor it took earlier
          processor.timeoutAsync(System.currentTimeMillis());
        }
        GO_ON.countDown();
      });
      second.start();
      ended = call(socket, "/stale");
      System.out.println("# second call on the same connection: " + (ended ? "completed"
          : "LOST: no end of its chunked body within 5 s (its event came, its dispatch never ran)"));
    }
    tomcat.stop();
    tomcat.destroy();
    tasks.shutdownNow();
    System.exit(ended ? 0 : 1);
  }

  /** Sends a GET on the connection and reads its response to the chunked body's end. */
  private static boolean call(Socket socket, String path) throws Exception {
    OutputStream out = socket.getOutputStream();
    out.write(("GET " + path + " HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .getBytes(StandardCharsets.US_ASCII));
    out.flush();
    InputStream in = socket.getInputStream();
    ByteArrayOutputStream got = new ByteArrayOutputStream();
    byte[] buffer = new byte[4096];
    try {
      while (!got.toString(StandardCharsets.US_ASCII).endsWith("\r\n0\r\n\r\n")) {
        int n = in.read(buffer);
        if (n < 0) {
          return false;
        }
        got.write(buffer, 0, n);
      }
      return true;
    } catch (SocketTimeoutException e) {
      String text = got.toString(StandardCharsets.US_ASCII);
      System.out.println("#   received: " + text.replace("\r", "\\r").replace("\n", "\\n"));
      return false;
    }
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

  private static void await(CountDownLatch latch) {
    try {
      latch.await();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}

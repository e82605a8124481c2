import java.net.URI;
import java.net.http.*;
import java.nio.file.*;
import java.time.Duration;
import java.util.concurrent.*;
import java.util.concurrent.atomic.*;

/**
 * A closed-loop client of a gateway that prints the CPU the gateway process spent per request
 * (utime + stime from /proc/PID/stat), the part spent on its request threads (reactor-http-*,
 * http-nio-*) and on its JIT compiler threads. Used by bench/cpu-ab.
 *
 * <p>java bench/CpuPerRequest.java PORT PID REQUESTS CLIENTS STREAM(true|false) LIMITER(true|false)
 */
public class CpuPerRequest {
  static long cpuTicks(long pid) throws Exception {
    String s = Files.readString(Path.of("/proc/" + pid + "/stat"));
    String[] f = s.substring(s.lastIndexOf(')') + 2).split(" ");
    return Long.parseLong(f[11]) + Long.parseLong(f[12]); // utime, stime (fields 14, 15)
  }
  /** CPU ticks of the process's threads: {request threads, compiler threads}. */
  static long[] threadTicks(long pid) throws Exception {
    long request = 0, jit = 0;
    try (var tasks = Files.list(Path.of("/proc/" + pid + "/task"))) {
      for (Path t : (Iterable<Path>) tasks::iterator) {
        String s;
        try { s = Files.readString(t.resolve("stat")); } catch (Exception e) { continue; }
        String comm = s.substring(s.indexOf('(') + 1, s.lastIndexOf(')'));
        String[] f = s.substring(s.lastIndexOf(')') + 2).split(" ");
        long ticks = Long.parseLong(f[11]) + Long.parseLong(f[12]);
        if (comm.startsWith("reactor-http") || comm.startsWith("http-nio")) request += ticks;
        else if (comm.contains("CompilerThre")) jit += ticks;
      }
    }
    return new long[] {request, jit};
  }
  public static void main(String[] a) throws Exception {
    int port = Integer.parseInt(a[0]); long pid = Long.parseLong(a[1]);
    int n = Integer.parseInt(a[2]); int conc = Integer.parseInt(a[3]);
    boolean stream = Boolean.parseBoolean(a[4]); boolean limiter = Boolean.parseBoolean(a[5]);
    String body = "{\"model\":\"gpt-4o-mini\"," + (stream ? "\"stream\":true,\"stream_options\":{\"include_usage\":true}," : "")
        + "\"messages\":[{\"role\":\"user\",\"content\":\"Say hello to the benchmark.\"}]}";
    HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    HttpRequest[] reqs = new HttpRequest[conc];
    for (int w = 0; w < conc; w++) {
      reqs[w] = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/v1/chat/completions"))
          .timeout(Duration.ofSeconds(20)).header("Content-Type", "application/json")
          .header("Accept", stream ? "text/event-stream" : "application/json")
          .header("Authorization", "Bearer sk-bench-" + w).POST(HttpRequest.BodyPublishers.ofString(body)).build();
    }
    AtomicInteger left = new AtomicInteger(n);
    AtomicReference<Throwable> fail = new AtomicReference<>();
    long[] r0 = threadTicks(pid); long t0 = cpuTicks(pid); long w0 = System.nanoTime();
    Thread[] ts = new Thread[conc];
    for (int w = 0; w < conc; w++) {
      HttpRequest r = reqs[w];
      ts[w] = new Thread(() -> {
        try {
          while (left.getAndDecrement() > 0 && fail.get() == null) {
            HttpResponse<String> resp = http.send(r, HttpResponse.BodyHandlers.ofString());
            if (resp.statusCode() != 200 || resp.body().isEmpty()
                || resp.headers().firstValue("RateLimit").isPresent() != limiter
                || (stream && !resp.body().contains("[DONE]")) || !resp.body().contains("total_tokens")) {
              throw new IllegalStateException(resp.statusCode() + " " + resp.headers().map() + " " + resp.body());
            }
          }
        } catch (Throwable e) { fail.compareAndSet(null, e); }
      });
      ts[w].start();
    }
    for (Thread t : ts) t.join();
    long t1 = cpuTicks(pid); long[] r1 = threadTicks(pid); long w1 = System.nanoTime();
    if (fail.get() != null) { fail.get().printStackTrace(); System.exit(1); }
    System.out.printf("process %.1f us/req, request-threads %.1f us/req, jit %.1f us/req, %.0f req/s%n",
        (t1 - t0) * 10_000.0 / n, (r1[0] - r0[0]) * 10_000.0 / n, (r1[1] - r0[1]) * 10_000.0 / n, n / ((w1 - w0) / 1e9));
  }
}

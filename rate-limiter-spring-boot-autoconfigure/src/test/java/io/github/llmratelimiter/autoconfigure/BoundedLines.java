package io.github.llmratelimiter.autoconfigure;

import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.Stream;

/**
 * The lines of a streamed HTTP response body ({@code BodyHandlers.ofLines()}), read with a bound:
 * a line, or the end of the body, that does not come within {@link #BOUND} fails the test and
 * closes the body, instead of leaving the test waiting on a server that never goes on (a request's
 * {@code timeout} covers the wait for the response's headers only); the stacks of the JVM's threads
 * are printed then.
 */
public final class BoundedLines {

  /** The longest a read waits for the next line or the end of the body. */
  public static final Duration BOUND = Duration.ofSeconds(30);

  private static final ExecutorService READERS = Executors.newCachedThreadPool(read -> {
    Thread thread = new Thread(read, "bounded-lines");
    thread.setDaemon(true);
    return thread;
  });

  private final Stream<String> body;
  private final Iterator<String> lines;

  private BoundedLines(Stream<String> body) {
    this.body = body;
    this.lines = body.iterator();
  }

  /**
   * Returns the lines of a response's body.
   *
   * @param response the response, received with {@code BodyHandlers.ofLines()}
   * @return its lines
   */
  public static BoundedLines of(HttpResponse<Stream<String>> response) {
    return new BoundedLines(response.body());
  }

  /**
   * Returns whether a line follows, once it came or the body ended.
   *
   * @return whether a line follows
   */
  public boolean hasNext() {
    return within("the next line or the end of the body", lines::hasNext);
  }

  /**
   * Returns the next line.
   *
   * @return the line
   */
  public String next() {
    return within("the next line", lines::next);
  }

  /**
   * Returns the lines left, once the body has ended.
   *
   * @return the lines
   */
  public List<String> rest() {
    return within("the end of the body", () -> {
      List<String> rest = new ArrayList<>();
      lines.forEachRemaining(rest::add);
      return rest;
    });
  }

  private static void printThreads() {
    StringBuilder dump = new StringBuilder("Threads when a response stood still for " + BOUND + ":\n");
    Thread.getAllStackTraces().forEach((thread, frames) -> {
      dump.append('"').append(thread.getName()).append("\" ").append(thread.getState()).append('\n');
      for (StackTraceElement frame : frames) {
        dump.append("\tat ").append(frame).append('\n');
      }
    });
    System.err.print(dump);
  }

  private <T> T within(String what, Callable<T> read) {
    Future<T> reading = READERS.submit(read);
    try {
      return reading.get(BOUND.toMillis(), TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      printThreads(); // what the server's threads are doing while the response stands still
      reading.cancel(true);
      body.close();
      throw new AssertionError(what + " of the response did not come within " + BOUND, e);
    } catch (ExecutionException e) {
      if (e.getCause() instanceof RuntimeException failure) {
        throw failure;
      }
      throw new AssertionError(e.getCause());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      body.close();
      throw new AssertionError("interrupted while waiting for " + what, e);
    }
  }
}

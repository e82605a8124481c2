package io.github.llmratelimiter.autoconfigure.tomcat;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.apache.coyote.Processor;
import org.apache.tomcat.util.net.AbstractEndpoint.Handler;
import org.apache.tomcat.util.net.SocketEvent;
import org.apache.tomcat.util.net.SocketWrapperBase;

/**
 * A Tomcat connection handler that hands every socket event to Tomcat's own and, after a {@link
 * SocketEvent#TIMEOUT} that Tomcat dropped as stale, puts back on the connection the asynchronous
 * processor that event took from it.
 *
 * <p>Tomcat's async-timeout sweep can raise a timeout for a request that is already over: the
 * processor it holds has been recycled (its start time reset, its timeout kept) and taken by the
 * next request on the connection, which has not started async yet. When that event runs, the next
 * request has started async, so Tomcat judges the event stale and returns, having taken the
 * processor off the connection without putting it back. The request's dispatch then finds no
 * processor: its response never ends, and nothing times it out. This handler runs under the same
 * connection lock as Tomcat's and restores the processor only in that case (a stale timeout: the
 * connection holds no processor afterwards, and the one it held is still in an asynchronous cycle),
 * which makes the event the no-op Tomcat meant it to be, and logs it at {@code INFO}.
 *
 * @param <S> the endpoint's socket type
 */
final class ProcessorKeepingHandler<S> implements Handler<S> {

  private static final Log LOG = LogFactory.getLog(ProcessorKeepingHandler.class);

  private final Handler<S> tomcat;

  ProcessorKeepingHandler(Handler<S> tomcat) {
    this.tomcat = tomcat;
  }

  @Override
  public SocketState process(SocketWrapperBase<S> socket, SocketEvent status) {
    if (status != SocketEvent.TIMEOUT || socket == null) {
      return tomcat.process(socket, status);
    }
    Object held = socket.getCurrentProcessor();
    SocketState state = tomcat.process(socket, status);
    if (state == SocketState.OPEN && held instanceof Processor processor && processor.isAsync()
        && socket.getCurrentProcessor() == null && !socket.isClosed()) {
      socket.setCurrentProcessor(processor);
      LOG.info("Tomcat dropped a stale async timeout and, with it, the processor of the asynchronous"
          + " request on its connection; the processor is back, so the request's dispatch runs");
    }
    return state;
  }

  @Override
  public Object getGlobal() {
    return tomcat.getGlobal();
  }

  @Override
  public void release(SocketWrapperBase<S> socketWrapper) {
    tomcat.release(socketWrapper);
  }

  @Override
  public void pause() {
    tomcat.pause();
  }

  @Override
  public void recycle() {
    tomcat.recycle();
  }
}

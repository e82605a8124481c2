package io.github.llmratelimiter.autoconfigure.tomcat;

import java.lang.reflect.Method;
import org.apache.catalina.connector.Connector;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.apache.coyote.AbstractProtocol;
import org.apache.tomcat.util.net.AbstractEndpoint;
import org.apache.tomcat.util.net.AbstractEndpoint.Handler;
import org.springframework.boot.tomcat.TomcatConnectorCustomizer;

/**
 * Installs a {@link ProcessorKeepingHandler} in front of a Tomcat connector's connection handler,
 * so that an async timeout raised for an earlier request cannot lose the dispatch of the
 * asynchronous request that follows it on the connection (a streamed response whose end never
 * comes). A connector whose protocol is not one of Tomcat's own, or a Tomcat whose internals
 * differ, is left as it is, with a warning.
 */
final class AsyncTimeoutGuard implements TomcatConnectorCustomizer {

  private static final Log LOG = LogFactory.getLog(AsyncTimeoutGuard.class);

  @Override
  public void customize(Connector connector) {
    if (!(connector.getProtocolHandler() instanceof AbstractProtocol<?> protocol)) {
      return; // not Tomcat's connection handling
    }
    try {
      Method endpoint = AbstractProtocol.class.getDeclaredMethod("getEndpoint");
      endpoint.setAccessible(true);
      guard((AbstractEndpoint<?, ?>) endpoint.invoke(protocol));
    } catch (ReflectiveOperationException | RuntimeException e) {
      LOG.warn("Tomcat's connection handler of " + connector + " is left unguarded: an async"
          + " timeout of an earlier request can lose an asynchronous request's dispatch (" + e + ")");
    }
  }

  private static <S> void guard(AbstractEndpoint<S, ?> endpoint) {
    Handler<S> handler = endpoint.getHandler();
    if (handler != null && !(handler instanceof ProcessorKeepingHandler<S>)) {
      endpoint.setHandler(new ProcessorKeepingHandler<>(handler));
    }
  }
}

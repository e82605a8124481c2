package io.github.llmratelimiter.sample;

import org.apache.catalina.Valve;
import org.apache.catalina.core.StandardHost;
import org.apache.catalina.valves.ErrorReportValve;
import org.springframework.boot.web.server.WebServerFactoryCustomizer;
import org.springframework.boot.tomcat.servlet.TomcatServletWebServerFactory;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.Ordered;

/** Puts {@link ProblemErrorReportValve} in place of Tomcat's HTML error report on every host. */
@Configuration(proxyBeanMethods = false)
class TomcatProblemConfiguration {

  @Bean
  WebServerFactoryCustomizer<TomcatServletWebServerFactory> problemErrorReport() {
    return new ProblemErrorReport();
  }

  /** Runs after Spring Boot's own customizers, so that its error report valve is replaced too. */
  private static final class ProblemErrorReport
      implements WebServerFactoryCustomizer<TomcatServletWebServerFactory>, Ordered {

    @Override
    public void customize(TomcatServletWebServerFactory factory) {
      factory.addContextCustomizers(context -> {
        if (context.getParent() instanceof StandardHost host) {
          // the host adds a valve of this class when it starts, unless it already holds one
          host.setErrorReportValveClass(ProblemErrorReportValve.class.getName());
        }
        var pipeline = context.getParent().getPipeline();
        for (Valve v : pipeline.getValves()) {
          if (v instanceof ErrorReportValve) {
            pipeline.removeValve(v);
          }
        }
        pipeline.addValve(new ProblemErrorReportValve());
      });
    }

    @Override
    public int getOrder() {
      return Ordered.LOWEST_PRECEDENCE;
    }
  }
}

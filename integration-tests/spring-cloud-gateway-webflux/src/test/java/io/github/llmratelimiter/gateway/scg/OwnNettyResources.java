package io.github.llmratelimiter.gateway.scg;

import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.http.client.ReactorResourceFactory;

/**
 * Reactor Netty resources of one application's own, for an application a test starts and closes
 * beside the cached test contexts in the same JVM: with Spring Boot's default (the global
 * resources), closing it would dispose the event loops the other applications' servers run on.
 */
@Configuration(proxyBeanMethods = false)
class OwnNettyResources {

  @Bean
  ReactorResourceFactory reactorResourceFactory() {
    ReactorResourceFactory factory = new ReactorResourceFactory();
    factory.setUseGlobalResources(false);
    return factory;
  }
}

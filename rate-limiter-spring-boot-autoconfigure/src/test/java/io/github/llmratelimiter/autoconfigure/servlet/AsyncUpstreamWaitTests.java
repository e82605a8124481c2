package io.github.llmratelimiter.autoconfigure.servlet;

import static org.assertj.core.api.Assertions.assertThat;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.post;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.header;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.jsonPath;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.status;

import io.github.llmratelimiter.autoconfigure.TestGateway;
import io.github.llmratelimiter.gateway.RateLimitContext;
import io.github.llmratelimiter.gateway.RateLimitGateway;
import jakarta.servlet.DispatcherType;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.http.MediaType;
import org.springframework.mock.web.MockHttpServletRequest;
import org.springframework.test.web.servlet.MockMvc;
import org.springframework.test.web.servlet.MvcResult;
import org.springframework.test.web.servlet.request.MockHttpServletRequestBuilder;
import org.springframework.test.web.servlet.setup.MockMvcBuilders;
import org.springframework.web.context.WebApplicationContext;

/**
 * A routed call on Spring MVC whose upstream is busy: it goes into the servlet's asynchronous mode
 * only when its policy waits and its charge is not decided at once, and passes through the handler
 * when the request is dispatched again; a call of a policy without {@code max-wait}, and a call
 * admitted at once, stay on their thread.
 */
class AsyncUpstreamWaitTests {

  private static final String KEY = "sk-test-0123456789abcd";
  private static final String BODY = "{\"model\":\"gpt-4o-mini\",\"max_tokens\":10}";

  private final WebApplicationContextRunner runner = new WebApplicationContextRunner()
      .withConfiguration(TestGateway.MVC)
      .withUserConfiguration(TestGateway.class)
      .withPropertyValues(
          "ratelimiter.policies.chat.rpm.limit=100",
          "ratelimiter.policies.chat.max-wait=10s",
          "ratelimiter.policies.routed.rpm.limit=100",
          "ratelimiter.policies.annotated.rpm.limit=100",
          "ratelimiter.upstreams.stand-in.concurrency=1",
          "ratelimiter.upstreams.stand-in.models=gpt-4o*",
          "ratelimiter.web.routes[0].include=/v1/chat",
          "ratelimiter.web.routes[0].policy=chat",
          "ratelimiter.web.routes[1].include=/v1/**",
          "ratelimiter.web.routes[1].policy=routed");

  private static MockHttpServletRequestBuilder chat(String path) {
    return post(path).header("X-API-Key", KEY).contentType(MediaType.APPLICATION_JSON).content(BODY);
  }

  @Test
  void onlyACallThatWaitsGoesAsynchronousAndItsHandlerRunsWhenItIsDispatchedAgain() {
    runner.run(context -> {
      assertThat(context).hasNotFailed();
      WebApplicationContext web = (WebApplicationContext) context.getSourceApplicationContext();
      // no usage filter here: the first call keeps the upstream's one slot until the test ends it
      MockMvc mvc = MockMvcBuilders.webAppContextSetup(web)
          .addFilters(context.getBean(ModelPeekingFilter.class)).build();
      RateLimitGateway gateway = context.getBean(RateLimitGateway.class);

      MvcResult first = mvc.perform(chat("/v1/chat")).andExpect(status().isOk()).andReturn();
      assertThat(first.getRequest().isAsyncStarted()).as("admitted at once").isFalse();

      MvcResult plain = mvc.perform(chat("/v1/chat-plain"))
          .andExpect(status().isTooManyRequests())
          .andExpect(jsonPath("$.reason").value("UPSTREAM_LIMIT")).andReturn();
      assertThat(plain.getRequest().isAsyncStarted()).as("its policy never waits").isFalse();

      MvcResult waiting = mvc.perform(chat("/v1/chat")).andReturn();
      MockHttpServletRequest request = waiting.getRequest();
      assertThat(request.isAsyncStarted()).as("it waits for the upstream").isTrue();
      assertThat(request.getAsyncContext().getTimeout())
          .isEqualTo(TimeUnit.SECONDS.toMillis(10) + AsyncUpstreamWait.MARGIN.toMillis());
      assertThat(request.getAttribute(AsyncUpstreamWait.ATTRIBUTE)).isNull();

      gateway.finishUsage((RateLimitContext) first.getRequest().getAttribute(ServletContexts.ATTRIBUTE),
          null, false); // the first call ends: its slot is free
      Awaitility.await("decided").atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(5))
          .until(() -> request.getAttribute(AsyncUpstreamWait.ATTRIBUTE) != null);

      // a container dispatches the filters' wrappers, which replay the body; MockMvc dispatches
      // the request itself, whose body the limiter read: it gets its body again
      request.setContent(BODY.getBytes(java.nio.charset.StandardCharsets.UTF_8));
      request.setDispatcherType(DispatcherType.ASYNC);
      request.setAsyncStarted(false);
      mvc.perform(servletContext -> request)
          .andExpect(status().isOk())
          .andExpect(jsonPath("$.echo").value("gpt-4o-mini"))
          .andExpect(header().exists("RateLimit"));
      assertThat(request.getAttribute(AsyncUpstreamWait.ATTRIBUTE)).as("read once").isNull();
    });
  }
}

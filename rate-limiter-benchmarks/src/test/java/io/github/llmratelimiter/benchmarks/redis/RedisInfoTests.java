package io.github.llmratelimiter.benchmarks.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;

import org.junit.jupiter.api.Test;

class RedisInfoTests {

  private static final String COMMANDSTATS = "# Commandstats\r\n"
      + "cmdstat_eval:calls=2,usec=40,usec_per_call=20.00,rejected_calls=0,failed_calls=0\r\n"
      + "cmdstat_evalsha:calls=12345,usec=98765,usec_per_call=8.00,rejected_calls=0,failed_calls=0\r\n"
      + "cmdstat_zadd:calls=12345,usec=1000,usec_per_call=0.08,rejected_calls=0,failed_calls=0\r\n";

  @Test
  void callsAreReadPerCommandAndZeroWhenNeverCalled() {
    assertThat(RedisInfo.calls(COMMANDSTATS, "EVALSHA")).isEqualTo(12345);
    assertThat(RedisInfo.calls(COMMANDSTATS, "eval")).isEqualTo(2);
    assertThat(RedisInfo.calls(COMMANDSTATS, "ping")).isZero();
  }

  @Test
  void timeAndTotalCallsAreReadFromCommandstats() {
    assertThat(RedisInfo.usec(COMMANDSTATS, "evalsha")).isEqualTo(98765);
    assertThat(RedisInfo.usec(COMMANDSTATS, "ping")).isZero();
    assertThat(RedisInfo.totalCalls(COMMANDSTATS)).isEqualTo(2 + 12345 + 12345);
  }

  @Test
  void cpuFieldsAreParsed() {
    String cpu = "# CPU\r\nused_cpu_sys:1.250000\r\nused_cpu_user:2.500000\r\n";
    assertThat(RedisInfo.field(cpu, "used_cpu_sys") + RedisInfo.field(cpu, "used_cpu_user"))
        .isEqualTo(3.75);
    assertThatIllegalStateException().isThrownBy(() -> RedisInfo.field(cpu, "used_cpu_sys_children"));
  }

  @Test
  void binaryNamesAreThoseEmbeddedRedisShips() {
    assertThat(RedisServer.binaryName("Linux", "amd64")).isEqualTo("redis-server-6.2.6-v5-linux-amd64");
    assertThat(RedisServer.binaryName("Linux", "aarch64")).isEqualTo("redis-server-6.2.7-linux-arm64");
    assertThat(RedisServer.binaryName("Mac OS X", "aarch64")).isEqualTo("redis-server-6.2.6-v5-darwin-arm64");
    assertThat(RedisServer.class.getClassLoader()
        .getResource(RedisServer.binaryName(System.getProperty("os.name"), System.getProperty("os.arch"))))
        .isNotNull();
  }
}

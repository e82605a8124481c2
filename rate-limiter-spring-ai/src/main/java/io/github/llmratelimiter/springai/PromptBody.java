package io.github.llmratelimiter.springai;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.springframework.ai.chat.messages.AssistantMessage;
import org.springframework.ai.chat.messages.Message;
import org.springframework.ai.chat.messages.ToolResponseMessage;
import org.springframework.ai.chat.prompt.ChatOptions;
import org.springframework.ai.chat.prompt.Prompt;
import org.springframework.ai.model.tool.ToolCallingChatOptions;
import org.springframework.ai.tool.ToolCallback;
import org.springframework.ai.tool.definition.ToolDefinition;

/**
 * A prompt as the OpenAI chat request body the web front doors estimate: {@code messages} (each
 * with its role, text, tool calls and tool results), {@code tools} (each tool's name, description
 * and input schema) and {@code max_tokens} from the options, so that a {@code ChatClient} call is
 * estimated by the same {@code ModelTokenEstimator} rule as the same request over HTTP.
 */
final class PromptBody {

  private PromptBody() {}

  static Map<String, Object> of(Prompt prompt) {
    Map<String, Object> body = new HashMap<>();
    List<Object> messages = new ArrayList<>();
    for (Message m : prompt.getInstructions()) {
      Map<String, Object> message = new HashMap<>();
      message.put("role", m.getMessageType().getValue());
      String text = m.getText();
      if (text != null) {
        message.put("content", text);
      }
      if (m instanceof AssistantMessage a && a.hasToolCalls()) {
        List<Object> calls = new ArrayList<>();
        for (AssistantMessage.ToolCall call : a.getToolCalls()) {
          calls.add(Map.of("name", call.name(), "arguments", call.arguments()));
        }
        message.put("tool_calls", calls);
      }
      if (m instanceof ToolResponseMessage t) {
        List<Object> results = new ArrayList<>();
        for (ToolResponseMessage.ToolResponse r : t.getResponses()) {
          results.add(r.responseData());
        }
        message.put("tool_results", results);
      }
      messages.add(message);
    }
    body.put("messages", messages);
    ChatOptions options = prompt.getOptions();
    if (options != null) {
      if (options.getMaxTokens() != null) {
        body.put("max_tokens", options.getMaxTokens());
      }
      if (options instanceof ToolCallingChatOptions tools && tools.getToolCallbacks() != null
          && !tools.getToolCallbacks().isEmpty()) {
        List<Object> definitions = new ArrayList<>();
        for (ToolCallback callback : tools.getToolCallbacks()) {
          ToolDefinition d = callback.getToolDefinition();
          definitions.add(Map.of("name", d.name(), "description", d.description(),
              "parameters", d.inputSchema()));
        }
        body.put("tools", definitions);
      }
    }
    return body;
  }
}

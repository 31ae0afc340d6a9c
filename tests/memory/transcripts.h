// Generated transcripts for the memory tests: a coding agent's session, and the two shapes that
// are worst for the objects around the text (many messages, many blocks).
#pragma once

#include <cstddef>
#include <string>

namespace harness {

// A coding agent's session of about `bytes` bytes, in the shape of examples/transcripts: user
// requests, assistant text with a tool call, tool output of twenty lines. `indent` pretty-prints
// it as the examples are.
inline std::string CodingSession(std::size_t bytes, bool indent) {
  const std::string nl = indent ? "\n  " : "";
  const std::string words =
      "the retry client sends the request again after a backoff with jitter when the server "
      "answers 429 or 503 and the connection pool hands out a fresh connection ";
  std::string out = "[" + nl + R"({"role":"system","blocks":[{"type":"text","text":"You are a )" +
                    R"(coding agent."}]})";
  for (std::size_t i = 0; out.size() < bytes; ++i) {
    const std::string n = std::to_string(i);
    out += "," + nl + R"({"role":"user","blocks":[{"type":"text","text":"Step )" + n + ": " +
           words + "\"}]}";
    out += "," + nl + R"({"role":"assistant","blocks":[)" + nl + R"({"type":"text","text":")" +
           words + words + "\"}," + nl + R"({"type":"tool_use","id":"call-)" + n +
           R"(","name":"read_file","input":{"path":"src/net/file)" + n +
           R"(.cc","lines":[1, 200]}}],)" + nl +
           R"("usage":{"input_tokens":1000,"output_tokens":64,"cache_read_tokens":0,)" +
           R"("cache_creation_tokens":0,"reasoning_tokens":0}})";
    std::string output;
    for (int line = 0; line < 20; ++line)
      output += "// line " + std::to_string(line) + ": " + words.substr(0, 60) + "\\n";
    out += "," + nl + R"({"role":"tool","blocks":[{"type":"text","text":")" + output +
           R"("}],"tool_use_id":"call-)" + n + R"(","is_error":false})";
  }
  out += nl + "]";
  return out;
}

// The worst shapes for the objects around the text: about `bytes` bytes of user and assistant
// messages of one short text block each ("many messages"), or of messages of a thousand short
// text blocks each ("many blocks").
inline std::string ManyMessages(std::size_t bytes) {
  std::string out = "[";
  for (std::size_t i = 0; out.size() < bytes; ++i) {
    const std::string n = std::to_string(i);
    out += (i == 0 ? "" : ",") +
           std::string(R"({"role":"user","blocks":[{"type":"text","text":"q)") + n +
           R"("}]},{"role":"assistant","blocks":[{"type":"text","text":"a)" + n +
           R"("}],"usage":null})";
  }
  return out + "]";
}

inline std::string ManyBlocks(std::size_t bytes) {
  std::string blocks;
  for (int i = 0; i < 1000; ++i)
    blocks += (i == 0 ? "" : ",") + std::string(R"({"type":"text","text":"b)") + std::to_string(i) +
              "\"}";
  std::string out = "[";
  for (std::size_t i = 0; out.size() < bytes; ++i) {
    out += (i == 0 ? "" : ",") + std::string(R"({"role":"user","blocks":[)") + blocks +
           R"(]},{"role":"assistant","blocks":[)" + blocks + R"(],"usage":null})";
  }
  return out + "]";
}

}  // namespace harness

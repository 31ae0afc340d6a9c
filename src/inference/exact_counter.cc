// ExactLocalCounter (counter.h): a request in the OpenAI chat format's framing, counted with a
// local BpeTokenizer.
#include <fmt/format.h>

#include "harness/content/codec.h"
#include "harness/core/json.h"
#include "harness/inference/counter.h"

namespace harness {
namespace {

CountError FromTokenizer(const TokenizerError& error) {
  if (error.kind == TokenizerErrorKind::kCanceled)
    return CountError{CountErrorKind::kCanceled, ""};
  return CountError{CountErrorKind::kFailed, error.Message()};
}

// The codec's JSON of one block: the encoding of a user message holding only that block,
// without the message's own framing ({"role":"user","blocks":[ … ]}, content/codec.h).
Result<std::string, CountError> BlockJson(const Block& block, std::size_t message_index) {
  auto encoded = EncodeMessage(UserMessage{{block}});
  if (!encoded.ok()) {
    return Fail(CountError{CountErrorKind::kFailed,
                           fmt::format("a block of message {} does not encode ({})", message_index,
                                       encoded.error().path)});
  }
  constexpr std::string_view kPrefix = R"({"role":"user","blocks":[)";
  constexpr std::string_view kSuffix = "]}";
  std::string json = std::move(encoded).value();
  return json.substr(kPrefix.size(), json.size() - kPrefix.size() - kSuffix.size());
}

std::string ToolJson(const ToolDefinition& tool) {
  std::string json(R"({"type":"function","function":{"name":)");
  AppendJsonString(json, tool.name);
  json.append(R"(,"description":)");
  AppendJsonString(json, tool.description);
  json.append(R"(,"parameters":)");
  json.append(tool.input_schema);
  json.append("}}");
  return json;
}

}  // namespace

ExactLocalCounter::ExactLocalCounter(std::shared_ptr<const BpeTokenizer> tokenizer)
    : tokenizer_(std::move(tokenizer)) {}

Result<ContextCount, CountError> ExactLocalCounter::Count(const InferenceRequest& request,
                                                          std::stop_token stop) {
  const BpeTokenizer& tokenizer = *tokenizer_;
  const auto count = [&](std::string_view text) -> Result<TokenCount, CountError> {
    if (stop.stop_requested())
      return Fail(CountError{CountErrorKind::kCanceled, ""});
    auto n = tokenizer.Count(text, stop);
    if (!n.ok())
      return Fail(FromTokenizer(n.error()));
    return *n;
  };
  TokenCount total = kReplyPrimingTokens;
  if (!request.system.empty()) {
    HARNESS_TRY(const TokenCount role, count(RoleName(Role::kSystem)));
    HARNESS_TRY(const TokenCount text, count(request.system));
    total += kTokensPerMessage + role + text;
  }
  for (std::size_t i = 0; i < request.messages.size(); ++i) {
    const Message& message = request.messages[i];
    HARNESS_TRY(const TokenCount role, count(RoleName(message.role())));
    total += kTokensPerMessage + role;
    for (const Block& block : message.blocks()) {
      if (const auto* text = block.as<TextBlock>()) {
        HARNESS_TRY(const TokenCount n, count(text->text));
        total += n;
      } else if (const auto* refusal = block.as<RefusalBlock>()) {
        HARNESS_TRY(const TokenCount n, count(refusal->text));
        total += n;
      } else if (block.as<ImageBlock>() != nullptr) {
        // Billed by its pixels after the provider's downscaling, never by its base64.
        total += kImageTokenEstimate;
      } else {
        HARNESS_TRY(const std::string json, BlockJson(block, i));
        HARNESS_TRY(const TokenCount n, count(json));
        total += n;
      }
    }
  }
  for (const ToolDefinition& tool : request.tools) {
    HARNESS_TRY(const TokenCount n, count(ToolJson(tool)));
    total += n;
  }
  return ContextCount{request.model, total, CountQuality::kExactLocal};
}

}  // namespace harness

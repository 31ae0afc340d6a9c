// libFuzzer target: arbitrary bytes as a compacted span for the anchor extractor and the
// coverage check (compaction/anchors.h).
//
// The input is split at NUL bytes into messages whose roles cycle user, assistant, tool (a
// message starting with '{' after an assistant is also given as a shell tool call's input, so
// the JSON path is reached); the first byte chooses whether the head holds the current request.
// Invariants checked (abort on violation):
// - extraction is deterministic, within its bounds (per class count, per anchor bytes), and no
//   anchor looks like a secret or is empty;
// - the coverage report against the input as a summary is valid (compaction/coverage.h), counts
//   every anchor once, and is deterministic.
// Seeds: fuzz/corpus/anchors/.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "harness/compaction/anchors.h"

namespace {

void Require(bool condition) {
  if (!condition)
    std::abort();
}

std::vector<harness::Message> Messages(std::string_view input) {
  using namespace harness;
  std::vector<Message> out;
  std::size_t index = 0;
  while (!input.empty()) {
    const std::size_t nul = input.find('\0');
    const std::string text(input.substr(0, nul));
    switch (index++ % 3) {
      case 0:
        out.emplace_back(UserMessage{{TextBlock{text}}});
        break;
      case 1: {
        AssistantMessage assistant{{TextBlock{text}}, std::nullopt};
        if (!text.empty() && text.front() == '{')
          assistant.blocks.emplace_back(ToolUseBlock{"id", "bash", text, {}, {}});
        out.emplace_back(std::move(assistant));
        break;
      }
      default: {
        ToolResultMessage tool;
        tool.blocks.emplace_back(TextBlock{text});
        tool.tool_use_id = "id";
        out.emplace_back(std::move(tool));
      }
    }
    if (nul == std::string_view::npos)
      break;
    input.remove_prefix(nul + 1);
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace harness;
  if (size == 0)
    return 0;
  const bool request_in_head = (data[0] & 1) != 0;
  const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  const std::vector<Message> head = Messages(input);

  const std::vector<Anchor> anchors = ExtractAnchors(head, request_in_head);
  Require(anchors == ExtractAnchors(head, request_in_head));
  std::size_t per_class[kMaxAnchorClass + 1] = {};
  for (const Anchor& anchor : anchors) {
    Require(IsValid(anchor.anchor_class));
    const auto c = static_cast<std::size_t>(anchor.anchor_class);
    Require(++per_class[c] <= kMaxAnchorsPerClass[c]);
    const std::size_t max = anchor.anchor_class == AnchorClass::kRequest ? kMaxRequestAnchorBytes
                            : anchor.anchor_class == AnchorClass::kConstraint
                                ? kMaxConstraintAnchorBytes
                                : kMaxAnchorBytes;
    Require(!anchor.text.empty() && anchor.text.size() <= max);
    Require(!LooksLikeSecret(anchor.text));
  }

  const std::vector<Message> retained(head.begin() + static_cast<std::ptrdiff_t>(head.size() / 2),
                                      head.end());
  const CoverageReport report = CheckCoverage(anchors, input, retained, kAllAnchorClasses);
  Require(IsValid(report));
  Require(report.total() == anchors.size());
  Require(report == CheckCoverage(anchors, input, retained, kAllAnchorClasses));
  return 0;
}

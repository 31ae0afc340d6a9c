// InvalidSummaryError: why a compactor's summary may not replace any history.
//
// Contract: the reason is one of ten fixed values whose wire names are part of the CLI and event
// contract: wire, identity, output_shape, byte_limit, token_usage, token_limit, xml_syntax,
// xml_root, xml_structure, xml_content. The detail is a short human explanation that never
// renders model output or transcript bytes; offset is the byte offset in the summary (or in the
// envelope for wire errors) where the failure was found, when that is meaningful.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace harness {

enum class InvalidSummaryReason {
  kWire,
  kIdentity,
  kOutputShape,
  kByteLimit,
  kTokenUsage,
  kTokenLimit,
  kXmlSyntax,
  kXmlRoot,
  kXmlStructure,
  kXmlContent,
};

std::string_view InvalidSummaryReasonName(InvalidSummaryReason reason);
std::optional<InvalidSummaryReason> ParseInvalidSummaryReason(std::string_view name);

struct InvalidSummaryError {
  InvalidSummaryReason reason;
  std::string detail;
  std::optional<std::size_t> offset;

  // "invalid compaction summary (<reason>)": the same for every detail, safe to log anywhere.
  std::string Message() const;
};

}  // namespace harness

// What every dialect reader's fuzz target checks (dialect_*_fuzz.cc): reading never crashes and
// is deterministic. On success every message is a valid harness message, there is one element
// per array element and their message ranges are in order and inside the transcript; writing
// every element back verbatim reads as the same conversation; a head written fresh followed by
// the elements from a cut reads as the head and the transcript from that cut; and writing the
// transcript fresh is a fixed point after one normalizing round (write -> read -> write ->
// read -> write: the last two writes are the same text; the first may differ, e.g. a user's
// only part, a file without its bytes, is written as a text part and that text part then as a
// string). On failure the kind is one of the enum's and the error has a path and a rule.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "harness/content/transcript.h"
#include "harness/dialect/dialect.h"

namespace harness::fuzz {

inline Result<std::string, DialectError> WriteFresh(Dialect dialect, const Transcript& head,
                                                    std::span<const DialectElement> retained) {
  switch (dialect) {
    case Dialect::kOpenAiChat:
      return WriteOpenAiChat("", head, retained);
    case Dialect::kOpenAiResponses:
      return WriteOpenAiResponses("", head, retained);
    case Dialect::kAnthropicMessages:
      break;
  }
  return WriteAnthropicMessages(head, retained);
}

inline int CheckDialect(Dialect dialect, const char* target, const std::uint8_t* data,
                        std::size_t size) {
  const FuzzCheck Check{target};
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  DialectLimits limits;
  limits.max_bytes = 1 << 20;
  auto read = ReadDialect(dialect, text, limits);
  auto again = ReadDialect(dialect, text, limits);
  Check(read.ok() == again.ok(), "reading is not deterministic");
  if (!read.ok()) {
    const DialectError& error = read.error();
    Check(!DialectErrorKindName(error.kind).empty(), "an error of no kind");
    Check(!error.path.empty() && error.path[0] == '$', "an error without a path");
    Check(!error.rule.empty() && error.rule.size() < 512, "an error without a short rule");
    Check(error.Describe() == again.error().Describe(), "errors are not deterministic");
    return 0;
  }
  const DialectConversation& conversation = *read;
  Check(conversation.transcript == again->transcript, "transcripts are not deterministic");
  std::size_t last_first = 0;
  for (const DialectElement& element : conversation.elements) {
    Check(element.first_message >= last_first, "elements out of order");
    Check(element.first_message + element.message_count <= conversation.transcript.size(),
          "an element's messages are outside the transcript");
    last_first = element.first_message;
  }
  for (const Message& message : conversation.transcript)
    Check(ValidateMessage(message).ok(), "an invalid message");

  // Verbatim: the elements as sent read as the same conversation.
  auto verbatim = WriteFresh(dialect, {}, conversation.elements);
  Check(verbatim.ok(), "writing the elements verbatim failed");
  auto reread = ReadDialect(dialect, *verbatim, limits);
  Check(reread.ok(), "the verbatim elements do not read back");
  Check(reread->transcript == conversation.transcript, "the verbatim elements read differently");
  Check(reread->elements == conversation.elements, "the verbatim elements changed");

  // A summary head, then the elements from the middle of the transcript on.
  const std::size_t cut = conversation.transcript.size() / 2;
  if (const auto from = ElementStartingAt(conversation, cut)) {
    const Transcript head{UserMessage{{TextBlock{"summary"}}}};
    auto written = WriteFresh(dialect, head, std::span(conversation.elements).subspan(*from));
    Check(written.ok(), "writing a summary head failed");
    auto compacted = ReadDialect(dialect, *written, limits);
    Check(compacted.ok(), "a summary head and retained elements do not read back");
    Check(compacted->transcript.size() == 1 + conversation.transcript.size() - cut,
          "the retained elements read as other messages");
    Check(std::equal(compacted->transcript.begin() + 1, compacted->transcript.end(),
                     conversation.transcript.begin() + static_cast<std::ptrdiff_t>(cut)),
          "the retained elements read differently");
  }

  // Fresh: one round normalizes, the next changes nothing.
  auto fresh = WriteFresh(dialect, conversation.transcript, {});
  if (!fresh.ok()) {
    Check(fresh.error().kind == DialectErrorKind::kUnsupported, "a fresh write failed oddly");
    return 0;
  }
  auto fresh_read = ReadDialect(dialect, *fresh, limits);
  Check(fresh_read.ok(), "a fresh write does not read back");
  auto normalized = WriteFresh(dialect, fresh_read->transcript, {});
  Check(normalized.ok(), "a fresh write of what a fresh write read failed");
  auto normalized_read = ReadDialect(dialect, *normalized, limits);
  Check(normalized_read.ok(), "a normalized write does not read back");
  auto settled = WriteFresh(dialect, normalized_read->transcript, {});
  Check(settled.ok() && *settled == *normalized,
        "a fresh write is not a fixed point after a round");
  return 0;
}

}  // namespace harness::fuzz

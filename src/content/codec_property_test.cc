// Property tests of the content codec: random transcripts round-trip, encoding is a fixed point
// after one decode, and mutated encodings decode or fail with a typed error.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <string>
#include <vector>

#include "content/internal/codec_value.h"
#include "core/internal/json_dom.h"
#include "harness/content/codec.h"

namespace harness {
namespace {

namespace gen = rc::gen;

void AppendUtf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | cp >> 6));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | cp >> 12));
    out.push_back(static_cast<char>(0x80 | (cp >> 6 & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | cp >> 18));
    out.push_back(static_cast<char>(0x80 | (cp >> 12 & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp >> 6 & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// A code point from every UTF-8 length class, control characters and U+2028 included; never a
// surrogate.
rc::Gen<std::uint32_t> CodePoint() {
  return gen::oneOf(gen::inRange<std::uint32_t>(0, 0x20), gen::inRange<std::uint32_t>(0x20, 0x80),
                    gen::inRange<std::uint32_t>(0x80, 0x800),
                    gen::element<std::uint32_t>(0x2028, 0x2029, 0xFEFF, 0xFFFD, 0xFFFF),
                    gen::inRange<std::uint32_t>(0x800, 0xD800),
                    gen::inRange<std::uint32_t>(0xE000, 0x10000),
                    gen::inRange<std::uint32_t>(0x10000, 0x110000));
}

// Valid UTF-8 of up to 12 code points.
rc::Gen<std::string> Utf8Text() {
  return gen::exec([] {
    std::string out;
    const int n = *gen::inRange(0, 13);
    for (int i = 0; i < n; ++i)
      AppendUtf8(out, *CodePoint());
    return out;
  });
}

// Arbitrary bytes of up to 24 bytes (image/audio/document data).
rc::Gen<std::optional<std::string>> Bytes() {
  return gen::exec([]() -> std::optional<std::string> {
    if (*gen::inRange(0, 4) == 0)
      return std::nullopt;
    std::string out;
    const int n = *gen::inRange(0, 25);
    for (int i = 0; i < n; ++i)
      out.push_back(static_cast<char>(*gen::inRange(0, 256)));
    return out;
  });
}

// A JSON string token: characters and escapes of every kind, written compact.
rc::Gen<std::string> JsonStringToken() {
  return gen::exec([] {
    std::string out = "\"";
    const int n = *gen::inRange(0, 8);
    for (int i = 0; i < n; ++i) {
      if (*gen::inRange(0, 3) == 0) {
        out += *gen::element<std::string>("\\\"", "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r", "\\t",
                                          "\\u0041", "\\u00e9", "\\u2028", "\\ud83d\\ude00",
                                          "\\u0000");
        continue;
      }
      const std::uint32_t cp = *CodePoint();
      if (cp < 0x20) {
        out += "\\u001f";
      } else if (cp == '"' || cp == '\\') {
        out += "\\\\";
      } else {
        AppendUtf8(out, cp);
      }
    }
    return out + "\"";
  });
}

// Compact JSON text nested at most `depth` deep, numbers in every lexical form.
rc::Gen<std::string> RawJson(int depth) {
  return gen::exec([depth] {
    const int kind = *gen::inRange(0, depth > 0 ? 7 : 5);
    switch (kind) {
      case 0:
        return *gen::element<std::string>("null", "true", "false");
      case 1:
        return std::to_string(*gen::arbitrary<std::int64_t>());
      case 2:
        return *gen::element<std::string>("-0", "0.10", "1E+2", "1e-7", "-2.50e+3", "1.0",
                                          "18446744073709551616", "123456789012345678901234567890",
                                          "1e300", "0.1e1");
      case 3:
      case 4:
        return *JsonStringToken();
      case 5: {
        std::string out = "[";
        const int n = *gen::inRange(0, 4);
        for (int i = 0; i < n; ++i)
          out += (i ? "," : "") + *RawJson(depth - 1);
        return out + "]";
      }
      default: {
        std::string out = "{";
        const int n = *gen::inRange(0, 4);
        for (int i = 0; i < n; ++i) {
          out += (i ? ",\"k" : "\"k") + std::to_string(i) + "\":" + *RawJson(depth - 1);
        }
        return out + "}";
      }
    }
  });
}

// A tool_use input: absent or any value but `null` (which the wire cannot tell from absent).
rc::Gen<std::optional<std::string>> ToolInput() {
  return gen::exec([]() -> std::optional<std::string> {
    if (*gen::inRange(0, 4) == 0)
      return std::nullopt;
    std::string raw = *RawJson(3);
    if (raw == "null")
      raw = "{}";
    return raw;
  });
}

rc::Gen<std::optional<std::string>> ProviderState() {
  return gen::exec([]() -> std::optional<std::string> {
    if (*gen::inRange(0, 2) == 0)
      return std::nullopt;
    return *RawJson(2);
  });
}

rc::Gen<std::vector<Block>> Blocks(int depth);

rc::Gen<Block> AnyBlock(int depth) {
  return gen::exec([depth]() -> Block {
    switch (*gen::inRange(0, depth > 0 ? 8 : 7)) {
      case 0:
        return TextBlock{*Utf8Text()};
      case 1:
        return RefusalBlock{*Utf8Text()};
      case 2:
        return ImageBlock{*Utf8Text(), *Utf8Text(), *Bytes()};
      case 3:
        return AudioBlock{*Utf8Text(), *Bytes()};
      case 4:
        return DocumentBlock{*Utf8Text(), *Utf8Text(), *Bytes(), *Utf8Text()};
      case 5:
        return ThinkingBlock{*Utf8Text(), *Utf8Text(), *Utf8Text(), *ProviderState(), *Utf8Text()};
      case 6:
        return ToolUseBlock{*Utf8Text(), *Utf8Text(), *ToolInput(), *ProviderState(), *Utf8Text()};
      default:
        return ToolResultBlock{*Utf8Text(), *Blocks(depth - 1), *gen::arbitrary<bool>()};
    }
  });
}

rc::Gen<std::vector<Block>> Blocks(int depth) {
  return gen::exec([depth] {
    std::vector<Block> blocks;
    const int n = *gen::inRange(0, 4);
    for (int i = 0; i < n; ++i)
      blocks.push_back(*AnyBlock(depth));
    return blocks;
  });
}

rc::Gen<Message> AnyMessage() {
  return gen::exec([]() -> Message {
    const auto blocks = *Blocks(3);
    switch (*gen::inRange(0, 4)) {
      case 0:
        return UserMessage{blocks};
      case 1:
        return SystemMessage{blocks};
      case 2: {
        std::optional<Usage> usage;
        if (*gen::arbitrary<bool>()) {
          usage = Usage{*gen::arbitrary<std::uint64_t>(), *gen::arbitrary<std::uint64_t>(),
                        *gen::arbitrary<std::uint64_t>(), *gen::arbitrary<std::uint64_t>(),
                        *gen::arbitrary<std::uint64_t>()};
        }
        return AssistantMessage{blocks, usage};
      }
      default:
        return ToolResultMessage{blocks, *Utf8Text(), *gen::arbitrary<bool>()};
    }
  });
}

rc::Gen<Transcript> AnyTranscript() {
  return gen::exec([] {
    Transcript t;
    const int n = *gen::inRange(1, 6);
    for (int i = 0; i < n; ++i)
      t.push_back(*AnyMessage());
    return t;
  });
}

// Non-canonical variants the encoder must still map to bytes the decoder reads: invalid UTF-8,
// raw JSON with white space, a present `null` input, an empty provider state.
rc::Gen<Transcript> MessyTranscript() {
  return gen::exec([] {
    Transcript t = *AnyTranscript();
    const std::string junk = *gen::arbitrary<std::string>();
    const std::string spaced = " \n" + *RawJson(2) + "\t ";
    t.push_back(
        AssistantMessage{{TextBlock{junk}, ToolUseBlock{junk, "n", spaced, std::string(), junk},
                          ToolUseBlock{"i", junk, std::string("null"), std::nullopt, ""},
                          ThinkingBlock{junk, "", junk, std::string(" [ ] "), ""}},
                         std::nullopt});
    return t;
  });
}

RC_GTEST_PROP(CodecProperty, EncodeThenDecodeIsIdentity, ()) {
  const Transcript t = *AnyTranscript();
  const auto encoded = EncodeTranscript(t);
  RC_ASSERT(encoded.ok());
  const auto decoded = DecodeTranscript(*encoded);
  if (!decoded.ok())
    RC_FAIL(decoded.error().Describe() + " in " + *encoded);
  RC_ASSERT(*decoded == t);
  RC_ASSERT(EncodeTranscript(*decoded).value() == *encoded);
  for (const Message& m : t) {
    const auto one = DecodeMessage(EncodeMessage(m).value());
    RC_ASSERT(one.ok());
    RC_ASSERT(*one == m);
  }
}

RC_GTEST_PROP(CodecProperty, EncodingIsAFixedPointAfterOneDecode, ()) {
  const Transcript t = *MessyTranscript();
  const auto encoded = EncodeTranscript(t);
  RC_ASSERT(encoded.ok());
  const auto decoded = DecodeTranscript(*encoded);
  if (!decoded.ok())
    RC_FAIL(decoded.error().Describe());
  RC_ASSERT(EncodeTranscript(*decoded).value() == *encoded);
}

// Raw JSON texts that parse to equal values (numbers compared by value).
bool SameJsonValue(const std::optional<std::string>& a, const std::optional<std::string>& b) {
  if (!a || !b)
    return a.has_value() == b.has_value();
  if (a->empty() || b->empty())
    return a->empty() && b->empty();
  return ParseStrictJson(*a).value() == ParseStrictJson(*b).value();
}

bool SameExceptRawText(const std::vector<Block>& a, const std::vector<Block>& b) {
  if (a.size() != b.size())
    return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (const auto* x = a[i].as<ToolUseBlock>()) {
      const auto* y = b[i].as<ToolUseBlock>();
      if (y == nullptr || x->id != y->id || x->name != y->name ||
          x->provider_state_format != y->provider_state_format ||
          !SameJsonValue(x->input, y->input) ||
          !SameJsonValue(x->provider_state, y->provider_state)) {
        return false;
      }
    } else if (const auto* x = a[i].as<ThinkingBlock>()) {
      const auto* y = b[i].as<ThinkingBlock>();
      if (y == nullptr || x->thinking != y->thinking || x->signature != y->signature ||
          x->signature_format != y->signature_format ||
          x->provider_state_format != y->provider_state_format ||
          !SameJsonValue(x->provider_state, y->provider_state)) {
        return false;
      }
    } else if (const auto* x = a[i].as<ToolResultBlock>()) {
      const auto* y = b[i].as<ToolResultBlock>();
      if (y == nullptr || x->tool_use_id != y->tool_use_id || x->is_error != y->is_error ||
          !SameExceptRawText(x->content, y->content)) {
        return false;
      }
    } else if (!(a[i] == b[i])) {
      return false;
    }
  }
  return true;
}

// The DOM path loses raw JSON's lexical form but nothing else.
RC_GTEST_PROP(CodecProperty, DomDecodingAgreesWithTextDecodingUpToRawJsonLexicalForm, ()) {
  const Transcript t = *AnyTranscript();
  const std::string encoded = EncodeTranscript(t).value();
  const auto dom = DecodeTranscriptValue(ParseStrictJson(encoded).value(), "$");
  if (!dom.ok())
    RC_FAIL(dom.error().Describe());
  RC_ASSERT(dom->size() == t.size());
  for (std::size_t i = 0; i < t.size(); ++i) {
    RC_ASSERT(dom->at(i).role() == t[i].role());
    RC_ASSERT(SameExceptRawText(dom->at(i).blocks(), t[i].blocks()));
  }
  // And what it produces is a fixed point of the text path.
  const std::string reencoded = EncodeTranscript(*dom).value();
  RC_ASSERT(EncodeTranscript(DecodeTranscript(reencoded).value()).value() == reencoded);
  // And of the DOM path itself (what a wire decoder built on DecodeTranscriptValue relies on).
  const auto dom_again = DecodeTranscriptValue(ParseStrictJson(reencoded).value(), "$");
  RC_ASSERT(dom_again.ok());
  RC_ASSERT(EncodeTranscript(*dom_again).value() == reencoded);
}

bool KnownKind(TranscriptErrorKind kind) {
  switch (kind) {
    case TranscriptErrorKind::kJson:
    case TranscriptErrorKind::kEmpty:
    case TranscriptErrorKind::kMessage:
    case TranscriptErrorKind::kBlock:
    case TranscriptErrorKind::kEncoding:
      return true;
  }
  return false;
}

RC_GTEST_PROP(CodecProperty, MutatedEncodingsDecodeOrFailTyped, ()) {
  std::string bytes = EncodeTranscript(*AnyTranscript()).value();
  const int mutations = *gen::inRange(1, 9);
  for (int i = 0; i < mutations && !bytes.empty(); ++i) {
    const auto pos = static_cast<std::size_t>(*gen::inRange<std::size_t>(0, bytes.size()));
    const char byte = *gen::oneOf(
        gen::element('"', '{', '}', '[', ']', ',', ':', '\\', 'n', '0', ' ', '=', '\xff', '\x00'),
        gen::map(gen::inRange(0, 256), [](int b) { return static_cast<char>(b); }));
    if (*gen::inRange(0, 2) == 0) {
      // A token-level mutation that keeps the JSON well-formed more often than not.
      static const std::vector<std::pair<std::string, std::string>> kEdits = {
          {"\"text\"", "\"Text\""},
          {"null", "[]"},
          {"false", "null"},
          {"[]", "null"},
          {"\"user\"", "\"assistant\""},
          {"\"tool_result\"", "\"text\""},
          {"\"data\":\"", "\"data\":\"A"},
          {"\"input\":null", "\"input\":{}"},
          {",\"", ",\"x\":1,\""},
          {"[{", "[null,{"},
          {"\"is_error\":false", "\"is_error\":0"}};
      const auto& [from, to] = *gen::elementOf(kEdits);
      const auto at = bytes.find(from, pos);
      if (at != std::string::npos) {
        bytes.replace(at, from.size(), to);
      }
      continue;
    }
    switch (*gen::inRange(0, 5)) {
      case 0:
        bytes[pos] = byte;
        break;
      case 1:
        bytes.erase(pos, 1);
        break;
      case 2:
        bytes.insert(pos, 1, byte);
        break;
      case 3:
        bytes.insert(pos, bytes.substr(pos, *gen::inRange<std::size_t>(1, 40)));
        break;
      default:
        bytes.resize(pos);
        break;
    }
  }
  const auto decoded = DecodeTranscript(bytes);
  RC_TAG(decoded.ok() ? "decoded" : std::string(TranscriptErrorKindName(decoded.error().kind)));
  if (!decoded.ok()) {
    RC_ASSERT(KnownKind(decoded.error().kind));
    RC_ASSERT(!decoded.error().rule.empty());
    RC_ASSERT(decoded.error().path.substr(0, 1) == "$");
    return;
  }
  const auto encoded = EncodeTranscript(*decoded);
  RC_ASSERT(encoded.ok());
  const auto again = DecodeTranscript(*encoded);
  RC_ASSERT(again.ok());
  RC_ASSERT(*again == *decoded);
  RC_ASSERT(EncodeTranscript(*again).value() == *encoded);
}

}  // namespace
}  // namespace harness

// ExtractiveCompactor: the offline compactor of decisions D6, the default where no provider is
// configured.
//
// Contract of Compact(input, stop), in order:
//   0. `stop` already requested -> kCanceled; input.Validate() fails -> kInputInvalid.
//   1. Deterministic (the same input gives the same bytes), no network, no model. It reads the
//      projected transcript (text blocks; "[called tool: NAME]" placeholders; tool messages with
//      their tool_use_id); unprojected tool_use / tool_result blocks are understood too.
//      System messages are never read (configuration, possibly private). Sentences end at
//      '.', '!', '?' before white space and at line ends. It builds the five sections:
//     goal        the first user request (its sentences that are not constraints or greetings),
//                 plus "Later: …" for later requests that change direction ("instead",
//                 "actually", "switch to", "new task", …); never blank (a fixed sentence when
//                 the user said nothing);
//     constraints the user's imperative sentences: "must", "never", "always", "don't",
//                 "do not", "make sure", "ensure", "keep", "avoid", "only", "without",
//                 "should", "need to", "have to", "ask me", …, or starting with "use",
//                 "prefer", "stick to", "stay" (after "and", "also", "please", …); earliest
//                 kept first;
//     decisions   the assistant's statements of choice ("I'll", "we will", "let's", "decided",
//                 "chose", "going with", "rather than", "settled on", "belongs in", ", not …"),
//                 but not announcements of exploration ("I'll start by", "I'll read", "let me",
//                 …); a choice stated again moves to its latest place; the latest are kept;
//     state       the assistant's statements (one item per message) and the gist of each tool
//                 result ("Result of NAME: …" / "Error from NAME: …": its last three outcome
//                 lines — failed, error, passed, exception, … — else its first line and line
//                 count), in transcript order, the latest kept; never blank;
//     open items  user requests with no assistant message after them, questions the assistant
//                 asked last, and tool calls without a result in the head.
// - Every piece of text is cleaned (invalid UTF-8 -> U+FFFD, characters XML forbids and runs of
//   white space -> one space) and XML-escaped (`<`, `>`, `&`). The answer is fitted to
//   max_summary_tokens by the counter the usage reports, ceil(envelope bytes / 4): it tries
//   fixed levels from generous (8 items a section, 320 bytes an item) to minimal (goal and one
//   state item of a few bytes, other sections empty) and answers with the first that fits; a
//   cut item ends with "…". When even the minimal level does not fit, the answer is
//   kInvalidSummary{token_limit}. A larger budget never gives a shorter answer.
// - It answers through the same path as a model: it encodes the envelope
//   (EncodeSummaryEnvelope) with the input's identity, reports usage output_tokens =
//   ceil(envelope bytes / 4), and runs ValidateCompactionResponse on it (output byte limit
//   64 KiB, the model compactor's default); only a validated output is returned. The sections
//   never exceed about 40 KiB, so for a valid input the only failure is token_limit — unless
//   the identity itself is absurdly long (a model key of tens of KiB), which is byte_limit.
// - Secrets: a line is dropped whole when it assigns a credential-like name (a word containing
//   key, token, secret, password, passwd, pwd, credential, auth or cookie followed by '=' or
//   ':' and a value), holds a well-known token shape ("sk-…", "ghp_…", "github_pat_…",
//   "xoxb-…", "AKIA…", "Bearer …"), or lies in a "-----BEGIN … -----END" block. Mentioning a
//   secret ("never log the API key") is not one.
// Thread safety: stateless; Compact may be called concurrently.
#pragma once

#include "harness/compaction/compactor.h"

namespace harness {

class ExtractiveCompactor final : public Compactor {
 public:
  Result<CompactionOutput, CompactorError> Compact(const CompactionInput& input,
                                                   std::stop_token stop) override;
};

}  // namespace harness

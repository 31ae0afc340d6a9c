// Recognising an OpenAI Chat Completions conversation by its prefix (docs/spec/gateway.md
// "Chat Completions"): a client that knows nothing of compaction sends its whole history with
// every request, so the gateway knows a conversation it compacted by the messages it replaced.
//
// Contract:
// - ChatPrefixChain(conversation) is one digest per element of a read Chat conversation:
//   chain[i] covers elements [0, i] and nothing else, so two requests share chain[i] exactly when
//   their first i + 1 elements are the same messages. An element is compared as the harness
//   messages it became (the content codec's encoding, content/codec.h), not as its bytes: the
//   members a client adds or drops when it sends back an answer it received (`refusal: null`,
//   `annotations: []`, white space, key order) do not make it another conversation. An element
//   that became no message (opaque) is compared by its exact text. Each link is SHA-256 over a
//   domain tag, the previous link and the length-prefixed canonical text, so no two different
//   sequences of canonical texts share a link.
// - ChatConversationBook keeps, per recognised conversation, the digest of the original
//   elements the gateway replaced (`original`, covering `original_elements` elements) and what
//   replaced them (`replacement`: the compacted prefix's elements as JSON text), or, for a
//   conversation whose compaction was undone, that its requests go upstream as sent.
//   Find(chain) returns the entry of the longest prefix of `chain` it holds (the newest request
//   of a conversation extends its last compacted prefix) and marks it used; a chain that extends
//   no entry is a new conversation (nullopt). Remember(entry, supersedes) stores an entry and
//   drops the one it supersedes (the same conversation's earlier compaction).
// - Bounded memory: at most limits.max_conversations entries and limits.max_bytes of their
//   text; the least recently used entries are dropped first; an entry larger than max_bytes
//   alone is not stored (Remember returns false). A dropped conversation is a new one on its
//   next request: its client still holds the whole history, so nothing is lost but the saving.
// Thread safety: ChatPrefixChain is a pure function; every method of ChatConversationBook may be
// called from any thread (one mutex).
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "harness/core/sha256.h"
#include "harness/core/uuid.h"
#include "harness/dialect/dialect.h"

namespace harness::serve {

std::vector<Fingerprint> ChatPrefixChain(const DialectConversation& conversation);

struct ChatPrefixEntry {
  Fingerprint original;               // the chain link of the last element replaced
  std::size_t original_elements = 0;  // how many elements of a request it replaces
  // The compacted prefix, each element as JSON text; empty when `compacted` is false.
  std::vector<std::string> replacement;
  // false: the compaction was undone, and the conversation's requests go upstream as sent.
  bool compacted = true;
  std::optional<Uuid> session;  // the stored session of the compaction, when journaled
  std::uint64_t last_seq = 0;   // the session's last journal sequence after the compaction
  std::size_t Bytes() const;    // what the entry costs in the book's byte limit
};

struct ChatConversationBookLimits {
  std::size_t max_conversations = 1024;
  std::size_t max_bytes = 64u * 1024 * 1024;
};

class ChatConversationBook {
 public:
  explicit ChatConversationBook(ChatConversationBookLimits limits = {}) : limits_(limits) {}

  std::shared_ptr<const ChatPrefixEntry> Find(std::span<const Fingerprint> chain);
  bool Remember(ChatPrefixEntry entry, std::optional<Fingerprint> supersedes = std::nullopt);
  // Drops the entry of `original`, if held.
  void Forget(const Fingerprint& original);

  std::size_t size() const;
  std::size_t bytes() const;

 private:
  struct Slot {
    std::shared_ptr<const ChatPrefixEntry> entry;
    std::list<Fingerprint>::iterator used;  // its place in used_, most recent first
  };
  void EraseLocked(std::map<Fingerprint, Slot>::iterator at);

  ChatConversationBookLimits limits_;
  mutable std::mutex mutex_;
  std::map<Fingerprint, Slot> entries_;
  std::list<Fingerprint> used_;
  std::size_t bytes_ = 0;
};

}  // namespace harness::serve

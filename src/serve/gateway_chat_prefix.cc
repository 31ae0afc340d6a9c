#include "serve/gateway_chat_prefix.h"

#include <array>

#include "content/internal/raw_json.h"
#include "harness/content/codec.h"

namespace harness::serve {

namespace {

constexpr std::string_view kChainTag = "harness.chat-prefix.v1";

// What an element is compared as: the codec's text of each message it became, or its exact text
// compacted when it became none. The leading byte keeps the two kinds apart.
std::string CanonicalElement(const DialectConversation& conversation,
                             const DialectElement& element) {
  std::string out;
  if (element.message_count == 0) {
    out.push_back('o');
    raw_json::AppendCompactJson(out, element.json);
    return out;
  }
  out.push_back('m');
  for (std::size_t m = element.first_message; m < element.first_message + element.message_count;
       ++m) {
    auto encoded = EncodeMessage(conversation.transcript[m]);
    // A read message always encodes (the readers validate every message); should one not, its
    // exact text still names it.
    const std::string text = encoded.ok() ? std::move(encoded).value() : element.json;
    out.append(std::to_string(text.size())).push_back(':');
    out.append(text);
  }
  return out;
}

void AppendLength(Sha256Hasher& hasher, std::uint64_t length) {
  std::array<std::uint8_t, 8> bytes{};
  for (std::size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = static_cast<std::uint8_t>(length >> (8 * (7 - i)));
  hasher.Update(bytes);
}

}  // namespace

std::vector<Fingerprint> ChatPrefixChain(const DialectConversation& conversation) {
  std::vector<Fingerprint> chain;
  chain.reserve(conversation.elements.size());
  Fingerprint previous;
  for (const DialectElement& element : conversation.elements) {
    const std::string canonical = CanonicalElement(conversation, element);
    Sha256Hasher hasher;
    hasher.Update(kChainTag);
    hasher.Update(previous.bytes());
    AppendLength(hasher, canonical.size());
    hasher.Update(canonical);
    previous = Fingerprint(hasher.Finish());
    chain.push_back(previous);
  }
  return chain;
}

std::size_t ChatPrefixEntry::Bytes() const {
  std::size_t bytes = sizeof(ChatPrefixEntry);
  for (const std::string& element : replacement)
    bytes += element.size() + sizeof(std::string);
  return bytes;
}

std::shared_ptr<const ChatPrefixEntry> ChatConversationBook::Find(
    std::span<const Fingerprint> chain) {
  const std::lock_guard lock(mutex_);
  for (std::size_t i = chain.size(); i > 0; --i) {
    const auto found = entries_.find(chain[i - 1]);
    if (found == entries_.end())
      continue;
    used_.splice(used_.begin(), used_, found->second.used);
    return found->second.entry;
  }
  return nullptr;
}

bool ChatConversationBook::Remember(ChatPrefixEntry entry, std::optional<Fingerprint> supersedes) {
  const std::size_t cost = entry.Bytes();
  const std::lock_guard lock(mutex_);
  if (supersedes) {
    const auto old = entries_.find(*supersedes);
    if (old != entries_.end())
      EraseLocked(old);
  }
  if (const auto same = entries_.find(entry.original); same != entries_.end())
    EraseLocked(same);
  if (cost > limits_.max_bytes || limits_.max_conversations == 0)
    return false;
  while (!used_.empty() &&
         (entries_.size() >= limits_.max_conversations || bytes_ + cost > limits_.max_bytes))
    EraseLocked(entries_.find(used_.back()));
  const Fingerprint key = entry.original;
  used_.push_front(key);
  entries_.emplace(key,
                   Slot{std::make_shared<const ChatPrefixEntry>(std::move(entry)), used_.begin()});
  bytes_ += cost;
  return true;
}

void ChatConversationBook::Forget(const Fingerprint& original) {
  const std::lock_guard lock(mutex_);
  const auto found = entries_.find(original);
  if (found != entries_.end())
    EraseLocked(found);
}

void ChatConversationBook::EraseLocked(std::map<Fingerprint, Slot>::iterator at) {
  bytes_ -= at->second.entry->Bytes();
  used_.erase(at->second.used);
  entries_.erase(at);
}

std::size_t ChatConversationBook::size() const {
  const std::lock_guard lock(mutex_);
  return entries_.size();
}

std::size_t ChatConversationBook::bytes() const {
  const std::lock_guard lock(mutex_);
  return bytes_;
}

}  // namespace harness::serve

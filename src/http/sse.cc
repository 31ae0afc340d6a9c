#include "harness/http/sse.h"

#include <string>

namespace harness {

namespace {

constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";

}  // namespace

std::string_view SseErrorKindName(SseErrorKind kind) {
  switch (kind) {
    case SseErrorKind::kLineTooLong:
      return "line_too_long";
    case SseErrorKind::kEventTooLarge:
      return "event_too_large";
    case SseErrorKind::kTruncated:
      return "truncated";
  }
  return "truncated";
}

std::string SseError::Describe() const {
  std::string text(SseErrorKindName(kind));
  text.append(" at byte ");
  text.append(std::to_string(offset));
  return text;
}

SseDecoder::SseDecoder(SseLimits limits) : limits_(limits) {}

Status<SseError> SseDecoder::Failed(SseErrorKind kind) {
  failed_ = true;
  error_ = SseError{kind, offset_};
  // Release what the stream made us hold: a failed decoder keeps nothing.
  line_.clear();
  line_.shrink_to_fit();
  data_.clear();
  data_.shrink_to_fit();
  return Fail(error_);
}

Status<SseError> SseDecoder::Feed(std::string_view bytes, std::vector<SseEvent>& out) {
  if (failed_)
    return Fail(error_);
  std::string start;
  if (at_start_) {
    // The byte order mark may itself arrive split across chunks.
    start = bom_;
    start.append(bytes);
    if (start.size() < kByteOrderMark.size() && kByteOrderMark.substr(0, start.size()) == start) {
      bom_ = start;
      return {};
    }
    at_start_ = false;
    bom_.clear();
    std::string_view rest(start);
    if (rest.substr(0, kByteOrderMark.size()) == kByteOrderMark) {
      rest.remove_prefix(kByteOrderMark.size());
      offset_ += kByteOrderMark.size();
    }
    bytes = rest;
  }
  std::size_t pos = 0;
  if (after_cr_ && !bytes.empty()) {
    after_cr_ = false;
    if (bytes.front() == '\n') {
      pos = 1;
      ++offset_;
    }
  }
  while (pos < bytes.size()) {
    const std::size_t end = bytes.find_first_of("\r\n", pos);
    const std::size_t stop = end == std::string_view::npos ? bytes.size() : end;
    if (line_.size() + (stop - pos) > limits_.max_line_bytes) {
      offset_ += limits_.max_line_bytes - line_.size();
      return Failed(SseErrorKind::kLineTooLong);
    }
    line_.append(bytes.substr(pos, stop - pos));
    offset_ += stop - pos;
    if (end == std::string_view::npos)
      break;
    std::size_t next = end + 1;
    if (bytes[end] == '\r') {
      if (next == bytes.size())
        after_cr_ = true;
      else if (bytes[next] == '\n')
        ++next;
    }
    offset_ += next - end;
    pos = next;
    const std::string line = std::move(line_);
    line_.clear();
    HARNESS_CHECK(Line(line, out));
  }
  return {};
}

Status<SseError> SseDecoder::Line(std::string_view line, std::vector<SseEvent>& out) {
  if (line.empty()) {
    if (!data_.empty()) {
      data_.pop_back();  // every data line added a '\n'; the last one is not part of the data
      out.push_back(SseEvent{std::move(event_), std::move(data_)});
    }
    event_.clear();
    data_.clear();
    has_fields_ = false;
    return {};
  }
  if (line.front() == ':')
    return {};
  has_fields_ = true;
  const std::size_t colon = line.find(':');
  const std::string_view field = line.substr(0, colon);
  std::string_view value;
  if (colon != std::string_view::npos) {
    value = line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ')
      value.remove_prefix(1);
  }
  if (field == "data") {
    if (data_.size() + value.size() > limits_.max_event_bytes)  // the data once joined
      return Failed(SseErrorKind::kEventTooLarge);
    data_.append(value);
    data_.push_back('\n');
  } else if (field == "event") {
    event_ = std::string(value);
  } else if (field == "id") {
    if (value.find('\0') == std::string_view::npos)
      last_event_id_ = std::string(value);
  }
  return {};
}

Status<SseError> SseDecoder::Finish() {
  if (failed_)
    return Fail(error_);
  if (!line_.empty() || has_fields_ || !bom_.empty()) {
    failed_ = true;
    error_ = SseError{SseErrorKind::kTruncated, offset_};
    return Fail(error_);
  }
  return {};
}

}  // namespace harness

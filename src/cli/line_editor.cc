#include "line_editor.h"

#include <fcntl.h>
#include <histedit.h>
#include <locale.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "core/internal/json_dom.h"
#include "harness/core/chars.h"
#include "harness/core/utf8.h"

namespace harness::cli {
namespace {

// How long a held partial sequence (a paste marker, a character) waits for the rest: a terminal
// writes a sequence at once, so this only waits for bytes already on their way.
constexpr int kSequenceWaitMs = 50;
// The history kept in memory and in the file; and a message too large to be worth recalling
// is kept out of the file.
constexpr std::size_t kHistoryEntries = 1000;
constexpr std::size_t kHistoryFileEntryBytes = 64 * 1024;
constexpr std::size_t kHistoryFileBytes = kHistoryEntries * (kHistoryFileEntryBytes + 16);

bool IsPrefixOf(std::string_view held, std::string_view marker) {
  return held.size() < marker.size() && marker.substr(0, held.size()) == held;
}

std::string Utf8Of(const wchar_t* text, std::size_t length) {
  std::string out;
  out.reserve(length);
  for (std::size_t i = 0; i < length; ++i) {
    const auto c = static_cast<char32_t>(text[i]);
    AppendUtf8(out, c <= 0x10FFFF && (c < 0xD800 || c > 0xDFFF) ? c : kReplacementCharacter);
  }
  return out;
}

std::wstring WideOf(std::string_view text) {
  std::wstring out;
  for (std::size_t at = 0; at < text.size();) {
    const Utf8Char c = DecodeUtf8OrReplacement(text, at);
    out.push_back(static_cast<wchar_t>(c.code_point));
    at += c.length;
  }
  return out;
}

}  // namespace

std::optional<KeyDecoder::Key> KeyDecoder::Next(bool flush) {
  for (;;) {
    if (at_ == pending_.size()) {
      pending_.clear();
      at_ = 0;
      return std::nullopt;
    }
    const std::string_view held = std::string_view(pending_).substr(at_);
    const std::string_view marker = pasting_ ? kPasteEnd : kPasteStart;
    if (held.substr(0, marker.size()) == marker) {
      at_ += marker.size();
      pasting_ = !pasting_;
      after_cr_ = false;
      continue;
    }
    if (!flush && IsPrefixOf(held, marker))
      return std::nullopt;
    const auto* begin = reinterpret_cast<const unsigned char*>(held.data());
    const Utf8Char c = DecodeUtf8OrReplacement(begin, begin + held.size());
    // A lead byte whose continuation has not come yet is held, not replaced.
    if (!flush && c.replaced && held.size() < 4) {
      const auto lead = static_cast<unsigned char>(held[0]);
      const std::size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC2 ? 2 : 1;
      const bool continuations = std::all_of(held.begin() + 1, held.end(), [](char b) {
        return (static_cast<unsigned char>(b) & 0xC0) == 0x80;
      });
      if (need > held.size() && lead < 0xF5 && continuations)
        return std::nullopt;
    }
    at_ += c.length;
    if (!pasting_)
      return Key{c.code_point, false};
    const bool lf_after_cr = c.code_point == '\n' && after_cr_;
    after_cr_ = false;
    if (lf_after_cr)
      continue;
    if (c.code_point == '\r' || c.code_point == '\n') {
      after_cr_ = c.code_point == '\r';
      return Key{'\n', true};
    }
    if (c.code_point == '\t')
      return Key{'\t', true};
    if (c.code_point < 0x20 || c.code_point == 0x7F ||
        (c.code_point >= 0x80 && c.code_point < 0xA0))
      continue;
    return Key{c.code_point, true};
  }
}

CommandCompletion CompleteCommand(std::string_view typed, std::span<const std::string> commands) {
  CommandCompletion out;
  if (typed.empty() || typed.front() != '/' || typed.find(' ') != std::string_view::npos)
    return out;
  std::vector<std::string> matches;
  for (const std::string& command : commands) {
    if (command.size() >= typed.size() && command.compare(0, typed.size(), typed) == 0)
      matches.push_back(command);
  }
  if (matches.empty())
    return out;
  if (matches.size() == 1) {
    out.insert = matches.front().substr(typed.size()) + " ";
    return out;
  }
  std::size_t shared = matches.front().size();
  for (const std::string& match : matches) {
    std::size_t i = 0;
    while (i < shared && i < match.size() && match[i] == matches.front()[i])
      ++i;
    shared = i;
  }
  out.insert = matches.front().substr(typed.size(), shared - typed.size());
  if (out.insert.empty())
    out.candidates = std::move(matches);
  return out;
}

bool ContinuesOnNextLine(std::string& line) {
  if (line.empty() || line.back() != '\\')
    return false;
  line.pop_back();
  return true;
}

ChatHistory ParseChatHistory(std::string_view text, std::size_t max_entries) {
  ChatHistory out;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos)
      end = text.size();
    const std::string_view line = text.substr(start, end - start);
    start = end + 1;
    if (line.empty())
      continue;
    auto parsed = ParseStrictJson(line);
    if (!parsed.ok() || !parsed->is_string()) {
      ++out.unreadable_lines;
      continue;
    }
    out.messages.push_back(parsed->get<std::string>());
  }
  if (out.messages.size() > max_entries) {
    out.messages.erase(out.messages.begin(),
                       out.messages.end() - static_cast<std::ptrdiff_t>(max_entries));
  }
  return out;
}

std::string FormatChatHistory(std::span<const std::string> messages) {
  std::string out;
  for (const std::string& message : messages) {
    AppendJsonString(out, message);
    out.push_back('\n');
  }
  return out;
}

struct LineEditor::Parts {
  locale_t locale = nullptr;
  locale_t previous = nullptr;
  EditLine* edit = nullptr;
  HistoryW* history = nullptr;
  int wake = -1;  // eventfd written by the stop callback

  struct Wake {
    int fd;
    void operator()() const noexcept {
      const std::uint64_t one = 1;
      while (::write(fd, &one, sizeof one) < 0 && errno == EINTR) {
      }
    }
  };
  std::optional<std::stop_callback<Wake>> on_stop;

  ~Parts() {
    on_stop.reset();  // waits for a callback still writing to wake
    if (edit != nullptr)
      el_end(edit);  // puts the terminal's mode back
    if (history != nullptr)
      history_wend(history);
    if (wake >= 0)
      ::close(wake);
    if (previous != nullptr)
      uselocale(previous);
    if (locale != nullptr)
      freelocale(locale);
  }
};

namespace {

LineEditor* EditorOf(EditLine* edit) {
  void* self = nullptr;
  el_get(edit, EL_CLIENTDATA, &self);
  return static_cast<LineEditor*>(self);
}

}  // namespace

LineEditor::LineEditor(Options options)
    : options_(std::move(options)), parts_(std::make_unique<Parts>()) {}

LineEditor::~LineEditor() {
  if (parts_->edit != nullptr) {
    std::fwrite(kBracketedPasteOff.data(), 1, kBracketedPasteOff.size(), options_.out);
    std::fflush(options_.out);
  }
}

// Trampolines from libedit's C callbacks to the editor; friends in all but name, they reach it
// through EL_CLIENTDATA.
struct LineEditorCallbacks {
  static int ReadChar(EditLine* edit, wchar_t* out) { return EditorOf(edit)->ReadChar(out); }
  static unsigned char Complete(EditLine* edit, int) { return EditorOf(edit)->Complete(); }
  static wchar_t* Prompt(EditLine* edit) { return const_cast<wchar_t*>(EditorOf(edit)->Prompt()); }
};

Result<std::unique_ptr<LineEditor>, std::string> LineEditor::Open(Options options,
                                                                  std::string& warning) {
  std::unique_ptr<LineEditor> editor(new LineEditor(std::move(options)));
  Parts& parts = *editor->parts_;
  // libedit decodes and shows characters by the thread's locale: UTF-8 for this thread only.
  parts.locale = newlocale(LC_CTYPE_MASK, "C.UTF-8", static_cast<locale_t>(nullptr));
  if (parts.locale == nullptr)
    return Fail(std::string("the C.UTF-8 locale is missing"));
  parts.previous = uselocale(parts.locale);
  parts.wake = ::eventfd(0, EFD_CLOEXEC);
  if (parts.wake < 0)
    return Fail(std::string("no eventfd for the line editor"));
  parts.on_stop.emplace(editor->options_.stop, Parts::Wake{parts.wake});
  parts.history = history_winit();
  if (parts.history == nullptr)
    return Fail(std::string("libedit could not make a history"));
  HistEventW event;
  history_w(parts.history, &event, H_SETSIZE, static_cast<int>(kHistoryEntries));
  history_w(parts.history, &event, H_SETUNIQUE, 1);
  if (editor->options_.history_file) {
    const std::string path = editor->options_.history_file->string();
    std::error_code exists_error;
    if (std::filesystem::exists(*editor->options_.history_file, exists_error)) {
      auto text = ReadInput(path, kHistoryFileBytes, InputFile::kRegularOnly);
      if (!text.ok()) {
        warning = "the chat history was not loaded: " + text.error().message;
      } else {
        ChatHistory loaded = ParseChatHistory(*text, kHistoryEntries);
        if (loaded.unreadable_lines > 0) {
          warning = "the chat history " + path + " has " + std::to_string(loaded.unreadable_lines) +
                    " unreadable lines; they were skipped and are dropped when it is next written";
        }
        editor->history_ = std::move(loaded.messages);
      }
    }
  }
  for (const std::string& message : editor->history_)
    history_w(parts.history, &event, H_ENTER, WideOf(message).c_str());

  parts.edit = el_init("harness", editor->options_.in, editor->options_.out, stderr);
  if (parts.edit == nullptr)
    return Fail(std::string("libedit could not set up the terminal"));
  el_set(parts.edit, EL_CLIENTDATA, editor.get());
  el_wset(parts.edit, EL_EDITOR, L"emacs");
  el_wset(parts.edit, EL_SIGNAL, 0);  // the chat's own signal handling stays in charge
  el_wset(parts.edit, EL_GETCFN, &LineEditorCallbacks::ReadChar);
  el_wset(parts.edit, EL_PROMPT, &LineEditorCallbacks::Prompt);
  el_wset(parts.edit, EL_HIST, history_w, parts.history);
  el_wset(parts.edit, EL_ADDFN, L"harness-complete", L"Complete a slash command",
          &LineEditorCallbacks::Complete);
  el_wset(parts.edit, EL_BIND, L"^I", L"harness-complete", nullptr);
  el_wset(parts.edit, EL_BIND, L"^L", L"ed-clear-screen", nullptr);
  std::fwrite(kBracketedPasteOn.data(), 1, kBracketedPasteOn.size(), editor->options_.out);
  std::fflush(editor->options_.out);
  return editor;
}

const wchar_t* LineEditor::Prompt() const {
  return continuing_ ? L"... " : L"";
}

int LineEditor::ReadChar(wchar_t* out) {
  for (;;) {
    if (options_.stop.stop_requested())
      return 0;
    if (const auto key = keys_.Next(std::exchange(flush_, false))) {
      last_key_pasted_ = key->pasted;
      if (key->pasted && key->code_point == '\n')
        line_ended_in_paste_ = true;
      *out = static_cast<wchar_t>(key->code_point);
      if (!typing_) {
        typing_ = true;
        if (options_.on_typing)
          options_.on_typing(true);
      }
      return 1;
    }
    pollfd fds[2] = {{options_.in_fd, POLLIN, 0}, {parts_->wake, POLLIN, 0}};
    const int ready = ::poll(fds, 2, keys_.holding() ? kSequenceWaitMs : -1);
    if (ready < 0) {
      if (errno == EINTR)
        continue;
      return -1;
    }
    if (ready == 0) {
      flush_ = true;  // nothing more came: what is held is what was typed
      continue;
    }
    if (fds[0].revents == 0)
      continue;  // woken by the stop: the loop sees it
    char chunk[4096];
    const ssize_t n = ::read(options_.in_fd, chunk, sizeof chunk);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
      continue;
    if (n <= 0)
      return n == 0 ? 0 : -1;
    keys_.Feed(std::string_view(chunk, static_cast<std::size_t>(n)));
  }
}

unsigned char LineEditor::Complete() {
  EditLine* edit = parts_->edit;
  if (last_key_pasted_) {
    el_winsertstr(edit, L"\t");  // a pasted tab is text
    return CC_REFRESH;
  }
  const LineInfoW* line = el_wline(edit);
  const std::string typed =
      Utf8Of(line->buffer, static_cast<std::size_t>(line->cursor - line->buffer));
  const CommandCompletion completion = CompleteCommand(typed, options_.commands);
  if (!completion.insert.empty()) {
    el_winsertstr(edit, WideOf(completion.insert).c_str());
    return CC_REFRESH;
  }
  if (completion.candidates.empty())
    return CC_REFRESH_BEEP;
  std::string shown = "\n";
  for (const std::string& candidate : completion.candidates)
    shown.append(candidate).append(" ");
  shown.back() = '\n';
  std::fwrite(shown.data(), 1, shown.size(), options_.out);
  return CC_REDISPLAY;
}

void LineEditor::Remember(const std::string& message) {
  HistEventW event;
  history_w(parts_->history, &event, H_ENTER, WideOf(message).c_str());
  if (!history_.empty() && history_.back() == message)
    return;  // as H_SETUNIQUE: the same message twice in a row is one entry
  history_.push_back(message);
  if (history_.size() > kHistoryEntries)
    history_.erase(history_.begin());
  if (!options_.history_file)
    return;
  std::vector<std::string> kept;
  for (const std::string& entry : history_) {
    if (entry.size() <= kHistoryFileEntryBytes)
      kept.push_back(entry);
  }
  const std::string path = options_.history_file->string();
  const std::string temporary = path + ".tmp";
  const std::string text = FormatChatHistory(kept);
  // Owner-only from the start: what was typed may be private.
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  bool written = fd >= 0;
  for (std::size_t at = 0; written && at < text.size();) {
    const ssize_t n = ::write(fd, text.data() + at, text.size() - at);
    if (n < 0 && errno == EINTR)
      continue;
    written = n > 0;
    at += written ? static_cast<std::size_t>(n) : 0;
  }
  if (fd >= 0 && ::close(fd) != 0)
    written = false;
  if (written && std::rename(temporary.c_str(), path.c_str()) == 0) {
    history_problem_.clear();
    return;
  }
  history_problem_ =
      "the chat history could not be written to " + path + ": " + std::string(std::strerror(errno));
  ::unlink(temporary.c_str());
}

LineReader::Read LineEditor::Next(std::string& message) {
  // However the read ends, the message is no longer being typed.
  struct TypingEnds {
    LineEditor& editor;
    ~TypingEnds() {
      if (std::exchange(editor.typing_, false) && editor.options_.on_typing)
        editor.options_.on_typing(false);
    }
  } typing_ends{*this};
  message.clear();
  continuing_ = false;
  bool too_long = false;
  for (;;) {
    line_ended_in_paste_ = false;
    int count = 0;
    const wchar_t* got = el_wgets(parts_->edit, &count);
    if (options_.stop.stop_requested())
      return LineReader::Read::kStopped;
    if (got == nullptr || count <= 0) {
      continuing_ = false;
      // libedit leaves the cursor after what it echoed for Ctrl-D: what follows starts a line.
      std::fputc('\n', options_.out);
      std::fflush(options_.out);
      return LineReader::Read::kEnd;
    }
    std::string line = Utf8Of(got, static_cast<std::size_t>(count));
    if (!line.empty() && line.back() == '\n')
      line.pop_back();
    const bool continues = line_ended_in_paste_ || ContinuesOnNextLine(line);
    if (!too_long && message.size() + line.size() + 1 > options_.max_bytes) {
      too_long = true;
      message.clear();
    }
    if (!too_long)
      message.append(line);
    if (!continues)
      break;
    if (!too_long)
      message.push_back('\n');
    continuing_ = true;
  }
  continuing_ = false;
  if (too_long)
    return LineReader::Read::kTooLong;
  if (!message.empty())
    Remember(message);
  return LineReader::Read::kLine;
}

}  // namespace harness::cli

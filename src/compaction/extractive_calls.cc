#include "compaction/extractive_calls.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "compaction/extractive_fields.h"
#include "compaction/extractive_secrets.h"
#include "compaction/extractive_text.h"

namespace harness::extractive_detail {

namespace {

// A path worth recording: clean, short, not an option, a glob, a variable or a URL.
std::optional<std::string> PathOf(std::string_view raw) {
  raw = Trim(raw);
  while (!raw.empty() && (raw.front() == '"' || raw.front() == '\''))
    raw.remove_prefix(1);
  while (!raw.empty() && (raw.back() == '"' || raw.back() == '\'' || raw.back() == ';'))
    raw.remove_suffix(1);
  if (raw.empty() || raw.size() > 300 || raw.front() == '-' || raw == "/dev/null" ||
      raw.find_first_of("*?$`<>|&{}\n") != std::string_view::npos ||
      raw.find("://") != std::string_view::npos || LooksLikeSecret(raw)) {
    return std::nullopt;
  }
  std::string clean = Clean(raw);
  if (clean.empty() || clean.find(' ') != std::string::npos)
    return std::nullopt;
  return clean;
}

std::string JoinPath(std::string_view directory, const std::string& path) {
  if (directory.empty() || path.starts_with('/') || path.starts_with('~'))
    return path;
  std::string out(directory);
  if (!out.ends_with('/'))
    out.push_back('/');
  out.append(path.starts_with("./") ? path.substr(2) : path);
  return out;
}

// The simple commands of a shell command line: split at ;, &, | and line ends outside quotes;
// a heredoc's body is skipped.
std::vector<std::string_view> SimpleCommands(std::string_view command) {
  std::vector<std::string_view> parts;
  std::string delimiter;  // of the heredoc being skipped
  for (const std::string_view line : RawLines(command)) {
    if (!delimiter.empty()) {
      if (Trim(line) == delimiter)
        delimiter.clear();
      continue;
    }
    std::size_t start = 0;
    char quote = 0;
    for (std::size_t i = 0; i <= line.size(); ++i) {
      const bool end = i == line.size();
      if (!end && quote != 0) {
        quote = line[i] == quote ? 0 : quote;
        continue;
      }
      if (!end && (line[i] == '"' || line[i] == '\'')) {
        quote = line[i];
        continue;
      }
      if (end || line[i] == ';' || line[i] == '|' || line[i] == '&') {
        if (i > start)
          parts.push_back(line.substr(start, i - start));
        start = i + 1;
      }
    }
    const std::size_t heredoc = line.find("<<");
    if (heredoc != std::string_view::npos) {
      std::string_view rest = Trim(line.substr(heredoc + 2));
      if (rest.starts_with('-'))
        rest.remove_prefix(1);
      rest = rest.substr(0, rest.find_first_of(" \t;|&>"));
      for (const char c : rest) {
        if (c != '\'' && c != '"')
          delimiter.push_back(c);
      }
    }
  }
  return parts;
}

// Files a shell command reads or changes: cat/head/tail/sed -n (read), sed -i/perl -i (edited),
// "> f"/tee/touch/cp (created), rm (deleted), the SWE-agent commands open/create/edit and
// str_replace_editor, and the headers of a patch in the command (apply_patch <<EOF).
void ShellFiles(std::string_view command, std::string& swe_open_file,
                std::vector<std::pair<std::string, FileTouch>>& files) {
  PatchFiles(command, files);
  std::string directory;
  const std::vector<std::string_view> parts = SimpleCommands(command);
  for (const std::string_view part : parts) {
    std::vector<std::string_view> words = Words(part);
    std::size_t first = 0;
    while (first < words.size() &&
           (words[first] == "sudo" || words[first] == "time" || words[first] == "command" ||
            (words[first].find('=') != std::string_view::npos && words[first].front() != '-')))
      ++first;
    if (first >= words.size())
      continue;
    const std::string_view program = words[first];
    std::vector<std::string> arguments;
    bool in_place = false;
    for (std::size_t k = first + 1; k < words.size(); ++k) {
      const std::string_view word = words[k];
      if (word == ">" || word == ">>") {
        if (k + 1 < words.size()) {
          if (auto path = PathOf(words[k + 1]))
            files.emplace_back(JoinPath(directory, *path), FileTouch::kCreated);
        }
        ++k;
        continue;
      }
      if ((word.starts_with(">") || word.starts_with("1>")) && !word.starts_with(">&")) {
        if (auto path = PathOf(word.substr(word.find('>') + (word.starts_with(">>") ? 2 : 1))))
          files.emplace_back(JoinPath(directory, *path), FileTouch::kCreated);
        continue;
      }
      if (word == "<<" || word == "<<-") {
        ++k;  // the heredoc's delimiter
        continue;
      }
      if (word.starts_with("2>") || word.starts_with("<"))
        continue;
      if (word.starts_with("-i") || word == "--in-place" || word == "-pi")
        in_place = true;
      if (word.starts_with('-'))
        continue;
      arguments.emplace_back(word);
    }
    auto touch_all = [&](std::size_t from, FileTouch touch) {
      for (std::size_t k = from; k < arguments.size(); ++k) {
        if (auto path = PathOf(arguments[k]))
          files.emplace_back(JoinPath(directory, *path), touch);
      }
    };
    if (program == "cd") {
      if (!arguments.empty()) {
        if (auto path = PathOf(arguments.front()))
          directory = JoinPath(directory, *path);
      }
    } else if (program == "cat" || program == "head" || program == "tail" || program == "less" ||
               program == "more" || program == "nl" || program == "bat") {
      touch_all(0, FileTouch::kRead);
    } else if (program == "sed" || program == "perl") {
      // The first argument is the script.
      touch_all(1, in_place ? FileTouch::kEdited : FileTouch::kRead);
    } else if (program == "rm") {
      touch_all(0, FileTouch::kDeleted);
    } else if (program == "touch" || program == "tee") {
      touch_all(0, FileTouch::kCreated);
    } else if ((program == "cp" || program == "mv") && arguments.size() >= 2) {
      touch_all(arguments.size() - 1, FileTouch::kCreated);
    } else if (program == "open" && !arguments.empty()) {  // SWE-agent
      if (auto path = PathOf(arguments.front())) {
        swe_open_file = *path;
        files.emplace_back(*path, FileTouch::kRead);
      }
    } else if (program == "create" && !arguments.empty()) {  // SWE-agent
      if (auto path = PathOf(arguments.front())) {
        swe_open_file = *path;
        files.emplace_back(*path, FileTouch::kCreated);
      }
    } else if (program == "edit" && !swe_open_file.empty() && !arguments.empty() &&
               IsDigit(arguments.front().front())) {  // SWE-agent "edit 10:12"
      files.emplace_back(swe_open_file, FileTouch::kEdited);
    } else if ((program == "str_replace_editor" || program == "str_replace_based_edit_tool") &&
               arguments.size() >= 2) {
      const std::string& sub = arguments[0];
      if (auto path = PathOf(arguments[1])) {
        const FileTouch touch = sub == "view"     ? FileTouch::kRead
                                : sub == "create" ? FileTouch::kCreated
                                                  : FileTouch::kEdited;
        files.emplace_back(*path, touch);
      }
    }
  }
}

bool IsShellTool(std::string_view key) {
  constexpr std::array<std::string_view, 14> kShells = {
      "bash",        "shell",   "executebash",    "runterminalcmd", "terminal",
      "execcommand", "run",     "runcommand",     "localshell",     "cmd",
      "powershell",  "execute", "executecommand", "runshellcommand"};
  return std::find(kShells.begin(), kShells.end(), key) != kShells.end();
}

bool IsQuestionTool(std::string_view key) {
  return key == "askuserquestion" || key == "askuser" || key == "askfollowupquestion" ||
         key == "requestuserinput" || key == "question" || key == "askquestion";
}

// The todo list in a todo tool's input: Claude Code TodoWrite {"todos":[{"content","status"}]},
// Codex update_plan {"plan":[{"step","status"}]}, OpenHands task_tracker {"task_list":[{"title",
// "status"}]}.
std::vector<TodoItem> TodoItems(const std::vector<Field>& fields) {
  std::vector<TodoItem> items;
  for (const Field& field : fields) {
    if (field.key == "content" || field.key == "step" || field.key == "title" ||
        field.key == "task") {
      items.push_back(
          TodoItem{LooksLikeSecret(field.value) ? std::string() : Clean(field.value), ""});
    } else if (field.key == "status" && !items.empty() && items.back().status.empty()) {
      items.back().status = Clean(field.value);
    }
  }
  std::erase_if(items, [](const TodoItem& item) { return item.text.empty(); });
  return items;
}

// The words of one line, split at spaces (clean text has no other white space).
std::vector<std::string_view> SpaceWords(std::string_view line) {
  std::vector<std::string_view> words;
  for (std::size_t at = 0; at < line.size();) {
    const std::size_t end = std::min(line.find(' ', at), line.size());
    if (end > at)
      words.push_back(line.substr(at, end - at));
    at = end + 1;
  }
  return words;
}

// The name a definition keyword ("def", "function", "class", …) introduces, the last one among
// `words`; "" when there is none.
std::string DefinedName(const std::vector<std::string_view>& words) {
  constexpr std::array<std::string_view, 8> kKeywords = {
      "def", "function", "func", "fn", "class", "struct", "interface", "procedure"};
  for (std::size_t k = words.size(); k-- > 1;) {
    if (std::find(kKeywords.begin(), kKeywords.end(), words[k - 1]) == kKeywords.end())
      continue;
    std::string_view name = words[k];
    name = name.substr(0, std::min(name.find_first_of("(<{:;"), name.size()));
    if (HasWords(name))
      return std::string(name);
  }
  return {};
}

// Words [from, to) of `words` as one line, "…" where words before or after were left out.
std::string WordSpan(const std::vector<std::string_view>& words, std::size_t from, std::size_t to) {
  std::string out = from > 0 ? std::string(kEllipsis) + " " : std::string();
  for (std::size_t k = from; k < to; ++k)
    out.append(words[k]).append(k + 1 < to ? " " : "");
  if (to < words.size())
    out.append(" ").append(kEllipsis);
  return out;
}

// A replacement as what changed: a short one whole ("`old` -> `new`"), a long one by the words
// that differ, with a few words around them and the definition they are in, so that the
// change is told instead of the start of two snippets.
std::string ReplacementChange(const std::string& old_text, const std::string& new_text) {
  constexpr std::size_t kWhole = 160;  // both sides together at most this: told whole
  constexpr std::size_t kBefore = 3;   // words of context before the change
  constexpr std::size_t kAfter = 2;    // and after it
  const std::string old_line = Join(SafeLines(old_text), " ");
  const std::string new_line = Join(SafeLines(new_text), " ");
  if (old_line.size() + new_line.size() <= kWhole)
    return "`" + old_line + "` -> `" + new_line + "`";
  const std::vector<std::string_view> before = SpaceWords(old_line);
  const std::vector<std::string_view> after = SpaceWords(new_line);
  const std::size_t shorter = std::min(before.size(), after.size());
  std::size_t prefix = 0;
  while (prefix < shorter && before[prefix] == after[prefix])
    ++prefix;
  std::size_t suffix = 0;
  while (suffix < shorter - prefix &&
         before[before.size() - 1 - suffix] == after[after.size() - 1 - suffix])
    ++suffix;
  const std::size_t from = prefix - std::min(prefix, kBefore);
  std::string name = DefinedName({before.begin(), before.begin() + static_cast<long>(prefix)});
  if (name.empty())
    name = DefinedName(before);
  std::string out = name.empty() ? std::string() : "in `" + name + "`: ";
  out.append("`")
      .append(CutAt(WordSpan(before, from, before.size() - suffix + std::min(suffix, kAfter)), 200))
      .append("` -> `")
      .append(CutAt(WordSpan(after, from, after.size() - suffix + std::min(suffix, kAfter)), 240))
      .append("`");
  return out;
}

// An edit's content as one line from the fields of the common edit tools: what a replacement
// changed (ReplacementChange), or the text written or removed.
std::string EditChange(const std::vector<Field>& fields) {
  const std::string* before =
      FieldValue(fields, {"old_str", "old_string", "search", "old_text", "old"});
  const std::string* after = FieldValue(
      fields, {"new_str", "new_string", "replace", "new_text", "new", "insert_text", "text"});
  auto line = [](const std::string* text) {
    return text == nullptr ? std::string() : CutAt(Join(SafeLines(*text), " "), 240);
  };
  const std::string old_line = line(before);
  const std::string new_line = line(after);
  if (new_line.empty())
    return old_line.empty() ? std::string() : "removed `" + old_line + "`";
  return old_line.empty() ? "`" + new_line + "`" : ReplacementChange(*before, *after);
}

// The lines a patch adds, as one line.
std::string PatchChange(std::string_view patch) {
  std::vector<std::string> added;
  for (const std::string_view line : RawLines(patch)) {
    if (line.starts_with('+') && !line.starts_with("+++"))
      added.emplace_back(line.substr(1));
  }
  const std::string body = CutAt(Join(SafeLines(Join(added, "\n")), " "), 320);
  return body.empty() ? std::string() : "added `" + body + "`";
}

// The body of SWE-agent's "edit N:M" command (up to "end_of_edit"), or the added lines of a
// patch, as one line.
std::string ShellEditChange(std::string_view command,
                            const std::vector<std::pair<std::string, FileTouch>>& files) {
  if (std::none_of(files.begin(), files.end(),
                   [](const auto& file) { return file.second == FileTouch::kEdited; })) {
    return {};
  }
  const std::size_t line_end = command.find('\n');
  if (line_end == std::string_view::npos)
    return {};
  const std::string_view first = Trim(command.substr(0, line_end));
  std::vector<std::string> kept;
  const bool swe_edit = first.starts_with("edit ");
  for (const std::string_view line : RawLines(command.substr(line_end + 1))) {
    if (!swe_edit)
      break;
    if (Trim(line) == "end_of_edit")
      break;
    kept.emplace_back(line);
  }
  if (!swe_edit)
    return PatchChange(command);
  const std::string body = CutAt(Join(SafeLines(Join(kept, "\n")), " "), 320);
  if (body.empty())
    return {};
  return "lines " + CutAt(Clean(first.substr(5)), 40) + ": `" + body + "`";
}

}  // namespace

// Patch headers: apply_patch ("*** Update File: p") and unified diffs ("+++ b/p").
void PatchFiles(std::string_view patch, std::vector<std::pair<std::string, FileTouch>>& files) {
  bool from_null = false;
  std::string deleted_candidate;
  for (const std::string_view line : RawLines(patch)) {
    struct Header {
      std::string_view prefix;
      FileTouch touch;
    };
    constexpr std::array<Header, 4> kHeaders = {{{"*** Add File: ", FileTouch::kCreated},
                                                 {"*** Update File: ", FileTouch::kEdited},
                                                 {"*** Delete File: ", FileTouch::kDeleted},
                                                 {"*** Move to: ", FileTouch::kCreated}}};
    for (const Header& header : kHeaders) {
      if (line.starts_with(header.prefix)) {
        if (auto path = PathOf(line.substr(header.prefix.size())))
          files.emplace_back(*path, header.touch);
      }
    }
    if (line.starts_with("--- ")) {
      std::string_view path = Trim(line.substr(4));
      path = path.substr(0, path.find('\t'));
      from_null = path == "/dev/null";
      deleted_candidate = path.starts_with("a/") ? std::string(path.substr(2)) : std::string(path);
    } else if (line.starts_with("+++ ")) {
      std::string_view path = Trim(line.substr(4));
      path = path.substr(0, path.find('\t'));
      if (path == "/dev/null") {
        if (auto old_path = PathOf(deleted_candidate))
          files.emplace_back(*old_path, FileTouch::kDeleted);
        continue;
      }
      if (path.starts_with("b/"))
        path.remove_prefix(2);
      if (auto clean = PathOf(path))
        files.emplace_back(*clean, from_null ? FileTouch::kCreated : FileTouch::kEdited);
    }
  }
}

std::string ToolKey(std::string_view name) {
  std::string key = Lower(name);
  std::erase(key, '_');
  std::erase(key, '-');
  return key;
}

// What a call will record: from its name and input.
CallEffect EffectOf(std::string id, std::string name, std::string_view input,
                    std::string& swe_open_file, Ledger& ledger) {
  CallEffect effect{std::move(id), std::move(name), {}, {}, false, {}, false, {}, {}};
  const std::string key = ToolKey(effect.name);
  const std::string_view trimmed = Trim(input);
  const std::vector<Field> fields =
      trimmed.starts_with('{') ? ReadFields(trimmed) : std::vector<Field>{};
  const std::string* path =
      FieldValue(fields, {"file_path", "path", "filename", "notebook_path", "target_file", "file"});
  // SWE-agent's editor works on the file it opened last; its calls name no path.
  auto touch = [&](FileTouch kind) {
    std::optional<std::string> clean = path != nullptr ? PathOf(*path)
                                       : swe_open_file.empty() || kind == FileTouch::kRead
                                           ? std::nullopt
                                           : std::optional(swe_open_file);
    if (!clean)
      return;
    if (kind == FileTouch::kEdited)
      effect.change = EditChange(fields);
    effect.files.emplace_back(*clean, kind);
    if (key == "open" || key == "create")
      swe_open_file = *clean;
  };
  if (IsQuestionTool(key)) {
    effect.question = true;
  } else if (key == "todowrite" || key == "updateplan" || key == "tasktracker" ||
             key == "writetodos" || key == "todo") {
    std::vector<TodoItem> todos = TodoItems(fields);
    if (!todos.empty())
      ledger.RecordTodos(std::move(todos));
  } else if (key == "applypatch" || key == "patch") {
    // The patch is a member of an object, or (Codex's free-form tool) the whole input as one
    // JSON string, or the raw text.
    const std::string* member = FieldValue(fields, {"input", "patch", "diff"});
    std::string whole;
    if (member == nullptr && trimmed.starts_with('"'))
      ReadString(trimmed, 0, whole);
    const std::string_view patch = member != nullptr ? std::string_view(*member)
                                   : !whole.empty()  ? std::string_view(whole)
                                                     : trimmed;
    PatchFiles(patch, effect.files);
    effect.change = PatchChange(patch);
  } else if (key == "strreplaceeditor" || key == "strreplacebasededittool" || key == "fileeditor" ||
             key == "editor" || key == "texteditor") {
    const std::string* command = FieldValue(fields, {"command"});
    const std::string sub = command != nullptr ? *command : std::string();
    if (sub == "undo_edit")
      return effect;  // a step back, not a change to report
    touch(sub == "view"     ? FileTouch::kRead
          : sub == "create" ? FileTouch::kCreated
                            : FileTouch::kEdited);
  } else if (key == "submit") {
    effect.submits = true;
  } else if (key == "task" || key == "agent" || key == "delegate" || key == "subagent" ||
             key == "spawnagent" || key == "dispatchagent") {
    // A sub-agent: what it was asked is its description (else the start of its prompt).
    const std::string* what = FieldValue(fields, {"description", "task", "prompt"});
    if (what != nullptr && !LooksLikeSecret(*what))
      effect.delegated = CutAt(Clean(*what), 120);
  } else if (key == "read" || key == "readfile" || key == "view" || key == "viewfile" ||
             key == "openfile" || key == "cat" || key == "notebookread" || key == "readfiles" ||
             key == "open") {
    touch(FileTouch::kRead);
  } else if (key == "write" || key == "writefile" || key == "createfile" || key == "create" ||
             key == "writetofile" || key == "savefile") {
    touch(FileTouch::kCreated);
  } else if (key == "edit" || key == "multiedit" || key == "editfile" || key == "strreplace" ||
             key == "replace" || key == "searchreplace" || key == "notebookedit" ||
             key == "insert" || key == "replaceinfile" || key == "applydiff") {
    touch(FileTouch::kEdited);
  } else {
    const std::string* command = FieldValue(fields, {"command", "cmd", "script"});
    const bool shell = IsShellTool(key) || (command != nullptr && !fields.empty());
    std::string text = command != nullptr                     ? *command
                       : (shell && !trimmed.starts_with('{')) ? std::string(trimmed)
                                                              : std::string();
    // Codex runs ["bash", "-lc", "…"]: the script is what matters.
    for (const std::string_view prefix :
         {std::string_view("bash -lc "), std::string_view("bash -c "), std::string_view("sh -c "),
          std::string_view("zsh -lc ")}) {
      if (text.starts_with(prefix))
        text.erase(0, prefix.size());
    }
    if (shell && !text.empty()) {
      ShellFiles(text, swe_open_file, effect.files);
      effect.change = ShellEditChange(text, effect.files);
      effect.submits = Trim(text) == "submit";
      // The first line names the command; a heredoc or an edit body after it is content.
      const std::size_t line_end = text.find('\n');
      // Only the first line is recorded, so only it must be free of secrets (a commit
      // message's "Co-Authored-By:" trailer looks like a credential's name).
      if (!LooksLikeSecret(text.substr(0, line_end))) {
        effect.command = Clean(text.substr(0, line_end));
        if (line_end != std::string::npos && !effect.command.empty())
          effect.command.append(" ").append(kEllipsis);
      }
    }
  }
  return effect;
}

}  // namespace harness::extractive_detail

#include "compaction/extractive_reader.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "compaction/extractive_calls.h"
#include "compaction/extractive_fields.h"
#include "compaction/extractive_secrets.h"
#include "compaction/extractive_sentences.h"
#include "compaction/extractive_text.h"
#include "compaction/extractive_tool_output.h"
#include "harness/compaction/wire.h"
#include "harness/content/user_text.h"

namespace harness::extractive_detail {

namespace {

class Reader {
 public:
  Extract Read(const Transcript& transcript) {
    std::string swe_open_file;
    for (std::size_t i = 0; i < transcript.size(); ++i) {
      const Message& message = transcript[i];
      at_ = i;
      if (message.role() == Role::kSystem)
        continue;  // configuration, not conversation: never summarized
      if (i == 0) {
        if (auto carried = ReadCarriedSummary(message)) {
          Carry(std::move(*carried), i);
          continue;
        }
      }
      if (const auto* tool = message.as<ToolResultMessage>()) {
        said_before_.clear();
        const std::string body = Flattened(tool->blocks);
        extract_.salience.Observe(body, kReadWeight);
        OnResult(tool->tool_use_id, tool->is_error, body);
        continue;
      }
      std::string text;
      std::string said;  // the message's words since its last call
      const std::size_t calls_before = next_call_;
      for (const Block& block : message.blocks()) {
        if (const auto* call = block.as<ToolUseBlock>()) {
          extract_.salience.Observe(call->input.value_or(""), kWrittenWeight);
          AddCall(EffectOf(call->id, call->name, call->input.value_or(""), swe_open_file,
                           extract_.ledger),
                  said);
        } else if (const auto* result = block.as<ToolResultBlock>()) {
          const std::string body = Flattened(result->content);
          extract_.salience.Observe(body, kReadWeight);
          OnResult(result->tool_use_id, result->is_error, body);
        } else if (const auto* piece = block.as<TextBlock>()) {
          const std::string_view value = piece->text;
          if (value.starts_with(kCalledToolPrefix) && value.ends_with(']')) {
            auto [name, input] = SplitProjectedCall(value);
            extract_.salience.Observe(input, kWrittenWeight);
            AddCall(EffectOf("", std::string(name), input, swe_open_file, extract_.ledger), said);
          } else if (!IsPlaceholder(value)) {
            text.append(value);
            text.push_back('\n');
            if (message.role() == Role::kAssistant) {
              said.append(value);
              said.push_back('\n');
            }
          }
        }
      }
      if (message.role() == Role::kUser) {
        // SWE-agent without function calling: the command was the fence that ended the
        // assistant's message, and this is its observation, not the user's words.
        if (auto action = std::exchange(fenced_action_, std::nullopt);
            action && IsSweObservation(text)) {
          std::string none;
          AddCall(EffectOf("", "bash", *action, swe_open_file, extract_.ledger), none);
          OnResult("", false, text);
          continue;
        }
        said_before_.clear();
        OnUser(text, i);
        continue;
      }
      extract_.salience.Observe(text, kWrittenWeight);
      const bool called = next_call_ != calls_before;
      fenced_action_ = called ? std::nullopt : TrailingFence(text);
      // Words a call in the next message may follow; a fenced command's are the ones before it.
      said_before_ = fenced_action_ ? std::string(BeforeTrailingFence(text)) : std::move(said);
      if (OnAssistant(text, i))
        acted_since_text_ = called;
      else
        acted_since_text_ = acted_since_text_ || called;
    }
    Finish();
    return std::move(extract_);
  }

 private:
  static constexpr std::string_view kCalledToolPrefix = "[called tool: ";
  // Salience weights (compaction/salience.h): what the run only read, what the agent wrote
  // (its words and its tool inputs), what the user named.
  static constexpr std::size_t kReadWeight = 1;
  static constexpr std::size_t kWrittenWeight = 2;
  static constexpr std::size_t kUserWeight = 3;
  // A user message of rules alone at most this long is kept as its rules only.
  static constexpr std::size_t kShortRuleBytes = 160;
  // Steps and sub-agents' reports kept while reading, and the words of a step's answer kept:
  // more than are ever told, bounded so that a transcript of many short requests is not held
  // twice.
  static constexpr std::size_t kStepsKept = 64;
  static constexpr std::size_t kAnswerBytes = 1024;
  static constexpr std::size_t kPointsKept = 16;
  static constexpr std::size_t kPointBytes = 200;
  // A user message at most this long right after the assistant asked something answers it.
  static constexpr std::size_t kShortReplyBytes = 200;
  // Later requests kept while reading: more than a summary's budget ever holds.
  static constexpr std::size_t kLaterRequestsKept = 128;
  // A later request at most this long is told verbatim, its rules too.
  static constexpr std::size_t kVerbatimRequestBytes = 200;
  // A request shorter than this, once its rules are told apart, was made of rules alone.
  static constexpr std::size_t kShortestRequestBytes = 12;
  // Rules taken from one source of the task.
  static constexpr std::size_t kObligationsPerSource = 16;

  // A summary of earlier work, at the head or later (another agent's continuation summary in
  // an imported session): its rules and choices are this run's too; the first one gives the
  // task, a later one adds its items to the carried ones.
  void Carry(CarriedSummary carried, std::size_t at) {
    for (const std::string& rule : carried.constraints)
      AddConstraint(rule);
    for (std::string& decision : carried.decisions) {
      decision_index_[decision] = extract_.decisions.size();
      extract_.decisions.push_back(Dated{std::move(decision), at});
    }
    carried.decisions.clear();
    if (!extract_.carried) {
      extract_.carried = std::move(carried);
      return;
    }
    CarriedSummary& known = *extract_.carried;
    for (std::string& item : carried.goal)
      known.goal.push_back(item.starts_with("Later: ") ? std::move(item) : "Later: " + item);
    for (std::string& item : carried.state)
      known.state.push_back(std::move(item));
    for (std::string& item : carried.open_items)
      known.open_items.push_back(std::move(item));
  }
  static constexpr std::string_view kInputCutPrefix = "[tool input truncated for compaction:";

  // The text before the code fence that ends it, or all of it.
  static std::string_view BeforeTrailingFence(std::string_view text) {
    const std::string_view trimmed = Trim(text);
    if (!trimmed.ends_with("```") || trimmed.size() < 6)
      return text;
    const std::size_t open = trimmed.substr(0, trimmed.size() - 3).rfind("```");
    return open == std::string_view::npos ? text : trimmed.substr(0, open);
  }

  // The body of a code fence that ends the text.
  static std::optional<std::string> TrailingFence(std::string_view text) {
    text = Trim(text);
    if (!text.ends_with("```") || text.size() < 6)
      return std::nullopt;
    text.remove_suffix(3);
    const std::size_t open = text.rfind("```");
    if (open == std::string_view::npos)
      return std::nullopt;
    std::string_view body = text.substr(open + 3);
    const std::size_t line_end = body.find('\n');
    if (line_end == std::string_view::npos)
      return std::nullopt;
    body = Trim(body.substr(line_end + 1));
    if (body.empty())
      return std::nullopt;
    return std::string(body);
  }

  static bool IsSweObservation(std::string_view text) {
    text = Trim(text);
    return text.ends_with("bash-$") && text.find("(Current directory: ") != std::string_view::npos;
  }

  static bool IsPlaceholder(std::string_view text) {
    return text == kOldToolResultStub ||
           (text.starts_with('[') && text.ends_with(" omitted for compaction]")) ||
           text.starts_with("[model refused: ");
  }

  // "[called tool: NAME INPUT]" -> NAME, INPUT (the cap's marker removed).
  static std::pair<std::string_view, std::string_view> SplitProjectedCall(std::string_view text) {
    std::string_view inner = text.substr(kCalledToolPrefix.size());
    inner.remove_suffix(1);
    const std::size_t space = inner.find(' ');
    if (space == std::string_view::npos)
      return {inner, {}};
    std::string_view input = inner.substr(space + 1);
    const std::size_t cut = input.rfind(kInputCutPrefix);
    if (cut != std::string_view::npos && input.ends_with(']'))
      input = input.substr(0, cut);
    return {inner.substr(0, space), input};
  }

  // The texts of a result, nested results in place. The input is validated, so nesting is
  // at most 128 deep.
  static void AppendFlattened(std::string& out, const std::vector<Block>& blocks) {
    for (const Block& block : blocks) {
      if (const auto* text = block.as<TextBlock>()) {
        if (!out.empty())
          out.push_back('\n');
        out.append(text->text);
      } else if (const auto* nested = block.as<ToolResultBlock>()) {
        AppendFlattened(out, nested->content);
      }
    }
  }

  static std::string Flattened(const std::vector<Block>& blocks) {
    std::string out;
    AppendFlattened(out, blocks);
    return out;
  }

  // The call a result answers, which is then no longer pending: by id when the call kept one,
  // else the oldest projected call (results follow their calls in order).
  // Constant time each, however many calls are open (an untrusted head may hold many).
  std::optional<CallEffect> Resolve(std::string_view tool_use_id) {
    std::deque<Open>* queue = nullptr;
    if (const auto found = by_id_.find(std::string(tool_use_id));
        found != by_id_.end() && !found->second.empty()) {
      queue = &found->second;
    } else if (!projected_.empty()) {
      queue = &projected_;
    }
    if (queue == nullptr)
      return std::nullopt;
    CallEffect effect = std::move(queue->front().effect);
    queue->pop_front();
    return effect;
  }

  // A call, with the words just before it: the message's own since its last call, else, for
  // its first call, the previous message's last words. Those say why an edit is made; they
  // are the reason of one call only, so several edits after one sentence carry it once.
  void AddCall(CallEffect effect, std::string& said) {
    const std::string why =
        said.empty() ? std::exchange(said_before_, {}) : std::exchange(said, {});
    said_before_.clear();
    if (!effect.change.empty())
      effect.reason = EditReason(SafeLines(why));
    AddPending(std::move(effect));
  }

  void AddPending(CallEffect effect) {
    std::deque<Open>& queue = effect.id.empty() ? projected_ : by_id_[effect.id];
    queue.push_back(Open{next_call_++, std::move(effect)});
  }

  void OnResult(std::string_view tool_use_id, bool is_error, const std::string& body) {
    std::optional<CallEffect> call = Resolve(tool_use_id);
    if (body == kOldToolResultStub)
      return;
    // The user refused the call and said how to go on instead: those are the user's words.
    // Only a result that begins as a refusal is lowered whole, not every tool output.
    if (Lower(std::string_view(body).substr(0, kRefusal.size())) == kRefusal) {
      if (const std::size_t said = Lower(body).find(kUserSaid); said != std::string::npos) {
        OnUser(body.substr(said + kUserSaid.size()), at_);
        return;
      }
    }
    ToolOutput output = ReadToolOutput(body);
    if (NeverRan(output))
      return;  // nothing happened: neither a failure nor a result
    // Codex reports {"output": "…", "metadata": {"exit_code": 1}}.
    if (Trim(body).starts_with("{\"output\"")) {
      const std::vector<Field> fields = ReadFields(Trim(body));
      if (const std::string* inner = FieldValue(fields, {"output"})) {
        const std::optional<long> code = output.exit_code;
        output = ReadToolOutput(*inner);
        if (!output.exit_code)
          output.exit_code = code;
      }
    }
    if (call && call->question) {
      AddUserAnswer(output);
      return;
    }
    // An exit status counts for commands only: a file that was read may well say "exit_code 1".
    // Without one, a command that ends in a traceback failed.
    const bool command = call && !call->command.empty();
    const bool failed =
        is_error || Refused(output) ||
        (command && (output.exit_code ? *output.exit_code != 0 : EndsInTraceback(output)));
    if (call) {
      // A failed edit changed nothing; what was read is still known.
      bool change_told = false;  // one change, told with the first file it edits
      for (const auto& [path, touch] : call->files) {
        if (!failed || touch == FileTouch::kRead)
          extract_.ledger.Touch(path, touch);
        if (!failed && !change_told && touch == FileTouch::kEdited && !call->change.empty()) {
          extract_.ledger.RecordEdit(path, call->change, call->reason);
          change_told = true;
        }
      }
      if (call->submits && !failed) {
        std::vector<std::pair<std::string, FileTouch>> handed_in;
        PatchFiles(body, handed_in);
        std::vector<std::string> paths;
        for (auto& [path, touch] : handed_in)
          paths.push_back(std::move(path));
        extract_.ledger.RecordSubmission(std::move(paths));
      }
    }
    if (command) {
      extract_.ledger.RecordCommand(call->command, output, failed);
      if (!failed && call->command.find("git commit") != std::string::npos)
        extract_.ledger.RecordCommits(output.lines);
    }
    if (call && !failed && IsTaskSource(*call))
      AddObligations(*call, output);
    if (call && !failed && !call->delegated.empty() && !output.lines.empty()) {
      extract_.reports.push_back(Dated{
          "Sub-agent (" + call->delegated + "): " + CutAt(Join(output.lines, " "), 4096), at_});
      if (extract_.reports.size() > kStepsKept)
        extract_.reports.erase(extract_.reports.begin());
    }
    if (failed && (!command || Refused(output)))
      extract_.ledger.RecordToolError(call ? std::string_view(call->name) : "tool", output);
    if (auto run = ReadTestRun(output.lines)) {
      if (call)
        run->command = call->command.size() <= 160 ? call->command : std::string();
      extract_.ledger.RecordTestRun(std::move(*run));
    }
  }

  // A call that read what the task is: a spec, ticket or plan file, an issue tracker's view of
  // a ticket. Its rules are the task's rules.
  static bool IsTaskSource(const CallEffect& call) {
    constexpr std::array<std::string_view, 14> kFileWords = {
        "spec", "requirement", "ticket", "issue", "task",      "todo",      "plan",
        "prd",  "design",      "story",  "brief", "agents.md", "claude.md", "instructions"};
    for (const auto& [path, touch] : call.files) {
      if (touch != FileTouch::kRead)
        continue;
      const std::string lower = Lower(path.substr(path.rfind('/') + 1));
      const std::size_t dot = lower.rfind('.');
      const std::string_view extension =
          dot == std::string::npos ? std::string_view() : std::string_view(lower).substr(dot);
      const bool text = extension.empty() || extension == ".md" || extension == ".txt" ||
                        extension == ".rst" || extension == ".adoc" || extension == ".org";
      if (text && std::any_of(kFileWords.begin(), kFileWords.end(), [&](std::string_view w) {
            return lower.find(w) != std::string::npos;
          }))
        return true;
    }
    const std::string command = Lower(call.command);
    constexpr std::array<std::string_view, 7> kTrackers = {
        "gh issue view", "gh pr view",   "glab issue view", "issues show",
        "jira issue",    "linear issue", "bd show"};
    if (std::any_of(kTrackers.begin(), kTrackers.end(),
                    [&](std::string_view t) { return command.find(t) != std::string::npos; }))
      return true;
    // An issue tool (a tracker's MCP server: get_issue, issue_read); a fetched web page is
    // research, not the task, unless it is a ticket, which such a tool reads.
    return ToolKey(call.name).find("issue") != std::string::npos;
  }

  // The rules a task's source sets ("must", "never", "only", …), as constraints naming it.
  void AddObligations(const CallEffect& call, const ToolOutput& output) {
    std::string source = call.files.empty() ? std::string() : call.files.front().first;
    if (source.empty())
      source = !call.command.empty() ? CutAt(call.command, 80) : SafeName(call.name);
    std::string text;
    for (const std::string& line : output.lines) {
      text.append(line).push_back('\n');
    }
    extract_.salience.Observe(text, kReadWeight);  // its names count as the task's
    std::size_t added = 0;
    for (const std::string& line : output.lines) {
      if (added == kObligationsPerSource)
        break;  // a spec of megabytes is read up to its first rules, not to its end
      if (LooksLikeCode(line))
        continue;
      std::string_view words = Trim(line);
      while (words.starts_with("- ") || words.starts_with("* ") || words.starts_with("#"))
        words = Trim(words.substr(words.starts_with('#') ? 1 : 2));
      for (std::string& sentence : Sentences({Clean(words)})) {
        if (added == kObligationsPerSource || sentence.size() < 12)
          continue;
        if (IsConstraint(Lower(sentence)) && !IsFiller(sentence)) {
          AddConstraint("From " + source + ": " + sentence);
          ++added;
        }
      }
    }
  }

  // A result that says the call was never run: cancelled because a call beside it failed
  // ("Sibling tool call errored"), or refused by the user before it ran.
  static constexpr std::string_view kRefusal = "the user doesn't want to proceed";
  static constexpr std::string_view kUserSaid = "the user said:";

  static bool NeverRan(const ToolOutput& output) {
    if (output.lines.empty())
      return false;
    const std::string first = Lower(output.lines.front());
    return first.starts_with("sibling tool call errored") ||
           first.starts_with("the user doesn't want to proceed with this tool use") ||
           first.starts_with("the user doesn't want to take this action");
  }

  // A tool that answers in words that it refused the call (SWE-agent's linter refusing an
  // edit).
  static bool Refused(const ToolOutput& output) {
    return !output.lines.empty() &&
           Lower(output.lines.front()).starts_with("your proposed edit has introduced");
  }

  static bool EndsInTraceback(const ToolOutput& output) {
    const bool traceback = std::any_of(output.lines.begin(), output.lines.end(), [](const auto& l) {
      return Lower(l).starts_with("traceback (most recent call last)");
    });
    return traceback && !LastErrorLine(output.lines).empty();
  }

  void AddUserAnswer(const ToolOutput& output) {
    std::vector<std::string> kept;
    for (const std::string& line : output.lines) {
      const std::string lower = Lower(line);
      if (lower.starts_with("you can now continue"))
        continue;
      kept.push_back(line);
    }
    // Claude Code wraps the answers: "User has answered your questions: "Q"="A". You can now
    // continue with the user's answers in mind."
    std::string answer = Join(kept, " ");
    const std::size_t boilerplate = Lower(answer).find(" you can now continue");
    if (boilerplate != std::string::npos)
      answer.resize(boilerplate);
    constexpr std::string_view kPreamble = "user has answered your questions: ";
    if (Lower(answer).starts_with(kPreamble))
      answer.erase(0, kPreamble.size());
    if (answer.empty())
      return;
    AddConstraint("User answered: " + answer);
  }

  // A rule said again is the same rule: compared without case, a final period, or a one-word
  // label before it ("Again: never touch vendor/." is "Never touch vendor/").
  static std::string RuleKey(std::string_view rule) {
    std::string key = Lower(Trim(rule));
    const std::size_t colon = key.find(": ");
    if (colon != std::string::npos && colon <= 12 &&
        std::all_of(key.begin(), key.begin() + static_cast<std::ptrdiff_t>(colon),
                    [](char c) { return c >= 'a' && c <= 'z'; }))
      key.erase(0, colon + 2);
    while (!key.empty() && (key.back() == '.' || key.back() == ' '))
      key.pop_back();
    return key;
  }

  void AddConstraint(std::string constraint) {
    if (known_constraints_.insert(RuleKey(constraint)).second)
      extract_.constraints.push_back(std::move(constraint));
  }

  void OnUser(const std::string& raw, std::size_t at) {
    UserText read = ReadUserText(raw);
    switch (read.kind) {
      case UserTextKind::kNotice:
        return;
      case UserTextKind::kProjectInstructions:
        extract_.project_instructions = Join(SafeLines(read.words), " ");
        return;
      case UserTextKind::kCarriedSummary:
        Carry(ReadAnyCarriedSummary(read.words), at);
        return;
      case UserTextKind::kRequest:
        break;
    }
    const std::string text = std::move(read.words);
    extract_.salience.Observe(text, kUserWeight);
    const std::vector<std::string> lines = SafeLines(text);
    if (lines.empty())
      return;
    const std::string whole = Join(lines, " ");
    const std::string lower = Lower(whole);
    if (extract_.fallback_goal.empty())
      extract_.fallback_goal = whole;
    // A short reply to the assistant's question ("no, don't set it") means nothing without the
    // question: its rules and its request are told with it.
    const std::string question = std::exchange(extract_.awaiting, {});
    const std::string answering = !question.empty() && whole.size() <= kShortReplyBytes
                                      ? "Answering \"" + CutAt(question, 160) + "\": "
                                      : std::string();
    if (IsContinuation(lower) || IsGreeting(lower))
      return;
    extract_.unanswered = Dated{whole, at};
    extract_.steps.push_back(Step{whole, at, {}, {}});
    if (extract_.steps.size() > kStepsKept)
      extract_.steps.erase(extract_.steps.begin());
    // Constraints: the user's own lines, outside code fences and not code or logs.
    bool all_constraints = true;
    std::vector<std::string> rules;  // this message's rule sentences
    bool in_fence = false;
    for (const std::string_view line : RawLines(text)) {
      if (Trim(line).starts_with("```")) {
        in_fence = !in_fence;
        continue;
      }
      if (in_fence || LooksLikeCode(line) || LooksLikeSecret(line))
        continue;
      std::string_view words = Trim(line);
      if (words.starts_with("- ") || words.starts_with("* "))
        words.remove_prefix(2);
      for (std::string& sentence : Sentences({Clean(words)})) {
        const std::string sentence_lower = Lower(sentence);
        // A question asks; it sets no rule ("does it only run on main?").
        if (IsConstraint(sentence_lower) && !sentence_lower.ends_with('?')) {
          rules.push_back(sentence);
          AddConstraint(answering + sentence);
        } else if (!IsGreeting(sentence_lower)) {
          all_constraints = false;
        }
      }
    }
    if (IsPointer(lower)) {
      if (!extract_.first_request) {
        if (!extract_.pointer.empty())
          extract_.pointer.append(" ");
        extract_.pointer.append(whole);
        return;
      }
      AddLaterRequest(Dated{whole, at});
      return;
    }
    if (!extract_.first_request) {
      std::string goal = whole;
      if (!extract_.pointer.empty())
        goal = extract_.pointer + " \xE2\x80\x94 " + goal;
      extract_.first_request = Dated{std::move(goal), at};
      return;
    }
    // A short message of constraints alone is already in constraints; a longer one is a
    // request that also sets rules, and is kept whole.
    // A short later request is told verbatim; a long one without its rules, which the
    // constraints tell (each item once), unless it is made of rules alone: then the rules are
    // what it asks for ("the endpoint should accept both JSON and form bodies"), told whole.
    if (!all_constraints || whole.size() > kShortRuleBytes) {
      std::string request =
          whole.size() <= kVerbatimRequestBytes ? whole : WithoutSentences(whole, rules);
      if (request.size() < kShortestRequestBytes)
        request = whole;
      AddLaterRequest(Dated{answering + request, at});
    }
  }

  // Only the newest later requests can ever be told: a transcript of many short requests keeps
  // the newest kLaterRequestsKept (to 2x that between trims), not all of them.
  void AddLaterRequest(Dated request) {
    std::vector<Dated>& requests = extract_.later_requests;
    requests.push_back(std::move(request));
    if (requests.size() >= 2 * kLaterRequestsKept)
      requests.erase(requests.begin(),
                     requests.end() - static_cast<std::ptrdiff_t>(kLaterRequestsKept));
  }

  // `text` without the first occurrence of each of `sentences`, white space collapsed where
  // they were.
  static std::string WithoutSentences(const std::string& text,
                                      const std::vector<std::string>& sentences) {
    std::string out = text;
    for (const std::string& sentence : sentences) {
      const std::size_t at = out.find(sentence);
      if (at == std::string::npos || sentence.empty())
        continue;
      std::size_t end = at + sentence.size();
      while (end < out.size() && out[end] == ' ')
        ++end;
      out.erase(at, end - at);
    }
    return std::string(Trim(out));
  }

  // Whether the message said anything.
  bool OnAssistant(const std::string& raw, std::size_t at) {
    const std::vector<std::string> lines = SafeLines(raw);
    if (lines.empty())
      return false;
    extract_.unanswered.reset();
    extract_.awaiting.clear();
    const std::vector<std::string> sentences = Sentences(lines);
    for (const std::string& sentence : sentences) {
      const std::string lower = Lower(sentence);
      if (!IsDecision(lower) || IsNextStep(lower) || IsFiller(sentence))
        continue;  // a next step is open, not decided
      const auto known = decision_index_.find(sentence);
      if (known != decision_index_.end())
        extract_.decisions[known->second].text.clear();  // moves to its latest place
      decision_index_[sentence] = extract_.decisions.size();
      extract_.decisions.push_back(Dated{sentence, at});
    }
    if (!sentences.empty() && sentences.back().ends_with('?'))
      extract_.awaiting = sentences.back();
    extract_.latest_progress = Join(sentences, " ");
    extract_.latest_progress_at = at;
    if (!extract_.steps.empty()) {
      Step& step = extract_.steps.back();
      std::string said;
      for (const std::string& sentence : sentences) {
        if (IsFiller(sentence))
          continue;  // a lead-in, a hedge, a few words: nothing the step came to
        if (!said.empty())
          said.push_back(' ');
        said.append(sentence);
        if (said.size() > kAnswerBytes)
          break;
      }
      step.answers.push_back(CutAt(said.empty() ? extract_.latest_progress : said, kAnswerBytes));
      step.points = ListPoints(lines);
      if (step.points.size() > kPointsKept)
        step.points.resize(kPointsKept);
      for (std::string& point : step.points)
        point = CutAt(point, kPointBytes);
      step.answered_at = at;
      if (step.answers.size() > 2)
        step.answers.erase(step.answers.begin());
    }
    last_assistant_ = sentences;
    return true;
  }

  void Finish() {
    std::erase_if(extract_.decisions, [](const Dated& d) { return d.text.empty(); });
    // What the assistant last said it would do is where the work resumes.
    // An intent the assistant acted on with a tool call after saying it is no longer ahead;
    // an explicit "next step" still is.
    for (const std::string& sentence : last_assistant_) {
      const std::string lower = Lower(sentence);
      const bool intent = HasPhrase(lower, "i'll") || HasPhrase(lower, "i will") ||
                          HasPhrase(lower, "let me") || HasPhrase(lower, "let's") ||
                          HasPhrase(lower, "next");
      if (IsNextStep(lower) || (intent && !acted_since_text_)) {
        extract_.next_steps.push_back(sentence);
        if (extract_.next_steps.size() == 6)
          break;
      }
    }
    std::vector<const Open*> open(projected_.size());
    std::transform(projected_.begin(), projected_.end(), open.begin(),
                   [](const Open& call) { return &call; });
    for (const auto& [id, queue] : by_id_) {
      for (const Open& call : queue)
        open.push_back(&call);
    }
    std::sort(open.begin(), open.end(), [](const Open* a, const Open* b) { return a->at < b->at; });
    for (const Open* call : open) {
      std::string item = "Tool call ";
      item.append(SafeName(call->effect.name));
      item.append(" has no result in the compacted history.");
      extract_.open_calls.push_back(std::move(item));
    }
  }

  struct Open {
    std::size_t at;  // the order the calls were made in
    CallEffect effect;
  };

  Extract extract_;
  std::size_t next_call_ = 0;
  std::unordered_map<std::string, std::deque<Open>> by_id_;
  std::deque<Open> projected_;
  std::unordered_map<std::string, std::size_t> decision_index_;
  std::unordered_set<std::string> known_constraints_;
  std::vector<std::string> last_assistant_;
  std::optional<std::string> fenced_action_;  // the command that ended the assistant's text
  std::string said_before_;  // the last words of the previous message, when it was the agent's
  std::size_t at_ = 0;       // the message being read
  bool acted_since_text_ = false;  // a tool call after (or with) the assistant's last words
};

}  // namespace

Extract ReadTranscript(const Transcript& transcript) {
  return Reader().Read(transcript);
}

}  // namespace harness::extractive_detail

// A long scripted coding session for the compactor's long-run figures (bench/longrun_bench.cc)
// and its acceptance test (tests/acceptance/long_session_test.cc).
//
// LongSessionScript deals the session out turn by turn, deterministically (a fixed LCG, no clock):
// each turn is one user request about a module of a fictional C++ project (fix a failing test,
// add a setting, rename a type, read an environment variable, split a file, ...), some of them
// carrying one of kConstraints ("Never touch vendor/."), each constraint given once in the first
// 70 % of the steps and some of them repeated by the user later ("Again: ..."). A turn is 30 to
// 63 tool steps, then a text answer, so it stays within a loop's 64 model calls (or, OneTurn, the
// whole session is one turn whose request carries every constraint). The steps are
// work units an agent does: read files and grep, edit (sometimes the edit misses its text and
// fails, then the file is read again and the edit retried), create files, build (sometimes a
// compile error, fixed by an edit, then a clean build), run the tests (ctest or pytest output
// with its counts: some failing, fixed by an edit, then all passing). Paths are drawn from 12
// modules x 8 stems x {src .cc, src _impl.cc, include .h, tests _test.cc}; the assistant's words
// name what it creates (types, settings, environment variables, metrics).
//
// LongSession runs such a script in a Session: one native loop with the scripted model client
// (one ScriptedModelClient per turn, so that the requests it records stay bounded), the scenario's
// tools (read_file, edit_file, write_file, grep, bash: each answers with the output the script
// chose for its call id) and the ExtractiveCompactor, timed. The loop's limits and policy are
// those `harness chat --compactor extractive --context-window W` chooses offline
// (src/cli/policy_defaults.h): output a quarter of the window, an estimate margin of a tenth,
// automatic compaction at 80 % re-armed below 60 %, keep_recent_segments 2, keep_recent_tokens
// and max_summary_tokens min(default, a quarter of the input limit), the estimate counter
// (LongSession wraps it in a RecordingCounter, which records each request it counts).
// Run waits for each turn's end before it submits the next; any TurnFailed, or a turn that does
// not end within the deadline, ends the run with an error naming it.
//
// Thread safety: a LongSession is driven from one thread; its tools, client and compactor are
// called by the session's threads and lock what they share.
#pragma once

#include <pthread.h>
#include <time.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cli/eval_facts.h"
#include "harness/compaction/extractive.h"
#include "harness/core/json.h"
#include "harness/event/compaction.h"
#include "harness/event/lifecycle.h"
#include "harness/inference/counter.h"
#include "harness/runtime/session.h"
#include "harness/runtime/tool.h"
#include "harness/scripted/model_client.h"
#include "harness/summary/sections.h"

namespace harness::long_session {

using Clock = std::chrono::steady_clock;

// What the user asks the work to respect, in the order they are first given.
inline constexpr std::array<std::string_view, 20> kConstraints = {
    "Never touch vendor/.",
    "Keep the public API unchanged.",
    "Use only the standard library.",
    "Do not add new dependencies.",
    "All tests must pass under ASan.",
    "Never log the API key.",
    "Keep every function under 80 lines.",
    "Use snake_case for new file names.",
    "Do not change the wire format.",
    "Always run clang-format before you finish.",
    "Avoid global state.",
    "Make sure the config file stays backward compatible.",
    "Use milliseconds everywhere, not seconds.",
    "Never push to main directly.",
    "Keep the CLI flags stable.",
    "Only edit files under src/ and tests/.",
    "Prefer std::span over raw pointer and length pairs.",
    "Do not disable or skip any test.",
    "Make sure every error message names the file it is about.",
    "Stick to C++20 without compiler extensions.",
};

// A constraint as it is looked for in a summary: without its final period, normalized by the
// caller (NormalizeForMatch).
inline std::string_view ConstraintProbe(std::string_view constraint) {
  return constraint.ends_with('.') ? constraint.substr(0, constraint.size() - 1) : constraint;
}

struct ScriptedCall {
  ScriptStep step;        // a kMessage step: the assistant's words and one tool call
  std::string call_id;    // its tool_use id
  std::string tool_name;  // its tool
  ToolOutput output;      // what the tool answers
};

struct ScriptedTurn {
  std::string request;
  std::vector<std::size_t> constraints;  // the indexes in kConstraints it carries
  bool repeated = false;                 // its constraint was given before
  std::vector<ScriptedCall> calls;
  std::string answer;
};

// A deterministic pseudo-random sequence: the same session on every run and machine
// (std::mt19937's sequence is fixed by the standard; its distributions are not, so none is used).
class Dealer {
 public:
  std::size_t Below(std::size_t n) { return engine_() % n; }
  bool Chance(std::size_t percent) { return Below(100) < percent; }

 private:
  std::mt19937 engine_{2026};
};

class LongSessionScript {
 public:
  // `total_steps`: the tool steps of the whole session (the turns' answers not counted).
  explicit LongSessionScript(std::size_t total_steps) : total_(total_steps) {}

  bool done() const { return dealt_ >= total_; }
  std::size_t steps_dealt() const { return dealt_; }
  const std::set<std::string>& paths() const { return paths_; }

  ScriptedTurn NextTurn() {
    ScriptedTurn turn;
    const std::size_t remaining = total_ - dealt_;
    std::size_t length = 30 + rng_.Below(34);  // 30..63 tool steps
    // The last turns: no turn shorter than 30 steps is left over.
    if (remaining <= 63 || remaining - std::min(length, remaining) < 30)
      length = std::min<std::size_t>(remaining, remaining <= 63 ? remaining : remaining - 30);
    module_ = kModules[rng_.Below(kModules.size())];
    stem_ = kStems[rng_.Below(kStems.size())];
    turn.request = Task();
    // A new constraint every few turns through the first 70 % of the steps (all twenty given),
    // and some given again later.
    const std::size_t due =
        (dealt_ * 10 / 7) * kConstraints.size() / std::max<std::size_t>(1, total_);
    if (given_ < kConstraints.size() && given_ <= due) {
      turn.constraints.push_back(given_++);
    } else if (given_ > 3 && rng_.Chance(12)) {
      turn.constraints.push_back(rng_.Below(given_));
      turn.repeated = true;
    }
    if (!turn.constraints.empty()) {
      const std::string_view rule = kConstraints[turn.constraints.front()];
      turn.request += turn.repeated ? " Again: " + std::string(rule) : " " + std::string(rule);
    }
    while (turn.calls.size() < length)
      WorkUnit(turn.calls);
    turn.calls.resize(length);
    dealt_ += length;
    ++turns_;
    turn.answer = "Done: " + task_summary_ + " " + std::to_string(passed_) +
                  " passed, 0 failed; the change is in " + Source() + ".";
    return turn;
  }

  // The whole session as ONE turn: one request, a task carrying all of kConstraints, then every
  // tool step of the session (the work moving on to another module's task every 30 to 63 steps,
  // as NextTurn's turns do, but without a user message in between), then one answer.
  ScriptedTurn OneTurn() {
    ScriptedTurn turn;
    module_ = kModules[rng_.Below(kModules.size())];
    stem_ = kStems[rng_.Below(kStems.size())];
    turn.request = Task();
    for (std::size_t i = 0; i < kConstraints.size(); ++i) {
      // Appended in two pieces: g++ 12 at -O3 warns (-Wrestrict, falsely) on `" " + string`
      // inlined here.
      turn.request += ' ';
      turn.request += kConstraints[i];
      turn.constraints.push_back(i);
    }
    given_ = kConstraints.size();
    while (turn.calls.size() < total_) {
      const std::size_t part = turn.calls.size() + 30 + rng_.Below(34);
      while (turn.calls.size() < part)
        WorkUnit(turn.calls);
      module_ = kModules[rng_.Below(kModules.size())];
      stem_ = kStems[rng_.Below(kStems.size())];
      (void)Task();  // the next part's names (name_, task_summary_)
    }
    turn.calls.resize(total_);
    dealt_ = total_;
    ++turns_;
    turn.answer = "Done: " + task_summary_ + " " + std::to_string(passed_) +
                  " passed, 0 failed; the change is in " + Source() + ".";
    return turn;
  }

 private:
  static constexpr std::array<std::string_view, 12> kModules = {
      "net",  "store", "cli",     "auth",  "cache",  "http",
      "json", "log",   "metrics", "sched", "config", "io"};
  static constexpr std::array<std::string_view, 8> kStems = {
      "client", "server", "retry", "parser", "codec", "pool", "options", "reader"};
  static constexpr std::array<std::string_view, 8> kLines = {
      "  auto result = store.Lookup(key, options.timeout_ms);",
      "  if (!result.ok()) return Fail(result.error());",
      "  for (const Entry& entry : batch.entries()) total += entry.size();",
      "  retries_ = std::min(retries_ + 1, kMaxRetries);  // never above the cap",
      "  const auto deadline = clock.Now() + options.timeout;",
      "  std::lock_guard lock(mutex_);",
      "  return Status::Ok();",
      "}",
  };

  static std::string Pascal(std::string_view word) {
    std::string out(word);
    out[0] = static_cast<char>(out[0] - 'a' + 'A');
    return out;
  }
  static std::string Upper(std::string_view word) {
    std::string out(word);
    for (char& c : out)
      c = c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c;
    return out;
  }

  std::string Source() const {
    return "src/" + std::string(module_) + "/" + std::string(stem_) + ".cc";
  }
  std::string Test() const {
    return "tests/" + std::string(module_) + "/" + std::string(stem_) + "_test.cc";
  }
  std::string AnyPath() {
    const std::string module(module_);
    const std::string stem(kStems[rng_.Below(kStems.size())]);
    switch (rng_.Below(3)) {
      case 0:
        return "src/" + module + "/" + stem + ".cc";
      case 1:
        return "include/" + module + "/" + stem + ".h";
      default:
        return "tests/" + module + "/" + stem + "_test.cc";
    }
  }
  std::string Type() const { return Pascal(module_) + Pascal(stem_); }

  // The turn's request; sets what the turn creates (name_) and says when it is done.
  std::string Task() {
    const std::string m(module_);
    const std::string s(stem_);
    const std::string n = std::to_string(50 + 10 * rng_.Below(20));
    switch (rng_.Below(8)) {
      case 0:
        name_ = Type() + "Budget";
        task_summary_ = name_ + " caps the " + m + " " + s + "'s retries at " + n + " a minute.";
        return "Add a retry budget to the " + m + " " + s + ": at most " + n +
               " retries per minute.";
      case 1:
        name_ = Type() + "Test.RetriesOnTimeout";
        task_summary_ = "the failing tests in " + Test() + " pass.";
        return "Fix the failing tests in " + Test() + ".";
      case 2:
        name_ = Type() + "Config";
        task_summary_ = Type() + "Options is now " + name_ + " in src/" + m + ".";
        return "Rename " + Type() + "Options to " + name_ + " everywhere in src/" + m + ".";
      case 3:
        name_ = m + "." + s + "_timeout_ms";
        task_summary_ =
            "the setting " + name_ + " (default " + n + ") is read in src/" + m + "/options.cc.";
        return "Add the setting " + name_ + " (default " + n + ") and read it in src/" + m +
               "/options.cc.";
      case 4:
        name_ = "HARNESS_" + Upper(m) + "_" + Upper(s) + "_LIMIT";
        task_summary_ = "the " + m + " " + s + " reads " + name_ + ".";
        return "Read the environment variable " + name_ + " in the " + m + " " + s +
               " and document it in docs/" + m + ".md.";
      case 5:
        name_ = m + "/" + s + "_parser";
        task_summary_ = "the parsing of " + Source() + " is in the module " + name_ + ".";
        return "Split " + Source() + ": move the parsing into a new module " + name_ + ".";
      case 6:
        name_ = m + "_" + s + "_queue_depth";
        task_summary_ = "the " + m + " " + s + " reports the metric " + name_ + ".";
        return "Make the " + m + " " + s + " report its queue depth as the metric " + name_ + ".";
      default:
        name_ = Type() + "::Flush";
        task_summary_ = "src/" + m + " builds again.";
        return "The build of src/" + m + " is broken since the last change; fix it.";
    }
  }

  std::string SourceText(const std::string& path, std::size_t lines) {
    std::string out;
    for (std::size_t i = 1; i <= lines; ++i) {
      out += std::to_string(i) + "\t";
      if (i == 1)
        out += "// " + path + ": the " + std::string(module_) + " " + std::string(stem_) + ".";
      else
        out += kLines[rng_.Below(kLines.size())];
      out += '\n';
    }
    return out;
  }

  std::string Input(std::initializer_list<std::pair<std::string_view, std::string>> members) {
    std::string out = "{";
    for (const auto& [key, value] : members) {
      if (out.size() > 1)
        out += ',';
      AppendJsonString(out, key);
      out += ':';
      AppendJsonString(out, value);
    }
    return out + "}";
  }

  void Call(std::vector<ScriptedCall>& calls, std::string words, std::string tool,
            std::string input, std::string output, bool is_error = false) {
    ScriptedCall call;
    call.call_id = "call_" + std::to_string(next_call_++);
    call.tool_name = tool;
    AssistantMessage message;
    message.blocks.emplace_back(TextBlock{std::move(words)});
    message.blocks.emplace_back(
        ToolUseBlock{call.call_id, std::move(tool), std::move(input), {}, ""});
    call.step.kind = ScriptStep::Kind::kMessage;
    call.step.message = std::move(message);
    call.output = ToolOutput{std::move(output), is_error};
    calls.push_back(std::move(call));
  }

  void Read(std::vector<ScriptedCall>& calls, const std::string& path) {
    paths_.insert(path);
    Call(calls, "Let me read " + path + ".", "read_file", Input({{"path", path}}),
         SourceText(path, 25 + rng_.Below(45)));
  }

  void Edit(std::vector<ScriptedCall>& calls, const std::string& path, std::string why) {
    paths_.insert(path);
    const std::string old_line(kLines[rng_.Below(kLines.size())]);
    const std::string new_line = old_line + "  // " + name_;
    const std::string input =
        Input({{"path", path}, {"old_string", old_line}, {"new_string", new_line}});
    if (rng_.Chance(15)) {
      Call(calls, std::move(why), "edit_file", input,
           "Error: old_string not found in " + path + ". Read the file again first.", true);
      Read(calls, path);
      why = "The text differs from what I expected; I'll edit the line as it is now.";
    }
    Call(calls, std::move(why), "edit_file", input, "The file " + path + " has been updated.");
  }

  std::string TestOutput(bool pytest, std::size_t failed, std::size_t total) {
    std::string out;
    const std::string m(module_);
    if (pytest) {
      out =
          "============================= test session starts ==============================\n"
          "collected " +
          std::to_string(total) + " items\n\n";
      for (std::size_t i = 0; i < 6; ++i)
        out += "tests/" + m + "/test_" + std::string(kStems[(i + total) % kStems.size()]) + ".py " +
               std::string(4 + rng_.Below(12), '.') + "\n";
      for (std::size_t i = 0; i < failed; ++i)
        out += "FAILED tests/" + m + "/test_" + std::string(stem_) + ".py::test_case_" +
               std::to_string(i) + " - AssertionError: assert 2 == 3\n";
      out += "======== " + (failed > 0 ? std::to_string(failed) + " failed, " : std::string()) +
             std::to_string(total - failed) + " passed in 0." +
             std::to_string(rng_.Below(90) + 10) + "s ========\n";
      return out;
    }
    for (std::size_t i = 1; i <= std::min<std::size_t>(total, 8); ++i)
      out += "      Start " + std::to_string(i) + ": " + m + "." +
             Pascal(kStems[i % kStems.size()]) + "\n" + std::to_string(i) + "/" +
             std::to_string(total) + " Test #" + std::to_string(i) + ": " + m + "." +
             Pascal(kStems[i % kStems.size()]) + " ....   " +
             (i <= failed ? "***Failed" : "Passed") + "    0.0" +
             std::to_string(rng_.Below(9) + 1) + " sec\n";
    out += "\n" + std::to_string((total - failed) * 100 / total) + "% tests passed, " +
           std::to_string(failed) + " tests failed out of " + std::to_string(total) + "\n";
    if (failed > 0) {
      out += "\nThe following tests FAILED:\n";
      for (std::size_t i = 1; i <= failed; ++i)
        out += "\t  " + std::to_string(i) + " - " + m + "." + Pascal(kStems[i % kStems.size()]) +
               " (Failed)\n";
      out += "Errors while running CTest\nExit code 8\n";
    }
    return out;
  }

  // One unit of work on the turn's module: a few calls.
  void WorkUnit(std::vector<ScriptedCall>& calls) {
    const std::string m(module_);
    switch (rng_.Below(5)) {
      case 0:  // explore
        Read(calls, Source());
        Call(calls, "Let me find where " + name_ + " is used.", "grep",
             Input({{"pattern", name_}, {"path", "src/" + m}}),
             Source() + ":" + std::to_string(10 + rng_.Below(200)) + ":  // " + name_ + "\n" +
                 AnyPath() + ":" + std::to_string(10 + rng_.Below(200)) + ":" +
                 std::string(kLines[rng_.Below(kLines.size())]) + "\n");
        Read(calls, AnyPath());
        break;
      case 1:  // edit
        Read(calls, AnyPath());
        Edit(calls, Source(),
             "I'll make " + name_ + " take the deadline in " + Source() +
                 " rather than a fixed timeout.");
        break;
      case 2: {  // create
        const std::string path = "src/" + m + "/" + std::string(stem_) + "_impl.cc";
        paths_.insert(path);
        Call(calls, "I'll put " + name_ + " in its own file, " + path + ".", "write_file",
             Input({{"path", path}, {"content", SourceText(path, 12 + rng_.Below(20))}}),
             "File created successfully at: " + path);
        break;
      }
      case 3: {  // build, maybe broken, fixed
        const std::string command = "cmake --build build --target " + m + "_tests";
        if (rng_.Chance(35)) {
          Call(calls, "Building the " + m + " tests.", "bash", Input({{"command", command}}),
               "[1/3] Building CXX object " + Source() + ".o\nFAILED: " + Source() + ".o\n" +
                   Source() + ":" + std::to_string(10 + rng_.Below(300)) +
                   ":7: error: use of undeclared identifier '" + name_ +
                   "'\nninja: build stopped: subcommand failed.\nExit code 1\n");
          Edit(calls, Source(), "The root cause is a missing include of " + name_ + "'s header.");
        }
        Call(calls, "Building the " + m + " tests.", "bash", Input({{"command", command}}),
             "[3/3] Linking CXX executable " + m + "_tests\nExit code 0\n");
        break;
      }
      default: {  // tests, maybe failing, fixed
        const bool pytest = module_ == "json" || module_ == "cli" || module_ == "config";
        const std::string command =
            pytest ? "python -m pytest tests/" + m + " -q" : "ctest --test-dir build -R " + m;
        const std::size_t total = 8 + rng_.Below(40);
        if (rng_.Chance(40)) {
          const std::size_t failed = 1 + rng_.Below(3);
          Call(calls, "Running the " + m + " tests.", "bash", Input({{"command", command}}),
               TestOutput(pytest, failed, total));
          Read(calls, Test());
          Edit(calls, Test(),
               "The fix is to wait on the latch instead of the clock in " + Test() + ".");
        }
        passed_ = total;
        Call(calls, "Running the " + m + " tests.", "bash", Input({{"command", command}}),
             TestOutput(pytest, 0, total));
        break;
      }
    }
  }

  const std::size_t total_;
  Dealer rng_;
  std::size_t dealt_ = 0;
  std::size_t turns_ = 0;
  std::size_t given_ = 0;
  std::size_t next_call_ = 0;
  std::size_t passed_ = 0;
  std::string_view module_ = kModules[0];
  std::string_view stem_ = kStems[0];
  std::string name_;
  std::string task_summary_;
  std::set<std::string> paths_;
};

// The model of the loop: a turn's steps in ScriptedModelClients of at most kChunk steps each,
// used one after the other, so that the requests a client records stay bounded however long
// the turn (a finished chunk's client and its requests are dropped).
class TurnScriptedClient final : public ModelClient {
 public:
  static constexpr std::size_t kChunk = 64;

  void Script(std::vector<ScriptStep> steps) {
    std::vector<std::vector<ScriptStep>> chunks;
    for (std::size_t at = 0; at < steps.size(); at += kChunk) {
      const auto from = steps.begin() + static_cast<std::ptrdiff_t>(at);
      chunks.emplace_back(std::make_move_iterator(from),
                          std::make_move_iterator(from + static_cast<std::ptrdiff_t>(
                                                             std::min(kChunk, steps.size() - at))));
    }
    std::lock_guard lock(mutex_);
    chunks_ = std::move(chunks);
    next_chunk_ = 0;
    used_ = kChunk;  // the first call takes the first chunk
    current_.reset();
  }
  Result<InferenceResponse, InferenceError> Complete(const InferenceRequest& request,
                                                     std::stop_token stop) override {
    std::shared_ptr<ScriptedModelClient> client;
    {
      std::lock_guard lock(mutex_);
      if (used_ == kChunk && next_chunk_ < chunks_.size()) {
        current_ = std::make_shared<ScriptedModelClient>(std::move(chunks_[next_chunk_++]));
        used_ = 0;
      }
      ++used_;
      client = current_;
    }
    if (!client)
      return Fail(InferenceError{InferenceErrorKind::kTransport, "no script"});
    return client->Complete(request, stop);
  }

 private:
  std::mutex mutex_;
  std::vector<std::vector<ScriptStep>> chunks_;
  std::size_t next_chunk_ = 0;
  std::size_t used_ = 0;  // calls answered by current_
  std::shared_ptr<ScriptedModelClient> current_;
};

// The outputs the script chose, by call id, and when each call ran (steady clock).
class ToolDesk {
 public:
  void Add(const std::vector<ScriptedCall>& calls) {
    std::lock_guard lock(mutex_);
    for (const ScriptedCall& call : calls)
      outputs_[call.call_id] = call.output;
  }
  ToolOutput Take(std::string_view id) {
    std::lock_guard lock(mutex_);
    ran_.push_back(Clock::now());
    const std::chrono::nanoseconds process = ProcessCpu();
    cpu_.push_back(process);
    session_cpu_.push_back(driver_ ? process - ThreadCpu(*driver_) : process);
    auto it = outputs_.find(std::string(id));
    if (it == outputs_.end())
      return ToolOutput{"no such call", true};
    ToolOutput out = std::move(it->second);
    outputs_.erase(it);
    return out;
  }
  std::size_t calls() const {
    std::lock_guard lock(mutex_);
    return ran_.size();
  }
  std::vector<Clock::time_point> ran() const {
    std::lock_guard lock(mutex_);
    return ran_;
  }
  std::vector<std::chrono::nanoseconds> cpu() const {
    std::lock_guard lock(mutex_);
    return cpu_;
  }
  std::vector<std::chrono::nanoseconds> session_cpu() const {
    std::lock_guard lock(mutex_);
    return session_cpu_;
  }
  // The thread that drives the run (submits the turns, reads the events and checks every
  // summary): its CPU time is the measurement's, not the session's, and session_cpu() leaves it
  // out.
  void DrivenBy(clockid_t thread_clock) {
    std::lock_guard lock(mutex_);
    driver_ = thread_clock;
  }
  // The CPU time of the whole process (every thread) so far: the work of the steps, which a
  // loaded machine's preemptions do not inflate as they do the wall time.
  static std::chrono::nanoseconds ProcessCpu() {
    timespec now{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
    return std::chrono::seconds(now.tv_sec) + std::chrono::nanoseconds(now.tv_nsec);
  }
  static std::chrono::nanoseconds ThreadCpu(clockid_t thread_clock) {
    timespec now{};
    clock_gettime(thread_clock, &now);
    return std::chrono::seconds(now.tv_sec) + std::chrono::nanoseconds(now.tv_nsec);
  }

 private:
  mutable std::mutex mutex_;
  std::map<std::string, ToolOutput> outputs_;
  std::vector<Clock::time_point> ran_;
  std::vector<std::chrono::nanoseconds> cpu_;
  std::vector<std::chrono::nanoseconds> session_cpu_;
  std::optional<clockid_t> driver_;
};

// The estimate counter, each request it counts recorded as the tool steps run before it and the
// request's messages: a count encodes every message of the request (EstimateRequestTokens), the
// largest part of a step's work.
class RecordingCounter final : public ContextCounter {
 public:
  explicit RecordingCounter(std::shared_ptr<const ToolDesk> desk) : desk_(std::move(desk)) {}
  CountQuality quality() const override { return inner_.quality(); }
  Result<ContextCount, CountError> Count(const InferenceRequest& request,
                                         std::stop_token stop) override {
    {
      std::lock_guard lock(mutex_);
      counted_.emplace_back(desk_->calls(), request.messages.size());
    }
    return inner_.Count(request, stop);
  }
  std::vector<std::pair<std::size_t, std::size_t>> counted() const {
    std::lock_guard lock(mutex_);
    return counted_;
  }

 private:
  EstimateCounter inner_;
  std::shared_ptr<const ToolDesk> desk_;
  mutable std::mutex mutex_;
  std::vector<std::pair<std::size_t, std::size_t>> counted_;
};

class DeskTool final : public Tool {
 public:
  DeskTool(std::string name, std::shared_ptr<ToolDesk> desk)
      : definition_{std::move(name), "a tool of the scripted session", "{\"type\":\"object\"}"},
        desk_(std::move(desk)) {}
  const ToolDefinition& definition() const override { return definition_; }
  ToolOutput Run(const harness::ToolCall& call, std::stop_token) override {
    return desk_->Take(call.id);
  }

 private:
  ToolDefinition definition_;
  std::shared_ptr<ToolDesk> desk_;
};

// The extractive compactor, its calls timed; the last input kept (the span of the last commit).
class TimedCompactor final : public Compactor {
 public:
  Result<CompactionOutput, CompactorError> Compact(const CompactionInput& input,
                                                   std::stop_token stop) override {
    const auto start = Clock::now();
    auto output = inner_.Compact(input, stop);
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    std::lock_guard lock(mutex_);
    millis_.push_back(ms);
    last_input_ = input;
    return output;
  }
  std::vector<double> millis() const {
    std::lock_guard lock(mutex_);
    return millis_;
  }
  std::optional<CompactionInput> last_input() const {
    std::lock_guard lock(mutex_);
    return last_input_;
  }

 private:
  ExtractiveCompactor inner_;
  mutable std::mutex mutex_;
  std::vector<double> millis_;
  std::optional<CompactionInput> last_input_;
};

// The loop's limits and policy for a window of `window` tokens (see the top of this file).
inline LoopDefinition LongSessionLoop(TokenCount window) {
  LoopDefinition definition;
  definition.model = ModelKey{"harness", "offline"};
  const TokenCount output = window / 4;
  const TokenCount margin = window / 10;
  definition.limits = ModelLimits{window, 0, output};
  definition.counter = std::make_shared<EstimateCounter>();
  definition.max_steps_per_turn = 64;
  definition.compactor_name = "extractive";
  const TokenCount share = (window - output - margin) / 4;
  definition.compaction = CompactionPolicy{.automatic = true,
                                           .counter_policy = CounterPolicy::kAllowConservative,
                                           .compact_at = 8'000,
                                           .rearm_below = 6'000,
                                           .keep_recent_segments = 2,
                                           .keep_recent_tokens = std::min<TokenCount>(8'000, share),
                                           .reserved_output = output,
                                           .safety_margin = margin,
                                           .max_summary_tokens = std::min<TokenCount>(4'096, share),
                                           .count_timeout = std::chrono::seconds(10),
                                           .coverage = CoveragePolicy{},
                                           .approval = CompactionApproval::kAuto,
                                           .approval_timeout = kDefaultApprovalTimeout,
                                           .masking = CompactionMasking::kOff};
  return definition;
}

// The summary's content as `harness eval` reads it: its five sections decoded, each ended by LF.
inline std::string SummaryContent(const UserMessage& summary) {
  if (summary.blocks.empty() || summary.blocks.front().as<TextBlock>() == nullptr)
    return "";
  const auto sections = ReadSummarySections(summary.blocks.front().as<TextBlock>()->text);
  if (!sections)
    return "";
  return sections->goal + "\n" + sections->constraints + "\n" + sections->decisions + "\n" +
         sections->state + "\n" + sections->open_items + "\n";
}

struct CommitFigures {
  std::chrono::nanoseconds duration{0};  // CompactionCommitted::duration
  std::size_t summary_bytes = 0;
  TokenCount post_tokens = 0;  // the context after the commit
  std::size_t step = 0;        // tool steps run before it
};

struct LongSessionResult {
  std::size_t steps = 0;  // tool calls run
  std::size_t turns = 0;
  std::size_t distinct_paths = 0;
  std::vector<Clock::time_point> step_times;       // when each tool call ran
  std::vector<std::chrono::nanoseconds> step_cpu;  // the process's CPU time then
  // The CPU time of the session's threads then (every thread of the process but the one that
  // called Run): what runs the turn, without the run's own checking of each summary.
  std::vector<std::chrono::nanoseconds> step_session_cpu;
  std::vector<CommitFigures> commits;
  std::size_t rejected = 0;  // CompactionRejected
  std::vector<double> compactor_millis;
  // Every request the counter counted (the loop's measurements and the compactions' counts): the
  // tool steps run before it and its messages.
  std::vector<std::pair<std::size_t, std::size_t>> counted;
  std::optional<CompactionCommitted> last_commit;
  std::optional<CompactionInput> last_input;   // the compactor's input of the last commit
  std::vector<std::size_t> constraints_given;  // indexes into kConstraints, first given order
  // The first commit whose summary lost a constraint given in an earlier turn: its index among
  // the commits and the constraint.
  std::optional<std::pair<std::size_t, std::size_t>> first_loss;
  std::string error;  // empty when the run went to its end
};

class LongSession {
 public:
  LongSession() {
    for (const char* name : {"read_file", "edit_file", "write_file", "grep", "bash"})
      tools_.push_back(std::make_shared<DeskTool>(name, desk_));
  }

  // How the steps are dealt: in turns of 30 to 63 steps, or all in one turn (OneTurn; the
  // loop's max_steps_per_turn is then the steps and the answer).
  enum class Shape { kManyTurns, kOneTurn };

  // Creates the loop in `session` and runs `steps` tool steps through it. `on_turn` (optional)
  // is told each turn's end.
  LongSessionResult Run(Session& session, std::size_t steps, TokenCount window,
                        std::chrono::seconds turn_deadline = std::chrono::seconds(120),
                        const std::function<void(const LongSessionResult&)>& on_turn = {},
                        Shape shape = Shape::kManyTurns) {
    LongSessionResult result;
    if (clockid_t self{}; pthread_getcpuclockid(pthread_self(), &self) == 0)
      desk_->DrivenBy(self);
    LoopDefinition definition = LongSessionLoop(window);
    if (shape == Shape::kOneTurn)
      definition.max_steps_per_turn = steps + 1;
    definition.client = client_;
    definition.counter = counter_;
    definition.compactor = compactor_;
    definition.tools = tools_;
    auto loop = session.CreateLoop(std::move(definition));
    if (!loop) {
      result.error = loop.error().Message();
      return result;
    }
    Subscription events = session.Subscribe(EventFilter{
        std::vector<Uuid>{*loop},
        std::vector<EventKind>{EventKind::kTurnCompleted, EventKind::kTurnFailed,
                               EventKind::kTurnInterrupted, EventKind::kCompactionCommitted,
                               EventKind::kCompactionRejected, EventKind::kInputRejected}});
    LongSessionScript script(steps);
    std::set<std::size_t> given, previous;
    while (!script.done() && result.error.empty()) {
      ScriptedTurn turn = shape == Shape::kOneTurn ? script.OneTurn() : script.NextTurn();
      std::vector<ScriptStep> model_steps;
      for (const ScriptedCall& call : turn.calls)
        model_steps.push_back(call.step);
      ScriptStep answer;
      answer.kind = ScriptStep::Kind::kRaw;
      answer.text = turn.answer;
      model_steps.push_back(std::move(answer));
      client_->Script(std::move(model_steps));
      desk_->Add(turn.calls);
      for (const std::size_t constraint : turn.constraints) {
        if (given.insert(constraint).second)
          result.constraints_given.push_back(constraint);
      }
      // What every summary of the turn must keep: the constraints of the turns before it; in one
      // turn, those its own request gave before its first step.
      const std::set<std::size_t> given_before = shape == Shape::kOneTurn ? given : previous;
      previous = given;
      UserMessage request;
      request.blocks.emplace_back(TextBlock{turn.request});
      if (auto submitted = session.SubmitInputToLoop(*loop, std::move(request)); !submitted) {
        result.error = submitted.error().Message();
        break;
      }
      AwaitTurn(events, turn_deadline, given_before, result);
      ++result.turns;
      result.steps = script.steps_dealt();
      if (on_turn)
        on_turn(result);
    }
    result.step_times = desk_->ran();
    result.step_cpu = desk_->cpu();
    result.step_session_cpu = desk_->session_cpu();
    result.steps = result.step_times.size();
    result.distinct_paths = script.paths().size();
    result.compactor_millis = compactor_->millis();
    result.counted = counter_->counted();
    result.last_input = compactor_->last_input();
    return result;
  }

  // The constraints of `given` absent from `summary`'s content, both normalized as `harness
  // eval` matches facts (NormalizeForMatch: case and white space do not matter).
  static std::vector<std::size_t> Lost(const UserMessage& summary,
                                       const std::vector<std::size_t>& given) {
    const std::string content = cli::NormalizeForMatch(SummaryContent(summary));
    std::vector<std::size_t> lost;
    for (const std::size_t index : given) {
      if (content.find(cli::NormalizeForMatch(ConstraintProbe(kConstraints[index]))) ==
          std::string::npos)
        lost.push_back(index);
    }
    return lost;
  }

 private:
  void AwaitTurn(Subscription& events, std::chrono::seconds deadline,
                 const std::set<std::size_t>& given_before, LongSessionResult& result) {
    const auto until = Clock::now() + deadline;
    for (;;) {
      auto delivery = events.Next(until);
      if (!delivery) {
        result.error = delivery.error().kind == NextError::Kind::kTimedOut
                           ? "a turn did not end within the deadline"
                           : "the event subscription closed";
        return;
      }
      const Event& event = *delivery->event;
      if (std::holds_alternative<TurnCompleted>(event))
        return;
      if (const auto* failed = std::get_if<TurnFailed>(&event)) {
        result.error =
            "TurnFailed " + std::string(TurnFailReasonName(failed->reason)) + ": " + failed->detail;
        return;
      }
      if (std::holds_alternative<TurnInterrupted>(event) ||
          std::holds_alternative<InputRejected>(event)) {
        result.error = "the turn was interrupted or its input rejected";
        return;
      }
      if (std::holds_alternative<CompactionRejected>(event))
        ++result.rejected;
      if (const auto* commit = std::get_if<CompactionCommitted>(&event)) {
        CommitFigures figures;
        figures.duration = commit->duration;
        figures.post_tokens = commit->post_context.input_tokens;
        figures.step = desk_->calls();
        if (!commit->summary.blocks.empty() && commit->summary.blocks.front().as<TextBlock>())
          figures.summary_bytes = commit->summary.blocks.front().as<TextBlock>()->text.size();
        result.commits.push_back(figures);
        if (!result.first_loss) {
          const std::vector<std::size_t> earlier(given_before.begin(), given_before.end());
          const auto lost = Lost(commit->summary, earlier);
          if (!lost.empty())
            result.first_loss = std::make_pair(result.commits.size() - 1, lost.front());
        }
        result.last_commit = *commit;
      }
    }
  }

 private:
  std::shared_ptr<TurnScriptedClient> client_ = std::make_shared<TurnScriptedClient>();
  std::shared_ptr<ToolDesk> desk_ = std::make_shared<ToolDesk>();
  std::shared_ptr<TimedCompactor> compactor_ = std::make_shared<TimedCompactor>();
  std::shared_ptr<RecordingCounter> counter_ = std::make_shared<RecordingCounter>(desk_);
  std::vector<std::shared_ptr<Tool>> tools_;
};

}  // namespace harness::long_session

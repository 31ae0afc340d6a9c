#include "compaction/extractive_rank.h"

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "compaction/extractive_text.h"

namespace harness::extractive_detail {

namespace {

std::string DescribeTestRun(const TestRun& run) {
  std::string out = "Last test run";
  if (!run.command.empty())
    out.append(" (").append(run.command).append(")");
  out.append(":");
  if (run.failed)
    out.append(" ").append(std::to_string(*run.failed)).append(" failed");
  if (run.passed)
    out.append(run.failed ? ", " : " ").append(std::to_string(*run.passed)).append(" passed");
  if (!run.failing.empty())
    out.append("; failing: ").append(Join(run.failing, ", "));
  out.push_back('.');
  return out;
}

// The deepest directory (two levels at least: "/home/user", not "/home") that holds at least
// three of the absolute paths and three fifths of them; "" when there is none.
std::string WorkspaceRoot(const std::vector<std::string>& paths) {
  std::unordered_map<std::string, std::size_t> under;
  std::size_t absolute = 0;
  for (const std::string& path : paths) {
    if (!path.starts_with('/'))
      continue;
    ++absolute;
    std::size_t depth = 0;
    for (std::size_t at = path.find('/', 1); at != std::string::npos; at = path.find('/', at + 1)) {
      if (++depth >= 2)
        ++under[path.substr(0, at)];
    }
  }
  std::string best;
  for (const auto& [directory, count] : under) {
    if (count < 3 || count * 5 < absolute * 3)
      continue;
    if (directory.size() > best.size() || (directory.size() == best.size() && directory < best))
      best = directory;
  }
  return best;
}

// The user's rules told: every one a long run gathers, bounded against a hostile transcript.
constexpr std::size_t kConstraintsTold = 256;
// Test commands told beside the latest one, and names told in "Names in play".
constexpr std::size_t kTestRunsTold = 4;
constexpr std::size_t kNamesTold = 32;
// Steps told in full, and an answer short enough to bring the one before it. Older steps are
// told too, shorter and after everything else of the state but the rest of the ledger.
constexpr std::size_t kStepsTold = 10;
constexpr std::size_t kStepCap = 440;
constexpr std::size_t kOlderStepCap = 240;
// Later requests told in full; older ones are told shorter, late.
constexpr std::size_t kRequestsTold = 16;
constexpr std::size_t kOlderRequestCap = 320;
constexpr std::size_t kReportsTold = 6;
constexpr std::size_t kShortAnswerBytes = 200;

// Whether a carried "Last test run (COMMAND): …" item's command has run again in the span.
bool RunAgainSince(std::string_view carried, const std::vector<TestRun>& runs) {
  constexpr std::string_view kPrefix = "Last test run (";
  if (!carried.starts_with(kPrefix))
    return false;
  carried.remove_prefix(kPrefix.size());
  const std::size_t end = carried.find("):");
  if (end == std::string_view::npos)
    return false;
  const std::string_view command = carried.substr(0, end);
  return std::any_of(runs.begin(), runs.end(),
                     [&](const TestRun& run) { return run.command == command; });
}

// An answer that is a list, told in BYTES: the lead of each item, each given an equal share
// (at least kPointShare), so that every point of an explanation is named rather than the
// first one whole.
std::string Brief(const std::vector<std::string>& points, std::size_t bytes) {
  constexpr std::size_t kPointShare = 80;
  const std::size_t share = std::max(bytes / points.size(), kPointShare);
  std::string out;
  for (const std::string& point : points) {
    if (out.size() >= bytes)
      break;
    if (!out.empty())
      out.append("; ");
    out.append(CutAt(point, share));
  }
  return out;
}

}  // namespace

// Items in priority order: what a continuation needs most comes first.
std::vector<Item> Prioritize(const Extract& extract) {
  std::vector<Item> items;
  // Each distinct item once: the same words carried from an earlier summary ("Earlier: …") and
  // found again in the new span, or found twice, are told at their first (highest) priority.
  std::unordered_set<std::string> told;
  auto add = [&items, &told](Section section, std::size_t order, std::string text,
                             std::size_t cap) {
    std::string_view bare = text;
    while (bare.starts_with("Earlier: ") || bare.starts_with("Later: "))
      bare.remove_prefix(bare.starts_with("Earlier: ") ? 9 : 7);
    // A line of a terminal's frame or of punctuation says nothing; the goal and the state's
    // lead are told whatever they hold.
    if (items.size() >= 2 && !HasWords(bare))
      return;
    std::string key(1, static_cast<char>(section));
    key.append(Lower(bare));
    if (!told.insert(std::move(key)).second)
      return;
    items.push_back(Item{section, order, std::move(text), cap});
  };
  const Ledger& ledger = extract.ledger;

  // 1. The task: the carried summary's, else the first request.
  const CarriedSummary* carried = extract.carried ? &*extract.carried : nullptr;
  std::string goal;
  if (carried != nullptr && !carried->goal.empty())
    goal = carried->goal.front();
  else if (extract.first_request)
    goal = extract.first_request->text;
  else if (!extract.pointer.empty())
    goal = extract.pointer;
  else if (!extract.fallback_goal.empty())
    goal = extract.fallback_goal;
  else
    goal = "Continue the work recorded in the compacted conversation.";
  add(Section::kGoal, 0, goal, 2400);

  // 2. The state's lead: the files changed, else the latest progress.
  // The workspace root is told once; the files under it are named relative to it.
  const std::string root = WorkspaceRoot(ledger.Files([](const FileEntry&) { return true; }));
  auto relative = [&root](const std::string& path) {
    return !root.empty() && path.size() > root.size() + 1 && path.starts_with(root) &&
                   path[root.size()] == '/'
               ? path.substr(root.size() + 1)
               : path;
  };
  auto files_item = [&relative](std::string label, const std::vector<std::string>& paths) {
    if (paths.empty())
      return std::string();
    std::vector<std::string> shown;
    for (const std::string& path : paths)
      shown.push_back(relative(path));
    return label.append(Join(shown, ", ")).append(".");
  };
  const std::vector<std::string> edited =
      ledger.Files([](const FileEntry& f) { return f.edited && !f.deleted; });
  const std::vector<std::string> created =
      ledger.Files([](const FileEntry& f) { return f.created && !f.edited && !f.deleted; });
  const std::vector<std::string> deleted =
      ledger.Files([](const FileEntry& f) { return f.deleted; });
  const std::vector<std::string> read = ledger.Files(
      [](const FileEntry& f) { return f.read && !f.edited && !f.created && !f.deleted; });
  std::size_t state_order = 0;
  auto add_state = [&](std::string text, std::size_t cap) {
    add(Section::kState, state_order++, std::move(text), cap);
  };
  std::string lead = files_item("Files edited: ", edited);
  if (lead.empty())
    lead = files_item("Files created: ", created);
  if (lead.empty() && !extract.latest_progress.empty())
    lead = "Latest progress: " + extract.latest_progress;
  if (lead.empty())
    lead = "No assistant progress is recorded in the compacted conversation.";
  add_state(lead, 800);
  if (!root.empty())
    add_state("Workspace root: " + root + " (file paths here are relative to it).", 300);

  // 3. What the user is waiting for, and the rules.
  if (extract.unanswered)
    add(Section::kOpenItems, 0, "Unanswered user request: " + extract.unanswered->text, 800);
  for (std::size_t i = 0; i < extract.constraints.size() && i < kConstraintsTold; ++i)
    add(Section::kConstraints, i, extract.constraints[i], 400);

  // 4. Later requests and corrections, the newest first; after a carried summary the first
  // request is a later one too, and the carried ones are older than every new one.
  std::vector<const Dated*> requests;
  if (carried != nullptr && !carried->goal.empty() && extract.first_request)
    requests.push_back(&*extract.first_request);
  for (const Dated& request : extract.later_requests)
    requests.push_back(&request);
  const std::size_t later = std::min<std::size_t>(requests.size(), kRequestsTold);
  for (std::size_t k = 0; k < later; ++k) {
    const Dated& request = *requests[requests.size() - 1 - k];
    add(Section::kGoal, request.at + 1, "Later: " + request.text, 800);
  }
  if (carried != nullptr) {
    // Order 0 with the goal: they stay after it, in their own order (the sort is stable).
    const std::size_t told = std::min<std::size_t>(carried->goal.size(), 16);
    for (std::size_t k = 1; k < told; ++k) {
      std::string_view text = carried->goal[k];
      if (text.starts_with("Later: "))
        text.remove_prefix(7);
      add(Section::kGoal, 0, "Later: " + std::string(text), 800);
    }
  }

  // The project's instructions, after the user's own rules.
  if (!extract.project_instructions.empty()) {
    add(Section::kConstraints, extract.constraints.size(),
        "Project instructions: " + extract.project_instructions, 600);
  }

  // 5. What the edits changed, the newest first; what was handed in.
  // A file deleted since (a reproduction script) no longer matters.
  const std::unordered_set<std::string> gone(deleted.begin(), deleted.end());
  const auto& edits = ledger.edits();
  std::size_t edits_told = 0;
  std::unordered_map<std::string, std::size_t> edits_of_file;
  std::vector<std::pair<std::size_t, std::string>> reasons;  // an edit's item, why it was made
  for (auto it = edits.rbegin(); it != edits.rend() && edits_told < 8; ++it) {
    // A file's newest two changes say what it became; older ones were rewritten since.
    if (gone.contains(it->path) || ++edits_of_file[it->path] > 2)
      continue;
    const std::size_t before = items.size();
    add_state("Edit of " + relative(it->path) + ": " + it->change, 480);
    if (!it->reason.empty() && items.size() != before)
      reasons.emplace_back(before, it->reason);
    ++edits_told;
  }
  if (const auto& submitted = ledger.submitted()) {
    add_state(submitted->empty() ? std::string("Submitted the change.")
                                 : "Submitted a diff of " + Join(*submitted, ", ") + ".",
              400);
  }
  const auto& commits = ledger.commits();
  for (auto it = commits.rbegin(); it != commits.rend(); ++it)
    add_state(*it, 240);
  // What each earlier request came to: the assistant's words at the end of its step, the
  // newest first by priority, told in the order they happened. A short last word ("Done.")
  // brings the words before it.
  const std::size_t steps_order = state_order;
  state_order += extract.steps.size();
  std::vector<std::pair<std::size_t, std::string>> older_steps;
  std::size_t steps_told = 0;
  for (std::size_t k = extract.steps.size(); k-- > 0;) {
    const Step& step = extract.steps[k];
    if (step.answers.empty())
      continue;
    std::string answer = step.answers.back();
    bool alone = true;  // the answer is the step's last words, whose list points the step holds
    if (answer.size() < kShortAnswerBytes && step.answers.size() > 1) {
      answer = step.answers.front() + " " + answer;
      alone = false;
    } else if (step.answered_at == extract.latest_progress_at) {
      continue;  // told as the latest progress
    }
    // The goal is told whole at the top; its step names it instead of quoting it again.
    std::string item =
        step.request == goal ? std::string("Step (the task") : "Step (" + CutAt(step.request, 100);
    item.append("): ");
    const bool recent = steps_told++ < kStepsTold;
    const std::size_t cap = recent ? kStepCap : kOlderStepCap;
    if (alone && step.points.size() >= 3 && item.size() + answer.size() > cap && item.size() < cap)
      item.append(Brief(step.points, cap - item.size()));
    else
      item.append(answer);
    if (recent)
      add(Section::kState, steps_order + k, std::move(item), kStepCap);
    else
      older_steps.emplace_back(steps_order + k, std::move(item));
  }

  // What sub-agents reported, the newest first.
  for (std::size_t k = 0; k < extract.reports.size() && k < kReportsTold; ++k)
    add_state(extract.reports[extract.reports.size() - 1 - k].text, 520);

  // 6. Tests (the latest run of each test command, the newest first), the names the run keeps
  // coming back to, the rest of the files, the latest progress.
  const auto& runs = ledger.test_runs();
  for (std::size_t k = 1; k < runs.size() && k < kTestRunsTold; ++k)
    add_state(DescribeTestRun(runs[runs.size() - 1 - k]), 400);
  if (const auto& run = ledger.test_run()) {
    add_state(DescribeTestRun(*run), 800);
    if (run->failed.value_or(0) > 0 || !run->failing.empty()) {
      std::string failing = "Failing tests";
      failing.append(run->failing.empty() ? std::string(": ") + std::to_string(*run->failed)
                                          : ": " + Join(run->failing, ", "));
      add(Section::kOpenItems, 1, failing + ".", 600);
    }
  }
  const std::vector<std::string> names = extract.salience.Top(kNamesTold);
  if (!names.empty())
    add_state("Names in play: " + Join(names, ", ") + ".", 900);
  if (lead.starts_with("Files edited: "))
    add_state(files_item("Files created: ", created), 800);
  add_state(files_item("Files deleted: ", deleted), 400);
  if (!lead.starts_with("Latest progress: ") && !extract.latest_progress.empty())
    add_state("Latest progress: " + extract.latest_progress, 600);

  // What the state was before the carried summary: work done then must not be redone.
  if (carried != nullptr) {
    std::size_t told = 0;
    for (std::size_t k = 0; k < carried->state.size() && told < 12; ++k) {
      std::string_view text = carried->state[k];
      while (text.starts_with("Earlier: "))
        text.remove_prefix(9);
      // Progress told before is superseded by progress told since, and a test command's run by
      // its run since.
      if (text.starts_with("Latest progress: ") && !extract.latest_progress.empty())
        continue;
      if (RunAgainSince(text, runs))
        continue;
      add_state("Earlier: " + std::string(text), 480);
      ++told;
    }
  }

  // 7. Commands that failed last time they ran, the newest first: the errors the work still
  // faces.
  // A look that found nothing ("ls: No such file") is told after the run's history.
  std::size_t failed_count = 0;
  std::vector<std::string> failed_looks;
  for (const auto& [command, entry] : ledger.Commands(true)) {
    if (failed_count++ == 10)
      break;
    std::string item = "Failed: ";
    item.append(CutAt(command, 200));
    if (entry->exit_code)
      item.append(" (exit ").append(std::to_string(*entry->exit_code)).append(")");
    if (!entry->last_error.empty())
      item.append(": ").append(entry->last_error);
    if (Ledger::OnlyLooks(command))
      failed_looks.push_back(std::move(item));
    else
      add_state(std::move(item), 400);
  }

  // 8. The way forward.
  std::size_t open_order = 2;
  for (const std::string& step : extract.next_steps)
    add(Section::kOpenItems, open_order++, "Next: " + step, 320);
  std::vector<std::string> todo_open;
  std::vector<std::string> todo_all;
  for (const TodoItem& todo : ledger.todos()) {
    const std::string status = todo.status.empty() ? std::string("pending") : todo.status;
    todo_all.push_back("[" + status + "] " + todo.text);
    if (status != "completed" && status != "done" && status != "cancelled")
      todo_open.push_back(todo.text + " (" + status + ")");
  }
  if (!todo_open.empty())
    add(Section::kOpenItems, open_order++, "Open todo items: " + Join(todo_open, "; "), 600);
  if (!extract.awaiting.empty())
    add(Section::kOpenItems, open_order++, "Question awaiting the user: " + extract.awaiting, 400);
  for (const std::string& call : extract.open_calls)
    add(Section::kOpenItems, open_order++, call, 200);
  // Open before the carried summary: perhaps settled since, so after everything of now.
  if (carried != nullptr) {
    for (std::size_t k = 0; k < carried->open_items.size() && k < 8; ++k) {
      std::string_view text = carried->open_items[k];
      if (text.starts_with("Earlier: "))
        text.remove_prefix(9);
      // The tests that failed then: the runs since say which fail now.
      if (text.starts_with("Failing tests: ") && !runs.empty())
        continue;
      add(Section::kOpenItems, open_order++, "Earlier: " + std::string(text), 320);
    }
  }

  // What the older steps came to and what the older requests were: the history of the run,
  // shorter, before the rest of the ledger.
  for (auto& [order, item] : older_steps)
    add(Section::kState, order, std::move(item), kOlderStepCap);
  for (std::size_t k = later; k < requests.size(); ++k) {
    const Dated& request = *requests[requests.size() - 1 - k];
    add(Section::kGoal, request.at + 1, "Later: " + request.text, kOlderRequestCap);
  }

  for (std::string& item : failed_looks)
    add_state(std::move(item), 400);

  // Errors fixed on the way and the choices made, the newest first: under a tight budget the
  // history of the run says more than the choices it went through (many were hypotheses a
  // later step settled) and the errors it got past.
  std::size_t fixed_count = 0;
  for (const auto& [command, entry] : ledger.Commands(false)) {
    if (entry->fixed_error.empty())
      continue;
    std::string item = CutAt(command, 160);
    item.append(" failed earlier (").append(entry->fixed_error).append("), then ran clean");
    if (!entry->output.empty())
      item.append(": ").append(entry->output);
    add_state(item + ".", 480);
    if (++fixed_count == 6)
      break;
  }

  const std::size_t decisions = std::min<std::size_t>(extract.decisions.size(), 24);
  for (std::size_t k = 0; k < decisions; ++k) {
    const std::size_t index = extract.decisions.size() - 1 - k;
    add(Section::kDecisions, index, extract.decisions[index].text, 320);
  }

  // 9. The rest of the ledger.
  if (!todo_all.empty())
    add_state("Todo list: " + Join(todo_all, "; "), 800);
  add_state(files_item("Files read: ", read), 800);
  const auto& errors = ledger.tool_errors();
  for (std::size_t k = 0; k < errors.size() && k < 5; ++k)
    add_state(errors[errors.size() - 1 - k], 300);
  std::vector<std::string> succeeded;
  for (const auto& [command, entry] : ledger.Commands(false)) {
    std::string item = CutAt(command, 120);
    if (entry->exit_code)
      item.append(" (exit ").append(std::to_string(*entry->exit_code)).append(")");
    if (!entry->output.empty())
      item.append(" -> ").append(CutAt(entry->output, 80));
    succeeded.push_back(std::move(item));
    if (succeeded.size() == 24)
      break;
  }
  add_state(succeeded.empty() ? std::string() : "Commands run: " + Join(succeeded, "; "), 1200);

  // 10. Why each edit told was made, after its change, in parentheses, in the room left.
  for (auto& [edit, reason] : reasons) {
    std::string text = " (" + std::move(reason) + ")";
    const std::size_t cap = 6 * text.size();  // escaped whole: "&" is five bytes escaped
    items.push_back(Item{Section::kState, items[edit].order, std::move(text), cap, edit});
  }
  return items;
}

}  // namespace harness::extractive_detail

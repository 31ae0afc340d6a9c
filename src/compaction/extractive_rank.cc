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

// The items told so far, in priority order. Each distinct item once: the same words carried
// from an earlier summary ("Earlier: …") and found again in the new span, or found twice, are
// told at their first (highest) priority.
class ItemList {
 public:
  void Add(Section section, std::size_t order, std::string text, std::size_t cap) {
    std::string_view bare = text;
    while (bare.starts_with("Earlier: ") || bare.starts_with("Later: "))
      bare.remove_prefix(bare.starts_with("Earlier: ") ? 9 : 7);
    // A line of a terminal's frame or of punctuation says nothing; the goal and the state's
    // lead are told whatever they hold.
    if (items_.size() >= 2 && !HasWords(bare))
      return;
    std::string key(1, static_cast<char>(section));
    key.append(Lower(bare));
    if (!told_.insert(std::move(key)).second)
      return;
    items_.push_back(Item{section, order, std::move(text), cap});
  }

  // A state item, after every state item told before it.
  void AddState(std::string text, std::size_t cap) {
    Add(Section::kState, state_order_++, std::move(text), cap);
  }

  // Reserves `count` places of the state's order for items told later at a place of their
  // own; returns the first.
  std::size_t ReserveStateOrders(std::size_t count) {
    const std::size_t first = state_order_;
    state_order_ += count;
    return first;
  }

  std::size_t size() const { return items_.size(); }
  std::vector<Item>& items() { return items_; }

 private:
  std::vector<Item> items_;
  std::unordered_set<std::string> told_;
  std::size_t state_order_ = 0;
};

// The files of the ledger by what happened to them, named relative to the workspace root.
struct Files {
  explicit Files(const Ledger& ledger)
      : root(WorkspaceRoot(ledger.Files([](const FileEntry&) { return true; }))),
        edited(ledger.Files([](const FileEntry& f) { return f.edited && !f.deleted; })),
        created(
            ledger.Files([](const FileEntry& f) { return f.created && !f.edited && !f.deleted; })),
        deleted(ledger.Files([](const FileEntry& f) { return f.deleted; })),
        read(ledger.Files(
            [](const FileEntry& f) { return f.read && !f.edited && !f.created && !f.deleted; })) {}

  std::string Relative(const std::string& path) const {
    return !root.empty() && path.size() > root.size() + 1 && path.starts_with(root) &&
                   path[root.size()] == '/'
               ? path.substr(root.size() + 1)
               : path;
  }

  // "LABELa.py, b.py." or "" for no paths.
  std::string Told(std::string label, const std::vector<std::string>& paths) const {
    if (paths.empty())
      return std::string();
    std::vector<std::string> shown;
    for (const std::string& path : paths)
      shown.push_back(Relative(path));
    return label.append(Join(shown, ", ")).append(".");
  }

  std::string root;  // "" when no directory holds most paths
  std::vector<std::string> edited;
  std::vector<std::string> created;
  std::vector<std::string> deleted;
  std::vector<std::string> read;
};

// 1. The task: the carried summary's, else the first request.
std::string Goal(const Extract& extract) {
  if (extract.carried && !extract.carried->goal.empty())
    return extract.carried->goal.front();
  if (extract.first_request)
    return extract.first_request->text;
  if (!extract.pointer.empty())
    return extract.pointer;
  if (!extract.fallback_goal.empty())
    return extract.fallback_goal;
  return "Continue the work recorded in the compacted conversation.";
}

// 2. The state's lead: the files changed, else the latest progress; then the workspace root,
// told once. Returns the lead.
std::string TellLead(ItemList& list, const Extract& extract, const Files& files) {
  std::string lead = files.Told("Files edited: ", files.edited);
  if (lead.empty())
    lead = files.Told("Files created: ", files.created);
  if (lead.empty() && !extract.latest_progress.empty())
    lead = "Latest progress: " + extract.latest_progress;
  if (lead.empty())
    lead = "No assistant progress is recorded in the compacted conversation.";
  list.AddState(lead, 800);
  if (!files.root.empty())
    list.AddState("Workspace root: " + files.root + " (file paths here are relative to it).", 300);
  return lead;
}

// 3. What the user is waiting for, and the rules.
void TellRules(ItemList& list, const Extract& extract) {
  if (extract.unanswered)
    list.Add(Section::kOpenItems, 0, "Unanswered user request: " + extract.unanswered->text, 800);
  for (std::size_t i = 0; i < extract.constraints.size() && i < kConstraintsTold; ++i)
    list.Add(Section::kConstraints, i, extract.constraints[i], 400);
}

// Later requests and corrections, the oldest first; after a carried summary the first request
// is a later one too.
std::vector<const Dated*> LaterRequests(const Extract& extract) {
  std::vector<const Dated*> requests;
  if (extract.carried && !extract.carried->goal.empty() && extract.first_request)
    requests.push_back(&*extract.first_request);
  for (const Dated& request : extract.later_requests)
    requests.push_back(&request);
  return requests;
}

// 4. The latest `told` later requests, the newest first; the carried ones, older than every
// new one; the project's instructions, after the user's own rules.
void TellRequests(ItemList& list, const Extract& extract, const std::vector<const Dated*>& requests,
                  std::size_t told) {
  for (std::size_t k = 0; k < told; ++k) {
    const Dated& request = *requests[requests.size() - 1 - k];
    list.Add(Section::kGoal, request.at + 1, "Later: " + request.text, 800);
  }
  if (extract.carried) {
    // Order 0 with the goal: they stay after it, in their own order (the sort is stable).
    const auto& goals = extract.carried->goal;
    for (std::size_t k = 1; k < std::min<std::size_t>(goals.size(), 16); ++k) {
      std::string_view text = goals[k];
      if (text.starts_with("Later: "))
        text.remove_prefix(7);
      list.Add(Section::kGoal, 0, "Later: " + std::string(text), 800);
    }
  }
  if (!extract.project_instructions.empty()) {
    list.Add(Section::kConstraints, extract.constraints.size(),
             "Project instructions: " + extract.project_instructions, 600);
  }
}

// An edit's item (its index) and why the edit was made.
using Reasons = std::vector<std::pair<std::size_t, std::string>>;

// 5. What the edits changed, the newest first (a file deleted since, such as a reproduction
// script, no longer matters); what was handed in; the commits. Returns the reasons of the
// edits told.
Reasons TellChanges(ItemList& list, const Ledger& ledger, const Files& files) {
  const std::unordered_set<std::string> gone(files.deleted.begin(), files.deleted.end());
  const auto& edits = ledger.edits();
  std::size_t edits_told = 0;
  std::unordered_map<std::string, std::size_t> edits_of_file;
  Reasons reasons;
  for (auto it = edits.rbegin(); it != edits.rend() && edits_told < 8; ++it) {
    // A file's newest two changes say what it became; older ones were rewritten since.
    if (gone.contains(it->path) || ++edits_of_file[it->path] > 2)
      continue;
    const std::size_t before = list.size();
    list.AddState("Edit of " + files.Relative(it->path) + ": " + it->change, 480);
    if (!it->reason.empty() && list.size() != before)
      reasons.emplace_back(before, it->reason);
    ++edits_told;
  }
  if (const auto& submitted = ledger.submitted()) {
    list.AddState(submitted->empty() ? std::string("Submitted the change.")
                                     : "Submitted a diff of " + Join(*submitted, ", ") + ".",
                  400);
  }
  const auto& commits = ledger.commits();
  for (auto it = commits.rbegin(); it != commits.rend(); ++it)
    list.AddState(*it, 240);
  return reasons;
}

// Steps told later at a place of their own: (order, item).
using OlderSteps = std::vector<std::pair<std::size_t, std::string>>;

// What each earlier request came to: the assistant's words at the end of its step, the newest
// first by priority, told in the order they happened. A short last word ("Done.") brings the
// words before it. The latest kStepsTold are told now; the older ones are returned, to be told
// after everything else of the state but the rest of the ledger.
OlderSteps TellSteps(ItemList& list, const Extract& extract, const std::string& goal) {
  const std::size_t steps_order = list.ReserveStateOrders(extract.steps.size());
  OlderSteps older_steps;
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
      list.Add(Section::kState, steps_order + k, std::move(item), kStepCap);
    else
      older_steps.emplace_back(steps_order + k, std::move(item));
  }
  return older_steps;
}

// What sub-agents reported, the newest first; then 6. tests (the latest run of each test
// command, the newest first), the names the run keeps coming back to, the rest of the files,
// the latest progress.
void TellReportsAndTests(ItemList& list, const Extract& extract, const Files& files,
                         const std::string& lead) {
  for (std::size_t k = 0; k < extract.reports.size() && k < kReportsTold; ++k)
    list.AddState(extract.reports[extract.reports.size() - 1 - k].text, 520);
  const auto& runs = extract.ledger.test_runs();
  for (std::size_t k = 1; k < runs.size() && k < kTestRunsTold; ++k)
    list.AddState(DescribeTestRun(runs[runs.size() - 1 - k]), 400);
  if (const auto& run = extract.ledger.test_run()) {
    list.AddState(DescribeTestRun(*run), 800);
    if (run->failed.value_or(0) > 0 || !run->failing.empty()) {
      std::string failing = "Failing tests";
      failing.append(run->failing.empty() ? std::string(": ") + std::to_string(*run->failed)
                                          : ": " + Join(run->failing, ", "));
      list.Add(Section::kOpenItems, 1, failing + ".", 600);
    }
  }
  const std::vector<std::string> names = extract.salience.Top(kNamesTold);
  if (!names.empty())
    list.AddState("Names in play: " + Join(names, ", ") + ".", 900);
  if (lead.starts_with("Files edited: "))
    list.AddState(files.Told("Files created: ", files.created), 800);
  list.AddState(files.Told("Files deleted: ", files.deleted), 400);
  if (!lead.starts_with("Latest progress: ") && !extract.latest_progress.empty())
    list.AddState("Latest progress: " + extract.latest_progress, 600);
}

// What the state was before the carried summary: work done then must not be redone.
void TellCarriedState(ItemList& list, const Extract& extract) {
  if (!extract.carried)
    return;
  const auto& state = extract.carried->state;
  std::size_t told = 0;
  for (std::size_t k = 0; k < state.size() && told < 12; ++k) {
    std::string_view text = state[k];
    while (text.starts_with("Earlier: "))
      text.remove_prefix(9);
    // Progress told before is superseded by progress told since, and a test command's run by
    // its run since.
    if (text.starts_with("Latest progress: ") && !extract.latest_progress.empty())
      continue;
    if (RunAgainSince(text, extract.ledger.test_runs()))
      continue;
    list.AddState("Earlier: " + std::string(text), 480);
    ++told;
  }
}

// 7. Commands that failed last time they ran, the newest first: the errors the work still
// faces. A look that found nothing ("ls: No such file") is returned, to be told after the
// run's history.
std::vector<std::string> TellFailures(ItemList& list, const Ledger& ledger) {
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
      list.AddState(std::move(item), 400);
  }
  return failed_looks;
}

// 8. The way forward: next steps, open todo items, the question awaiting the user, open calls,
// and what was open before the carried summary (perhaps settled since, so after everything of
// now). Returns every todo item with its status, told with the rest of the ledger.
std::vector<std::string> TellWayForward(ItemList& list, const Extract& extract) {
  std::size_t open_order = 2;
  for (const std::string& step : extract.next_steps)
    list.Add(Section::kOpenItems, open_order++, "Next: " + step, 320);
  std::vector<std::string> todo_open;
  std::vector<std::string> todo_all;
  for (const TodoItem& todo : extract.ledger.todos()) {
    const std::string status = todo.status.empty() ? std::string("pending") : todo.status;
    todo_all.push_back("[" + status + "] " + todo.text);
    if (status != "completed" && status != "done" && status != "cancelled")
      todo_open.push_back(todo.text + " (" + status + ")");
  }
  if (!todo_open.empty())
    list.Add(Section::kOpenItems, open_order++, "Open todo items: " + Join(todo_open, "; "), 600);
  if (!extract.awaiting.empty()) {
    list.Add(Section::kOpenItems, open_order++, "Question awaiting the user: " + extract.awaiting,
             400);
  }
  for (const std::string& call : extract.open_calls)
    list.Add(Section::kOpenItems, open_order++, call, 200);
  if (extract.carried) {
    const auto& open_items = extract.carried->open_items;
    for (std::size_t k = 0; k < open_items.size() && k < 8; ++k) {
      std::string_view text = open_items[k];
      if (text.starts_with("Earlier: "))
        text.remove_prefix(9);
      // The tests that failed then: the runs since say which fail now.
      if (text.starts_with("Failing tests: ") && !extract.ledger.test_runs().empty())
        continue;
      list.Add(Section::kOpenItems, open_order++, "Earlier: " + std::string(text), 320);
    }
  }
  return todo_all;
}

// Errors fixed on the way and the choices made, the newest first: under a tight budget the
// history of the run says more than the choices it went through (many were hypotheses a later
// step settled) and the errors it got past.
void TellFixesAndDecisions(ItemList& list, const Extract& extract) {
  std::size_t fixed_count = 0;
  for (const auto& [command, entry] : extract.ledger.Commands(false)) {
    if (entry->fixed_error.empty())
      continue;
    std::string item = CutAt(command, 160);
    item.append(" failed earlier (").append(entry->fixed_error).append("), then ran clean");
    if (!entry->output.empty())
      item.append(": ").append(entry->output);
    list.AddState(item + ".", 480);
    if (++fixed_count == 6)
      break;
  }
  const std::size_t decisions = std::min<std::size_t>(extract.decisions.size(), 24);
  for (std::size_t k = 0; k < decisions; ++k) {
    const std::size_t index = extract.decisions.size() - 1 - k;
    list.Add(Section::kDecisions, index, extract.decisions[index].text, 320);
  }
}

// 9. The rest of the ledger: the todo list, the files read, tool errors, the commands run.
void TellRestOfLedger(ItemList& list, const Ledger& ledger, const Files& files,
                      const std::vector<std::string>& todo_all) {
  if (!todo_all.empty())
    list.AddState("Todo list: " + Join(todo_all, "; "), 800);
  list.AddState(files.Told("Files read: ", files.read), 800);
  const auto& errors = ledger.tool_errors();
  for (std::size_t k = 0; k < errors.size() && k < 5; ++k)
    list.AddState(errors[errors.size() - 1 - k], 300);
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
  list.AddState(succeeded.empty() ? std::string() : "Commands run: " + Join(succeeded, "; "), 1200);
}

}  // namespace

// Items in priority order: what a continuation needs most comes first (the order of the
// contract, section by section above).
std::vector<Item> Prioritize(const Extract& extract) {
  ItemList list;
  const Files files(extract.ledger);
  const std::string goal = Goal(extract);
  list.Add(Section::kGoal, 0, goal, 2400);
  const std::string lead = TellLead(list, extract, files);
  TellRules(list, extract);
  const std::vector<const Dated*> requests = LaterRequests(extract);
  const std::size_t later = std::min<std::size_t>(requests.size(), kRequestsTold);
  TellRequests(list, extract, requests, later);
  Reasons reasons = TellChanges(list, extract.ledger, files);
  OlderSteps older_steps = TellSteps(list, extract, goal);
  TellReportsAndTests(list, extract, files, lead);
  TellCarriedState(list, extract);
  std::vector<std::string> failed_looks = TellFailures(list, extract.ledger);
  const std::vector<std::string> todo_all = TellWayForward(list, extract);

  // What the older steps came to and what the older requests were: the history of the run,
  // shorter, before the rest of the ledger.
  for (auto& [order, item] : older_steps)
    list.Add(Section::kState, order, std::move(item), kOlderStepCap);
  for (std::size_t k = later; k < requests.size(); ++k) {
    const Dated& request = *requests[requests.size() - 1 - k];
    list.Add(Section::kGoal, request.at + 1, "Later: " + request.text, kOlderRequestCap);
  }
  for (std::string& item : failed_looks)
    list.AddState(std::move(item), 400);
  TellFixesAndDecisions(list, extract);
  TellRestOfLedger(list, extract.ledger, files, todo_all);

  // 10. Why each edit told was made, after its change, in parentheses, in the room left.
  std::vector<Item>& items = list.items();
  for (auto& [edit, reason] : reasons) {
    std::string text = " (" + std::move(reason) + ")";
    const std::size_t cap = 6 * text.size();  // escaped whole: "&" is five bytes escaped
    items.push_back(Item{Section::kState, items[edit].order, std::move(text), cap, edit});
  }
  return std::move(items);
}

}  // namespace harness::extractive_detail

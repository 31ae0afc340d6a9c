#include "serve/metrics.h"

#include <cstdio>

namespace harness::serve {

namespace {

void Line(std::string& out, std::string_view name, std::string_view labels, std::uint64_t value) {
  out += name;
  if (!labels.empty()) {
    out += '{';
    out += labels;
    out += '}';
  }
  out += ' ';
  out += std::to_string(value);
  out += '\n';
}

void Head(std::string& out, std::string_view name, std::string_view type, std::string_view help) {
  out += "# HELP ";
  out += name;
  out += ' ';
  out += help;
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
}

// A metric without labels: its name, type, help and one value.
struct Single {
  std::string_view name;
  std::string_view type;
  std::string_view help;
  std::uint64_t value;
};

void Singles(std::string& out, std::initializer_list<Single> metrics) {
  for (const Single& m : metrics) {
    Head(out, m.name, m.type, m.help);
    Line(out, m.name, "", m.value);
  }
}

std::string Seconds(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

}  // namespace

void ServeMetrics::Response(unsigned status) {
  const unsigned cls = status / 100;
  if (cls < responses_.size())
    responses_[cls].fetch_add(1, std::memory_order_relaxed);
}

void ServeMetrics::CommandAccepted(Command command) {
  commands_[static_cast<std::size_t>(command)].fetch_add(1, std::memory_order_relaxed);
}

void ServeMetrics::ReasonCounts::Add(std::string_view reason) {
  std::lock_guard lock(mu_);
  auto at = counts_.find(reason);
  if (at == counts_.end())
    at = counts_.emplace(std::string(reason), 0).first;
  ++at->second;
}

std::map<std::string, std::uint64_t, std::less<>> ServeMetrics::ReasonCounts::Read() const {
  std::lock_guard lock(mu_);
  return counts_;
}

namespace {

// `name`{outcome="committed"|"rejected"} and `by_reason`{reason="…"}, the rejected ones summed.
void Outcomes(std::string& out, std::string_view name, std::string_view help, std::string_view done,
              std::uint64_t done_count, std::string_view by_reason, std::string_view by_reason_help,
              const std::map<std::string, std::uint64_t, std::less<>>& rejections) {
  std::uint64_t rejected = 0;
  for (const auto& [reason, count] : rejections)
    rejected += count;
  Head(out, name, "counter", help);
  Line(out, name, "outcome=\"" + std::string(done) + "\"", done_count);
  Line(out, name, "outcome=\"rejected\"", rejected);
  Head(out, by_reason, "counter", by_reason_help);
  for (const auto& [reason, count] : rejections)
    Line(out, by_reason, "reason=\"" + reason + "\"", count);
}

}  // namespace

void ServeMetrics::JournalAppend(std::chrono::nanoseconds took, bool ok) {
  appends_.fetch_add(1, std::memory_order_relaxed);
  if (!ok)
    append_errors_.fetch_add(1, std::memory_order_relaxed);
  append_nanos_.fetch_add(static_cast<std::uint64_t>(std::max<std::int64_t>(took.count(), 0)),
                          std::memory_order_relaxed);
  const double seconds = std::chrono::duration<double>(took).count();
  for (std::size_t i = 0; i < kAppendBuckets.size(); ++i) {
    if (seconds <= kAppendBuckets[i]) {
      append_buckets_[i].fetch_add(1, std::memory_order_relaxed);
      break;
    }
  }
}

std::string ServeMetrics::Render(const Gauges& gauges) const {
  std::string out;
  const auto get = [](const Counter& c) { return c.load(std::memory_order_relaxed); };

  Singles(out, {{"harness_serve_sessions_in_memory", "gauge",
                 "Sessions the server holds in memory.", gauges.sessions_in_memory},
                {"harness_serve_sessions_created_total", "counter",
                 "Sessions created over the API.", get(sessions_created_)},
                {"harness_serve_sessions_restored_total", "counter",
                 "Sessions restored from the journal on demand.", get(sessions_restored_)}});

  Head(out, "harness_serve_responses_total", "counter", "HTTP responses by status class.");
  for (std::size_t cls = 1; cls < responses_.size(); ++cls) {
    Line(out, "harness_serve_responses_total", "code=\"" + std::to_string(cls) + "xx\"",
         get(responses_[cls]));
  }

  Head(out, "harness_serve_commands_total", "counter", "Commands the server accepted, by kind.");
  constexpr std::array<std::string_view, 3> kCommandNames = {"input", "compact", "interrupt"};
  for (std::size_t i = 0; i < kCommandNames.size(); ++i) {
    Line(out, "harness_serve_commands_total", "kind=\"" + std::string(kCommandNames[i]) + "\"",
         get(commands_[i]));
  }
  Singles(out,
          {{"harness_serve_commands_held", "gauge",
            "Commands whose reply the server's book can still answer.", gauges.commands_held}});

  Outcomes(out, "harness_serve_compactions_total",
           "Compaction attempts the served sessions ended, by outcome.", "committed",
           get(compactions_committed_), "harness_serve_compaction_rejections_total",
           "Rejected compaction attempts by their reject reason.", compaction_rejections_.Read());
  Outcomes(out, "harness_serve_compact_replies_total",
           "Replies to compact commands (of any client), by outcome.", "resolved",
           get(compact_resolved_), "harness_serve_compact_reply_rejections_total",
           "Rejected compact commands by their reject reason.", compact_rejections_.Read());

  Singles(out,
          {{"harness_serve_journal_appends_total", "counter", "Journal appends.", get(appends_)},
           {"harness_serve_journal_append_errors_total", "counter", "Journal appends that failed.",
            get(append_errors_)}});
  Head(out, "harness_serve_journal_append_seconds", "histogram",
       "How long a journal append took, durable write included.");
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < kAppendBuckets.size(); ++i) {
    cumulative += get(append_buckets_[i]);
    Line(out, "harness_serve_journal_append_seconds_bucket",
         "le=\"" + Seconds(kAppendBuckets[i]) + "\"", cumulative);
  }
  const std::uint64_t count = get(appends_);
  Line(out, "harness_serve_journal_append_seconds_bucket", "le=\"+Inf\"", count);
  out += "harness_serve_journal_append_seconds_sum " +
         Seconds(static_cast<double>(get(append_nanos_)) / 1e9) + "\n";
  Line(out, "harness_serve_journal_append_seconds_count", "", count);

  Singles(out, {{"harness_serve_event_streams", "gauge", "Open event streams (SSE subscribers).",
                 gauges.open_streams},
                {"harness_serve_event_streams_total", "counter", "Event streams opened.",
                 get(streams_opened_)},
                {"harness_serve_event_streams_lagged_total", "counter",
                 "Event streams ended because their client fell behind.", get(streams_lagged_)}});
  return out;
}

Result<std::vector<AppendedRecord>, JournalError> MeteredJournal::Append(AppendRequest request) {
  const auto start = std::chrono::steady_clock::now();
  auto appended = ForwardingJournal::Append(std::move(request));
  metrics_.JournalAppend(std::chrono::steady_clock::now() - start, appended.ok());
  return appended;
}

}  // namespace harness::serve

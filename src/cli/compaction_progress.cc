#include "compaction_progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>

namespace harness::cli {
namespace {

constexpr std::chrono::milliseconds kTick{200};
constexpr std::string_view kEraseLine = "\r\x1b[K";

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

void Write(std::string_view text) {
  std::fwrite(text.data(), 1, text.size(), stderr);
  std::fflush(stderr);
}

}  // namespace

CompactionProgress::CompactionProgress(std::string compactor, bool in_place, const Env& env,
                                       Output output)
    : compactor_(std::move(compactor)),
      in_place_(in_place),
      env_(env),
      pieces_(std::make_shared<std::atomic<std::uint64_t>>(0)) {
  if (in_place_ && output == Output::kStandardError)
    ticker_ = std::jthread([this](std::stop_token stop) { Tick(stop); });
}

CompactionProgress::~CompactionProgress() {
  if (ticker_.joinable()) {
    ticker_.request_stop();
    ticker_.join();
  }
  std::lock_guard lock(mutex_);
  EraseLocked();
}

TextDeltaSink CompactionProgress::Sink() {
  // The sink may outlive this object inside the compactor's client: it holds the counter only.
  return [pieces = pieces_](std::string_view) { pieces->fetch_add(1, std::memory_order_relaxed); };
}

std::string CompactionProgress::StatusLocked(std::chrono::steady_clock::time_point now) const {
  std::string text = fmt::format("compacting with {}: {:.1f} s, ~{} tokens streamed", compactor_,
                                 Seconds(now - *started_), pieces_->load());
  if (chunk_ && chunk_->first < chunk_->second)
    text.append(fmt::format(", chunk {} of {}", chunk_->first + 1, chunk_->second));
  return text;
}

void CompactionProgress::EraseLocked() {
  if (drawn_)
    Write(kEraseLine);
  drawn_ = false;
}

std::optional<std::string> CompactionProgress::StageLocked(const Event& event) {
  const auto now = env_.MonotonicNow();
  std::optional<std::string> line;
  if (std::holds_alternative<CompactionStarted>(event)) {
    // The count is not reset here but when an attempt ends: the compactor may have streamed
    // before the event reaches this (a chat's printer thread shows it late).
    started_ = now;
    chunk_.reset();
    line = fmt::format("compacting with {}: started", compactor_);
  } else if (const auto* e = std::get_if<CompactionChunkSummarized>(&event)) {
    if (!started_)
      return std::nullopt;
    chunk_ = std::make_pair(e->chunk + 1, e->chunks);
    line = fmt::format(
        "compacting with {}: chunk {} of {} summarized after {:.1f} s, ~{} tokens "
        "streamed",
        compactor_, e->chunk + 1, e->chunks, Seconds(now - *started_), pieces_->load());
  } else if (std::holds_alternative<CompactionCommitted>(event) ||
             std::holds_alternative<CompactionRejected>(event) ||
             std::holds_alternative<CompactionProposed>(event)) {
    if (!started_)
      return std::nullopt;
    line = fmt::format("compacting with {}: done after {:.1f} s, ~{} tokens streamed", compactor_,
                       Seconds(now - *started_), pieces_->exchange(0));
    started_.reset();
  }
  changed_.notify_all();
  if (in_place_)
    return std::nullopt;
  return line;
}

std::optional<std::string> CompactionProgress::Stage(const Event& event) {
  std::lock_guard lock(mutex_);
  return StageLocked(event);
}

void CompactionProgress::Show(const Event& event) {
  std::lock_guard lock(mutex_);
  if (auto line = StageLocked(event))
    Write(line->append("\n"));
  if (!started_)
    EraseLocked();
}

std::optional<std::string> CompactionProgress::Status() const {
  std::lock_guard lock(mutex_);
  if (!started_)
    return std::nullopt;
  return StatusLocked(env_.MonotonicNow());
}

void CompactionProgress::Print(const std::function<void()>& print) {
  std::lock_guard lock(mutex_);
  EraseLocked();
  print();
  std::fflush(stdout);  // before the next tick draws on the same terminal
}

std::string CompactorDisplayName(std::string_view spec) {
  const std::size_t colon = spec.find(':');
  if (colon == std::string_view::npos)
    return std::string(spec);
  std::string_view model = spec.substr(colon + 1);
  if (spec.substr(0, colon) == "scripted")
    model = model.substr(model.find_last_of('/') + 1);  // npos + 1: the whole name
  return fmt::format("{}/{}", spec.substr(0, colon), model);
}

void CompactionProgress::Tick(std::stop_token stop) {
  std::unique_lock lock(mutex_);
  while (!stop.stop_requested()) {
    if (started_) {
      Write(std::string(kEraseLine) + StatusLocked(env_.MonotonicNow()));
      drawn_ = true;
    }
    changed_.wait_for(lock, stop, kTick, [] { return false; });
  }
}

}  // namespace harness::cli

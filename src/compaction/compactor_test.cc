// CompactorError: kind names, a message that never renders content, and the mapping to
// CompactRejectReason (compaction/compactor.h, docs/spec/contracts.md §4.7).
#include "harness/compaction/compactor.h"

#include <gtest/gtest.h>

#include <string>

namespace harness {
namespace {

constexpr const char* kSecret = "SECRET transcript bytes";

CompactorError ErrorOf(CompactorErrorKind kind) {
  CompactorError error;
  error.kind = kind;
  error.detail = kSecret;
  return error;
}

CompactorError ModelError(InferenceErrorKind kind) {
  CompactorError error = ErrorOf(CompactorErrorKind::kModel);
  error.inference = InferenceError{kind, kSecret};
  return error;
}

TEST(CompactorErrorTest, KindNames) {
  const std::pair<CompactorErrorKind, const char*> names[] = {
      {CompactorErrorKind::kInvalidSummary, "invalid_summary"},
      {CompactorErrorKind::kInputInvalid, "input_invalid"},
      {CompactorErrorKind::kInputTooLarge, "input_too_large"},
      {CompactorErrorKind::kModel, "model"},
      {CompactorErrorKind::kCanceled, "canceled"},
      {CompactorErrorKind::kFailed, "failed"},
  };
  for (const auto& [kind, name] : names)
    EXPECT_EQ(CompactorErrorKindName(kind), name);
  EXPECT_EQ(CompactorErrorKindName(static_cast<CompactorErrorKind>(0)), "");
  EXPECT_EQ(CompactorErrorKindName(static_cast<CompactorErrorKind>(7)), "");
}

TEST(CompactorErrorTest, MessageNamesKindsAndNeverDetails) {
  CompactorError summary = ErrorOf(CompactorErrorKind::kInvalidSummary);
  summary.invalid_summary = InvalidSummaryError{InvalidSummaryReason::kXmlRoot, kSecret, 3};
  EXPECT_EQ(summary.Message(), "compactor failed: invalid_summary (xml_root)");
  EXPECT_EQ(ModelError(InferenceErrorKind::kTimeout).Message(),
            "compactor failed: model (timeout)");
  EXPECT_EQ(ErrorOf(CompactorErrorKind::kModel).Message(), "compactor failed: model");
  EXPECT_EQ(ErrorOf(CompactorErrorKind::kInputTooLarge).Message(),
            "compactor failed: input_too_large");
  EXPECT_EQ(ErrorOf(CompactorErrorKind::kCanceled).Message(), "compactor failed: canceled");
  // A cause that does not belong to the kind is not rendered.
  CompactorError failed = ErrorOf(CompactorErrorKind::kFailed);
  failed.inference = InferenceError{InferenceErrorKind::kRefused, kSecret};
  EXPECT_EQ(failed.Message(), "compactor failed: failed");
  for (const auto& error : {summary, failed, ErrorOf(CompactorErrorKind::kInputInvalid)})
    EXPECT_EQ(error.Message().find("SECRET"), std::string::npos) << error.Message();
}

TEST(CompactorErrorTest, RejectReasonTable) {
  CompactorError summary = ErrorOf(CompactorErrorKind::kInvalidSummary);
  summary.invalid_summary = InvalidSummaryError{InvalidSummaryReason::kTokenLimit, "", {}};
  EXPECT_EQ(RejectReasonFor(summary), CompactRejectReason::kInvalidSummary);
  // The kind decides, even without the typed cause; unknown kinds are ExecutionFailed.
  const std::pair<CompactorErrorKind, CompactRejectReason> table[] = {
      {CompactorErrorKind::kInvalidSummary, CompactRejectReason::kInvalidSummary},
      {CompactorErrorKind::kCanceled, CompactRejectReason::kCanceled},
      {CompactorErrorKind::kInputInvalid, CompactRejectReason::kExecutionFailed},
      {CompactorErrorKind::kInputTooLarge, CompactRejectReason::kExecutionFailed},
      {CompactorErrorKind::kFailed, CompactRejectReason::kExecutionFailed},
      {CompactorErrorKind::kModel, CompactRejectReason::kExecutionFailed},
      {static_cast<CompactorErrorKind>(0), CompactRejectReason::kExecutionFailed},
  };
  for (const auto& [kind, reason] : table)
    EXPECT_EQ(RejectReasonFor(ErrorOf(kind)), reason) << static_cast<int>(kind);
}

TEST(CompactorErrorTest, ModelFailuresMapByInferenceKind) {
  const std::pair<InferenceErrorKind, CompactRejectReason> table[] = {
      {InferenceErrorKind::kTransport, CompactRejectReason::kExecutionFailed},
      {InferenceErrorKind::kTimeout, CompactRejectReason::kCanceled},
      {InferenceErrorKind::kRefused, CompactRejectReason::kExecutionFailed},
      {InferenceErrorKind::kCanceled, CompactRejectReason::kCanceled},
      {InferenceErrorKind::kInvalidResponse, CompactRejectReason::kExecutionFailed},
      {InferenceErrorKind::kRateLimited, CompactRejectReason::kExecutionFailed},
  };
  for (const auto& [kind, reason] : table)
    EXPECT_EQ(RejectReasonFor(ModelError(kind)), reason) << InferenceErrorKindName(kind);
}

TEST(CompactorErrorTest, InferenceKindOutsideModelDoesNotCancel) {
  CompactorError failed = ErrorOf(CompactorErrorKind::kFailed);
  failed.inference = InferenceError{InferenceErrorKind::kTimeout, ""};
  EXPECT_EQ(RejectReasonFor(failed), CompactRejectReason::kExecutionFailed);
}

// What the runtime journals with the rejection: the cause a person can act on, on one line.
TEST(CompactorErrorTest, RejectDetailForSaysTheCause) {
  CompactorError refused = ErrorOf(CompactorErrorKind::kModel);
  refused.inference = InferenceError{InferenceErrorKind::kRefused,
                                     "HTTP 401 invalid_api_key: Incorrect\nAPI key provided"};
  auto detail = RejectDetailFor(refused);
  ASSERT_TRUE(detail.has_value());
  EXPECT_EQ(detail->kind, RejectDetailKind::kCompactorFailed);
  EXPECT_EQ(detail->note, "model refused: HTTP 401 invalid_api_key: Incorrect API key provided");
  EXPECT_TRUE(IsValid(*detail));
  EXPECT_TRUE(DetailBelongsTo(detail->kind, RejectReasonFor(refused)));
  // A scripted model out of steps is a transport failure that says so.
  CompactorError exhausted = ErrorOf(CompactorErrorKind::kModel);
  exhausted.inference = InferenceError{InferenceErrorKind::kTransport, "script exhausted"};
  EXPECT_EQ(RejectDetailFor(exhausted)->note, "model transport: script exhausted");
  // A timeout is a Canceled rejection that still says why.
  EXPECT_EQ(RejectDetailFor(ModelError(InferenceErrorKind::kTimeout))->note,
            std::string("model timeout: ") + kSecret);
  CompactorError too_large = ErrorOf(CompactorErrorKind::kInputTooLarge);
  too_large.detail = std::string(400, 'x');
  const auto cut = RejectDetailFor(too_large);
  ASSERT_TRUE(cut.has_value());
  EXPECT_TRUE(IsValid(*cut)) << "cut to the note's limit";
  EXPECT_EQ(cut->note->rfind("input_too_large: xxx", 0), 0u);
  // Nothing to add: the reason says it, or the caller stopped it.
  EXPECT_FALSE(RejectDetailFor(ErrorOf(CompactorErrorKind::kInvalidSummary)).has_value());
  EXPECT_FALSE(RejectDetailFor(ErrorOf(CompactorErrorKind::kCanceled)).has_value());
  EXPECT_FALSE(RejectDetailFor(ModelError(InferenceErrorKind::kCanceled)).has_value());
}

}  // namespace
}  // namespace harness

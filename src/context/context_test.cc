#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "harness/context/basis.h"
#include "harness/context/limits.h"
#include "harness/context/measurement.h"

namespace harness {
namespace {

const Uuid kEvent = Uuid::Parse("01000000-0000-0000-0000-000000000000").value();

Fingerprint FingerprintOne() {
  Sha256Digest bytes{};
  bytes[0] = 1;
  return Fingerprint(bytes);
}

ContextMeasurement ValidMeasurement() {
  return ContextMeasurement{
      ContextBasis{3, kEvent},  ModelKey{"provider", "model"}, FingerprintOne(), 90, 100,
      CountQuality::kExactLocal};
}

TEST(ContextBasis, ValidIffRevisionAndEventAreSet) {
  EXPECT_TRUE((ContextBasis{1, kEvent}.IsValid()));
  EXPECT_FALSE((ContextBasis{0, kEvent}.IsValid()));
  EXPECT_FALSE((ContextBasis{1, Uuid()}.IsValid()));
  EXPECT_FALSE(ContextBasis{}.IsValid());
  EXPECT_EQ((ContextBasis{1, kEvent}), (ContextBasis{1, kEvent}));
  EXPECT_NE((ContextBasis{1, kEvent}), (ContextBasis{2, kEvent}));
  EXPECT_NE((ContextBasis{1, kEvent}), (ContextBasis{1, Uuid()}));
}

TEST(CountQuality, WireValuesAreFixed) {
  EXPECT_EQ(static_cast<int>(CountQuality::kUnknown), 0);
  EXPECT_EQ(static_cast<int>(CountQuality::kExactProvider), 1);
  EXPECT_EQ(static_cast<int>(CountQuality::kExactLocal), 2);
  EXPECT_EQ(static_cast<int>(CountQuality::kHeuristicEstimate), 3);
  EXPECT_EQ(static_cast<int>(PressureLevel::kUnknown), 0);
  EXPECT_EQ(static_cast<int>(PressureLevel::kNormal), 1);
  EXPECT_EQ(static_cast<int>(PressureLevel::kCompact), 2);
  EXPECT_EQ(static_cast<int>(PressureLevel::kHardLimit), 3);
}

struct MeasurementCase {
  const char* name;
  void (*mutate)(ContextMeasurement&);
  std::optional<ContextField> expected;  // nullopt: valid
};

// Each row breaks one or more fields; the first failing field in the order of §1.3 is reported.
const MeasurementCase kMeasurementCases[] = {
    {"valid", [](ContextMeasurement&) {}, std::nullopt},
    {"revision_zero", [](ContextMeasurement& m) { m.basis.revision = 0; }, ContextField::kRevision},
    {"through_event_zero", [](ContextMeasurement& m) { m.basis.through_event_id = Uuid(); },
     ContextField::kThroughEventId},
    {"provider_empty", [](ContextMeasurement& m) { m.model.provider.clear(); },
     ContextField::kModel},
    {"model_empty", [](ContextMeasurement& m) { m.model.model.clear(); }, ContextField::kModel},
    {"fingerprint_zero", [](ContextMeasurement& m) { m.request_fingerprint = Fingerprint(); },
     ContextField::kRequestFingerprint},
    {"input_limit_zero", [](ContextMeasurement& m) { m.input_limit = 0; },
     ContextField::kInputLimit},
    {"quality_unknown", [](ContextMeasurement& m) { m.quality = CountQuality::kUnknown; },
     ContextField::kQuality},
    {"quality_out_of_range",
     [](ContextMeasurement& m) { m.quality = static_cast<CountQuality>(4); },
     ContextField::kQuality},
    {"quality_exact_provider",
     [](ContextMeasurement& m) { m.quality = CountQuality::kExactProvider; }, std::nullopt},
    {"quality_heuristic",
     [](ContextMeasurement& m) { m.quality = CountQuality::kHeuristicEstimate; }, std::nullopt},
    {"over_limit_count_is_valid", [](ContextMeasurement& m) { m.input_tokens = 1'000'000; },
     std::nullopt},
    {"zero_count_is_valid", [](ContextMeasurement& m) { m.input_tokens = 0; }, std::nullopt},
    {"whitespace_model_key_is_valid",
     [](ContextMeasurement& m) {
       m.model = {" ", " "};
     },
     std::nullopt},
    // Order: every field broken at once reports the first.
    {"all_broken_reports_revision", [](ContextMeasurement& m) { m = ContextMeasurement{}; },
     ContextField::kRevision},
    {"event_and_later_broken_reports_event",
     [](ContextMeasurement& m) {
       m.basis.through_event_id = Uuid();
       m.model = {};
       m.input_limit = 0;
     },
     ContextField::kThroughEventId},
    {"model_before_fingerprint",
     [](ContextMeasurement& m) {
       m.model.model.clear();
       m.request_fingerprint = Fingerprint();
     },
     ContextField::kModel},
    {"fingerprint_before_limit",
     [](ContextMeasurement& m) {
       m.request_fingerprint = Fingerprint();
       m.input_limit = 0;
     },
     ContextField::kRequestFingerprint},
    {"limit_before_quality",
     [](ContextMeasurement& m) {
       m.input_limit = 0;
       m.quality = CountQuality::kUnknown;
     },
     ContextField::kInputLimit},
};

TEST(ContextMeasurement, ValidateReportsTheFirstFailingFieldInOrder) {
  for (const auto& c : kMeasurementCases) {
    ContextMeasurement m = ValidMeasurement();
    c.mutate(m);
    const auto status = m.Validate();
    if (!c.expected) {
      EXPECT_TRUE(status.ok()) << c.name;
      continue;
    }
    ASSERT_FALSE(status.ok()) << c.name;
    EXPECT_EQ(status.error().field, *c.expected) << c.name;
  }
}

TEST(ContextMeasurement, ModelErrorCarriesTheKeyFieldAndNamesAreFixed) {
  ContextMeasurement m = ValidMeasurement();
  m.model.model.clear();
  const auto error = m.Validate().error();
  ASSERT_TRUE(error.model_error.has_value());
  EXPECT_EQ(error.model_error->field, ModelKeyField::kModel);
  EXPECT_EQ(error.Message(), "invalid context field Model");

  const std::vector<std::pair<ContextField, const char*>> names = {
      {ContextField::kRevision, "Revision"},
      {ContextField::kThroughEventId, "ThroughEventID"},
      {ContextField::kModel, "Model"},
      {ContextField::kRequestFingerprint, "RequestFingerprint"},
      {ContextField::kInputLimit, "InputLimit"},
      {ContextField::kQuality, "Quality"}};
  for (const auto& [field, name] : names)
    EXPECT_EQ(ContextFieldName(field), name);
}

struct LimitsCase {
  const char* name;
  ModelLimits limits;
  TokenCount reserved;
  TokenCount margin;
  std::optional<ResolvedLimits> expected;  // nullopt: ContextLimitUnknownError
  std::optional<ContextLimitUnknownCause> cause;
};

// Every vector of docs/spec/contracts.md §1.8, plus the boundaries between them.
const LimitsCase kLimitsCases[] = {
    {"window", {100, 0, 0}, 20, 5, ResolvedLimits{20, 80, 75}, {}},
    {"window_max_output_clamps_reserved", {100, 0, 10}, 20, 5, ResolvedLimits{10, 90, 85}, {}},
    {"window_max_input_smaller", {100, 60, 0}, 20, 5, ResolvedLimits{20, 60, 55}, {}},
    {"max_input_only", {0, 60, 0}, 20, 5, ResolvedLimits{20, 60, 55}, {}},
    {"window_no_margin", {100, 0, 0}, 20, 0, ResolvedLimits{20, 80, 80}, {}},
    {"all_zero", {0, 0, 0}, 20, 5, std::nullopt, ContextLimitUnknownCause::kNoLimit},
    {"reserved_equals_window",
     {20, 0, 0},
     20,
     0,
     std::nullopt,
     ContextLimitUnknownCause::kReservedOutput},
    {"margin_equals_max_input",
     {0, 5, 0},
     1,
     5,
     std::nullopt,
     ContextLimitUnknownCause::kSafetyMargin},
    {"reserved_exceeds_window",
     {5, 0, 0},
     6,
     0,
     std::nullopt,
     ContextLimitUnknownCause::kReservedOutput},
    // Derived boundaries.
    {"window_max_input_larger_than_raw_keeps_raw",
     {100, 90, 0},
     20,
     5,
     ResolvedLimits{20, 80, 75},
     {}},
    {"max_input_above_window",
     {100, 101, 0},
     0,
     0,
     std::nullopt,
     ContextLimitUnknownCause::kInconsistentLimits},
    {"max_output_above_window",
     {100, 0, 101},
     0,
     0,
     std::nullopt,
     ContextLimitUnknownCause::kInconsistentLimits},
    {"max_equal_window_is_consistent", {100, 100, 100}, 20, 5, ResolvedLimits{20, 80, 75}, {}},
    {"margin_one_below_raw", {100, 0, 0}, 20, 79, ResolvedLimits{20, 80, 1}, {}},
    {"margin_equals_raw",
     {100, 0, 0},
     20,
     80,
     std::nullopt,
     ContextLimitUnknownCause::kSafetyMargin},
    {"max_output_only_clamps_reserved_without_window",
     {0, 60, 10},
     20,
     5,
     ResolvedLimits{10, 60, 55},
     {}},
    {"max_output_alone_gives_no_limit",
     {0, 0, 10},
     20,
     5,
     std::nullopt,
     ContextLimitUnknownCause::kNoLimit},
    {"huge_window",
     {UINT64_MAX, 0, 0},
     1,
     1,
     ResolvedLimits{1, UINT64_MAX - 1, UINT64_MAX - 2},
     {}},
};

TEST(ResolveContextLimits, Vectors) {
  const ModelKey key{"provider", "model"};
  for (const auto& c : kLimitsCases) {
    const auto result = ResolveContextLimits(key, c.limits, c.reserved, c.margin);
    if (c.expected) {
      ASSERT_TRUE(result.ok()) << c.name;
      EXPECT_EQ(*result, *c.expected) << c.name;
    } else {
      ASSERT_FALSE(result.ok()) << c.name;
      EXPECT_EQ(result.error().cause, *c.cause) << c.name;
      EXPECT_EQ(result.error().model, key) << c.name;
    }
  }
}

TEST(ResolveContextLimits, InvalidModelKeyIsCheckedFirst) {
  // The limits are also broken (all zero); the key is reported.
  const auto result = ResolveContextLimits(ModelKey{"", "model"}, ModelLimits{}, 20, 5);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().cause, ContextLimitUnknownCause::kModel);
  ASSERT_TRUE(result.error().model_error.has_value());
  EXPECT_EQ(result.error().model_error->field, ModelKeyField::kProvider);

  const auto model_missing = ResolveContextLimits(ModelKey{"p", ""}, {100, 0, 0}, 20, 5);
  ASSERT_FALSE(model_missing.ok());
  EXPECT_EQ(model_missing.error().model_error->field, ModelKeyField::kModel);
}

TEST(ResolveContextLimits, MessageNamesTheModel) {
  const auto result = ResolveContextLimits(ModelKey{"acme", "m1"}, ModelLimits{}, 0, 0);
  EXPECT_EQ(result.error().Message(),
            "context input limit unavailable for acme/m1: no window or input limit known");
}

struct OccupancyCase {
  TokenCount used;
  TokenCount limit;
  std::optional<BasisPoints> expected;  // nullopt: OccupancyError
};

// docs/spec/contracts.md §1.8, plus the 64-bit edges.
const OccupancyCase kOccupancyCases[] = {
    {0, 100, 0},
    {1, 10000, 1},
    {1, 3, 3333},
    {100, 100, 10000},
    {101, 100, 10000},
    {UINT64_MAX - 1, UINT64_MAX, 9999},
    {0, 0, std::nullopt},
    {5, 0, std::nullopt},
    {UINT64_MAX, UINT64_MAX, 10000},
    {UINT64_MAX, 1, 10000},
    {UINT64_MAX / 2, UINT64_MAX, 4999},
    {9999, 10000, 9999},
    {1, UINT64_MAX, 0},
};

TEST(OccupancyBasisPoints, Vectors) {
  EXPECT_EQ(kFullScaleBasisPoints, 10000);
  for (const auto& c : kOccupancyCases) {
    const auto result = OccupancyBasisPoints(c.used, c.limit);
    if (c.expected) {
      ASSERT_TRUE(result.ok()) << c.used << "/" << c.limit;
      EXPECT_EQ(*result, *c.expected) << c.used << "/" << c.limit;
    } else {
      ASSERT_FALSE(result.ok()) << c.used << "/" << c.limit;
      EXPECT_EQ(result.error().limit, 0u);
    }
  }
}

}  // namespace
}  // namespace harness

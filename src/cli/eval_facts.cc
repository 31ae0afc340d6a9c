// Facts files of `harness eval` and their scoring rule (eval_facts.h).
#include "eval_facts.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/internal/json_dom.h"

namespace harness::cli {

namespace {

// Facts nest four deep: the array, a fact, an alternatives list, a list of keywords.
constexpr std::size_t kFactsJsonDepth = 4;

JsonError RangeError(std::string path, std::string detail) {
  return JsonError{JsonErrorKind::kRange, std::move(path), 0, std::move(detail)};
}

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

Result<std::string, JsonError> BoundedString(const Json& value, const std::string& path,
                                             const FactsLimits& limits) {
  HARNESS_TRY(auto text, JsonAsString(value, path));
  if (text.size() > limits.max_string_bytes) {
    return Fail(RangeError(path, fmt::format("longer than {} bytes", limits.max_string_bytes)));
  }
  return text;
}

Result<std::vector<std::string>, JsonError> Keywords(const Json& value, const std::string& path,
                                                     const FactsLimits& limits) {
  if (!value.is_array())
    return Fail(JsonError{JsonErrorKind::kType, path, 0,
                          fmt::format("expected an array, found {}", JsonTypeName(value))});
  if (value.size() > limits.max_keywords) {
    return Fail(RangeError(path, fmt::format("more than {} keywords", limits.max_keywords)));
  }
  std::vector<std::string> keywords;
  keywords.reserve(value.size());
  for (std::size_t i = 0; i < value.size(); ++i) {
    const std::string at = fmt::format("{}[{}]", path, i);
    HARNESS_TRY(auto keyword, BoundedString(value[i], at, limits));
    if (std::all_of(keyword.begin(), keyword.end(), IsSpace))
      return Fail(RangeError(at, "a keyword must hold more than white space"));
    keywords.push_back(std::move(keyword));
  }
  return keywords;
}

Result<Fact, JsonError> ParseFact(const Json& value, const std::string& path,
                                  const FactsLimits& limits) {
  HARNESS_TRY(auto object, JsonObject::Open(value, path));
  Fact fact;
  HARNESS_TRY(const Json* text, object.RequireNonNull("fact"));
  HARNESS_TRY(fact.fact, BoundedString(*text, object.MemberPath("fact"), limits));
  HARNESS_TRY(const Json* keywords, object.RequireNonNull("keywords"));
  HARNESS_TRY(fact.keywords, Keywords(*keywords, object.MemberPath("keywords"), limits));
  if (const Json* alternatives = object.Find("or_keywords")) {
    const std::string at = object.MemberPath("or_keywords");
    if (!alternatives->is_array()) {
      return Fail(
          JsonError{JsonErrorKind::kType, at, 0,
                    fmt::format("expected an array, found {}", JsonTypeName(*alternatives))});
    }
    if (alternatives->size() > limits.max_alternatives) {
      return Fail(
          RangeError(at, fmt::format("more than {} alternatives", limits.max_alternatives)));
    }
    for (std::size_t i = 0; i < alternatives->size(); ++i) {
      const std::string list_at = fmt::format("{}[{}]", at, i);
      HARNESS_TRY(auto list, Keywords((*alternatives)[i], list_at, limits));
      if (list.empty())
        return Fail(RangeError(list_at, "an alternative needs at least one keyword"));
      fact.or_keywords.push_back(std::move(list));
    }
  }
  HARNESS_CHECK(object.RejectUnknown());
  if (fact.keywords.empty() && fact.or_keywords.empty())
    return Fail(RangeError(path, "a fact needs keywords or or_keywords to be found by"));
  return fact;
}

}  // namespace

Result<std::vector<Fact>, JsonError> ParseFacts(std::string_view text, const FactsLimits& limits) {
  if (text.size() > limits.max_bytes) {
    return Fail(JsonError{JsonErrorKind::kTooLarge, "$", 0,
                          fmt::format("longer than {} bytes", limits.max_bytes)});
  }
  HARNESS_TRY(const Json root,
              ParseStrictJson(text, JsonLimits{limits.max_bytes, kFactsJsonDepth}));
  if (!root.is_array())
    return Fail(JsonError{JsonErrorKind::kType, "$", 0,
                          fmt::format("expected an array of facts, found {}", JsonTypeName(root))});
  if (root.empty())
    return Fail(RangeError("$", "no facts"));
  if (root.size() > limits.max_facts)
    return Fail(RangeError("$", fmt::format("more than {} facts", limits.max_facts)));
  std::vector<Fact> facts;
  facts.reserve(root.size());
  for (std::size_t i = 0; i < root.size(); ++i) {
    HARNESS_TRY(auto fact, ParseFact(root[i], fmt::format("$[{}]", i), limits));
    facts.push_back(std::move(fact));
  }
  return facts;
}

std::string NormalizeForMatch(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  bool space = false;
  for (const char c : text) {
    if (IsSpace(c)) {
      space = !out.empty();
      continue;
    }
    if (space) {
      out.push_back(' ');
      space = false;
    }
    out.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c);
  }
  return out;
}

bool FactMatcher::Present(std::string_view keyword) const {
  const std::string wanted = NormalizeForMatch(keyword);
  return !wanted.empty() && text_.find(wanted) != std::string::npos;
}

bool FactMatcher::Kept(const Fact& fact) const {
  const auto all = [this](const std::vector<std::string>& keywords) {
    return !keywords.empty() && std::all_of(keywords.begin(), keywords.end(),
                                            [this](const std::string& k) { return Present(k); });
  };
  return all(fact.keywords) || std::any_of(fact.or_keywords.begin(), fact.or_keywords.end(), all);
}

}  // namespace harness::cli

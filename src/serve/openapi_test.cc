// The OpenAPI document against the router and the error table (serve/openapi.h): a route added
// without its document, or a documented path the server does not have, fails here.
#include "serve/openapi.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <set>
#include <string>
#include <utility>

#include "core/internal/json_dom.h"
#include "serve/api.h"

namespace harness::serve {
namespace {

Json Document() {
  auto parsed = ParseStrictJson(OpenApiDocument(), JsonLimits{.max_bytes = 1u << 20});
  EXPECT_TRUE(parsed.ok()) << (parsed.ok() ? "" : parsed.error().Describe());
  return parsed.ok() ? std::move(parsed).value() : Json::object();
}

std::string Lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

const std::set<std::string> kMethods = {"get", "put", "post", "delete", "options", "head", "patch"};

TEST(OpenApi, ItsPathsAndMethodsAreExactlyTheRoutersRoutes) {
  const Json doc = Document();
  ASSERT_EQ(doc.at("openapi"), "3.1.0");
  std::set<std::pair<std::string, std::string>> documented;
  for (const auto& [path, item] : doc.at("paths").items()) {
    for (const auto& [method, operation] : item.items()) {
      if (kMethods.count(method) != 0)
        documented.emplace(path, method);
    }
  }
  std::set<std::pair<std::string, std::string>> routed;
  for (const RouteSpec& route : Routes())
    routed.emplace(std::string(route.path), Lower(route.method));
  EXPECT_EQ(documented, routed);
}

// Each documented path, its placeholders filled with ids, reaches the route of its kind.
TEST(OpenApi, EachDocumentedOperationReachesItsRoute) {
  const Json doc = Document();
  std::set<std::string> operation_ids;
  for (const auto& [path, item] : doc.at("paths").items()) {
    std::string concrete = path;
    for (const std::string_view name :
         {"{session}", "{loop}", "{command}", "{message}", "{attempt}", "{input}", "{request}"}) {
      const auto at = concrete.find(name);
      if (at != std::string::npos)
        concrete.replace(at, name.size(), "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b");
    }
    for (const auto& [method, operation] : item.items()) {
      if (kMethods.count(method) == 0)
        continue;
      std::string upper = method;
      for (char& c : upper)
        c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      auto route = MatchRoute(upper, concrete);
      EXPECT_TRUE(route.ok()) << method << " " << path;
      ASSERT_TRUE(operation.contains("operationId")) << method << " " << path;
      EXPECT_TRUE(operation_ids.insert(operation.at("operationId").get<std::string>()).second)
          << "operationId used twice: " << operation.at("operationId");
      ASSERT_TRUE(operation.contains("responses")) << method << " " << path;
      EXPECT_FALSE(operation.at("responses").empty());
    }
  }
}

TEST(OpenApi, TheErrorSchemaNamesEveryErrorKind) {
  const Json doc = Document();
  const Json& kinds = doc.at("components")
                          .at("schemas")
                          .at("Error")
                          .at("properties")
                          .at("error")
                          .at("properties")
                          .at("kind")
                          .at("enum");
  std::set<std::string> documented;
  for (const Json& kind : kinds)
    documented.insert(kind.get<std::string>());
  std::set<std::string> defined;
  for (std::size_t k = 0; k < kApiErrorKindCount; ++k)
    defined.insert(std::string(ApiErrorKindName(static_cast<ApiErrorKind>(k))));
  EXPECT_EQ(documented, defined);
}

void CollectRefs(const Json& value, std::vector<std::string>& refs) {
  if (value.is_object()) {
    for (const auto& [name, member] : value.items()) {
      if (name == "$ref" && member.is_string())
        refs.push_back(member.get<std::string>());
      else
        CollectRefs(member, refs);
    }
  } else if (value.is_array()) {
    for (const Json& element : value)
      CollectRefs(element, refs);
  }
}

TEST(OpenApi, EveryReferenceResolves) {
  const Json doc = Document();
  std::vector<std::string> refs;
  CollectRefs(doc, refs);
  ASSERT_FALSE(refs.empty());
  for (const std::string& ref : refs) {
    ASSERT_EQ(ref.rfind("#/", 0), 0u) << ref;
    EXPECT_TRUE(doc.contains(Json::json_pointer(ref.substr(1)))) << ref;
  }
}

}  // namespace
}  // namespace harness::serve

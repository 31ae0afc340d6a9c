#include "harness/http/url.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace harness {
namespace {

TEST(ParseBaseUrl, AcceptsAnApiRootAndNormalizesIt) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"http://127.0.0.1:8080/v1", "http://127.0.0.1:8080/v1"},
      {"https://api.openai.com/v1/", "https://api.openai.com/v1"},
      {"HTTPS://api.example.com//", "https://api.example.com"},
      {"http://127.0.0.1:11434", "http://127.0.0.1:11434"},
      {"http://[::1]:8000/v1", "http://[::1]:8000/v1"},
      {"http://user:p%40ss@host:1/v1", "http://user:p%40ss@host:1/v1"},
  };
  for (const auto& [text, root] : cases) {
    auto parsed = ParseBaseUrl(text);
    ASSERT_TRUE(parsed.ok()) << text;
    EXPECT_EQ(parsed->root, root) << text;
    EXPECT_EQ(parsed->Endpoint("/chat/completions"), root + "/chat/completions");
  }
}

TEST(ParseBaseUrl, RefusesWhatCannotBeABase) {
  const std::vector<std::pair<std::string, BaseUrlProblem>> cases = {
      {"", BaseUrlProblem::kMalformed},
      {"127.0.0.1:8080/v1", BaseUrlProblem::kMalformed},
      {"http://h/v1 x", BaseUrlProblem::kMalformed},
      {"http://h:99999/v1", BaseUrlProblem::kMalformed},
      {std::string("http://h/v1\0x", 13), BaseUrlProblem::kMalformed},
      // libcurl decodes the escape into a raw DEL in the host, which it then cannot parse.
      {"http:/%7f:8", BaseUrlProblem::kMalformed},
      {"ftp://h/v1", BaseUrlProblem::kNotHttp},
      {"file:///etc/passwd", BaseUrlProblem::kNotHttp},
      {"http://h/v1?token=x", BaseUrlProblem::kHasQuery},
      {"http://h/v1?", BaseUrlProblem::kHasQuery},
      {"http://h/v1#x", BaseUrlProblem::kHasFragment},
      {"http://h/v1#", BaseUrlProblem::kHasFragment},
  };
  for (const auto& [text, problem] : cases) {
    auto parsed = ParseBaseUrl(text);
    ASSERT_FALSE(parsed.ok()) << text;
    EXPECT_EQ(parsed.error(), problem) << text;
    // The sentence a user reads never quotes the URL.
    EXPECT_EQ(std::string(BaseUrlProblemText(problem)).find("token"), std::string::npos);
  }
}

TEST(UrlCredentials, GivesTheUserAndPasswordAsWrittenAndDecoded) {
  EXPECT_EQ(UrlCredentials("http://u%3Ax:p%40ss@h/v1"),
            (std::vector<std::string>{"u%3Ax", "u:x", "p%40ss", "p@ss"}));
  EXPECT_EQ(UrlCredentials("http://onlyuser@h/v1"),
            (std::vector<std::string>{"onlyuser", "onlyuser"}));
  EXPECT_TRUE(UrlCredentials("http://h/v1").empty());
  EXPECT_TRUE(UrlCredentials("not a url").empty());
}

}  // namespace
}  // namespace harness

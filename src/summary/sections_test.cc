// ReadSummarySections and DecodeXmlText (summary/sections.h).
#include "harness/summary/sections.h"

#include <gtest/gtest.h>

namespace harness {
namespace {

TEST(ReadSummarySections, ReadsEachSectionDecoded) {
  auto sections = ReadSummarySections(
      "<conversation_summary>\n<goal >Fix a &lt; b &amp;&amp; c&#33;</goal>\n<constraints/>"
      "<decisions></decisions><state>\n- one\n- two &#x2713;\n</state><open_items>x"
      "</open_items></conversation_summary>");
  ASSERT_TRUE(sections);
  EXPECT_EQ(sections->goal, "Fix a < b && c!");
  EXPECT_EQ(sections->constraints, "");
  EXPECT_EQ(sections->decisions, "");
  EXPECT_EQ(sections->state, "\n- one\n- two \xe2\x9c\x93\n");
  EXPECT_EQ(sections->open_items, "x");
}

TEST(ReadSummarySections, OnlyWhatTheStrictGrammarAccepts) {
  EXPECT_FALSE(ReadSummarySections(""));
  EXPECT_FALSE(ReadSummarySections("<conversation_summary><goal>x</goal></conversation_summary>"));
  EXPECT_FALSE(
      ReadSummarySections("<conversation_summary><goal>x</goal><constraints/><decisions/>"
                          "<state> </state><open_items/></conversation_summary>"));
}

TEST(DecodeXmlText, LeavesWhatIsNotAReferenceAsWritten) {
  EXPECT_EQ(DecodeXmlText("a &unknown; &#xD800; &#; & b &#1114112;"),
            "a &unknown; &#xD800; &#; & b &#1114112;");
  EXPECT_EQ(DecodeXmlText("&apos;&quot;&gt;&#65;"), "'\">A");
}

}  // namespace
}  // namespace harness

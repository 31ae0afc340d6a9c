// The strict summary grammar: every row of the accept/reject corpus of docs/spec/grammar.md
// §3.7 (with docs/spec/decisions.md D1 applied to row 70), then the boundaries of §3.2–§3.5.
#include "harness/summary/summary.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace harness {
namespace {

using namespace std::string_literals;

constexpr auto kSyntax = InvalidSummaryReason::kXmlSyntax;
constexpr auto kRoot = InvalidSummaryReason::kXmlRoot;
constexpr auto kStructure = InvalidSummaryReason::kXmlStructure;
constexpr auto kContent = InvalidSummaryReason::kXmlContent;

// The canonical valid document of the corpus legend.
const std::string kV =
    "<conversation_summary><goal>g</goal><constraints></constraints><decisions></decisions>"
    "<state>s</state><open_items></open_items></conversation_summary>";

// Row 1, the upstream unit test's valid document ("valid#1").
const std::string kValid1 =
    "<conversation_summary><goal>ship &lt;safe&gt;</goal><constraints></constraints>"
    "<decisions/><state>tests &amp; build pass</state><open_items></open_items>"
    "</conversation_summary>";

// valid#1 after its root start tag.
const std::string kValid1Body = kValid1.substr(std::string_view("<conversation_summary>").size());

// Everything after the goal section of a short valid document.
const std::string kAfterGoal =
    "<constraints/><decisions/><state>s</state><open_items/></conversation_summary>";

// W(goal, state) of the corpus legend.
std::string W(std::string_view goal, std::string_view state) {
  return "<conversation_summary><goal>"s + std::string(goal) +
         "</goal><constraints/><decisions/><state>" + std::string(state) +
         "</state><open_items/></conversation_summary>";
}

// V with `ws` between every pair of neighbouring tags directly inside the root.
std::string SpacedV(std::string_view ws) {
  const std::string w(ws);
  return "<conversation_summary>" + w + "<goal>g</goal>" + w + "<constraints/>" + w +
         "<decisions/>" + w + "<state>s</state>" + w + "<open_items/>" + w +
         "</conversation_summary>";
}

struct CorpusCase {
  std::string name;  // "Row070", or "Row028b" for the second input of a row
  std::string input;
  std::optional<InvalidSummaryReason> want;  // nullopt: accepted, text == input
};

std::ostream& operator<<(std::ostream& out, const CorpusCase& c) {
  return out << c.name;
}

// check-sizes: a table of cases, one a few lines, read row by row.
std::vector<CorpusCase> Corpus() {
  std::vector<CorpusCase> cases;
  const auto row = [&cases](int number, std::vector<std::string> inputs,
                            std::optional<InvalidSummaryReason> want) {
    std::string name = "Row" +
                       std::string(number < 10    ? "00"
                                   : number < 100 ? "0"
                                                  : "") +
                       std::to_string(number);
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const std::string suffix =
          inputs.size() == 1 ? "" : std::string(1, static_cast<char>('a' + i));
      cases.push_back({name + suffix, std::move(inputs[i]), want});
    }
  };
  const std::optional<InvalidSummaryReason> kAccept;

  row(1, {kValid1}, kAccept);
  row(2, {""}, kRoot);
  row(3,
      {"<summary><goal>x</goal><constraints/><decisions/><state>s</state><open_items/>"
       "</summary>"},
      kRoot);
  row(4, {"<conversation_summary id=\"x\">" + kValid1Body}, kStructure);
  row(5, {"<conversation_summary xmlns=\"urn:x\">" + kValid1Body}, kStructure);
  row(6, {" \n" + kValid1}, kStructure);
  row(7, {kValid1 + "\n"}, kStructure);
  row(8, {"summary: " + kValid1}, kStructure);
  row(9, {kValid1 + "<extra/>"}, kStructure);
  row(10, {"<!--x-->" + kValid1}, kStructure);
  row(11, {"<conversation_summary><!--x--><goal>x</goal>" + kAfterGoal}, kStructure);
  row(12, {"<!DOCTYPE conversation_summary>" + kValid1}, kStructure);
  row(13, {"<?xml version=\"1.0\"?>" + kValid1}, kStructure);
  row(14, {"<conversation_summary><goal><![CDATA[ship safely]]></goal>" + kAfterGoal}, kStructure);
  row(15,
      {"<conversation_summary><goal>x</goal><constraints/><decisions/><state>y</state>"
       "</conversation_summary>"},
      kStructure);
  row(16,
      {"<conversation_summary><goal>x</goal><constraints/><decisions/><state>y</state>"
       "<state>again</state><open_items/></conversation_summary>"},
      kStructure);
  row(17,
      {"<conversation_summary><goal>x</goal><constraints/><unknown/><state>y</state>"
       "<open_items/></conversation_summary>"},
      kStructure);
  row(18,
      {"<conversation_summary><constraints/><goal>x</goal><decisions/><state>y</state>"
       "<open_items/></conversation_summary>"},
      kStructure);
  row(19, {"<conversation_summary><goal id=\"x\">x</goal>" + kAfterGoal}, kStructure);
  row(20, {"<conversation_summary><goal><b>x</b></goal>" + kAfterGoal}, kStructure);
  row(21, {"<conversation_summary>prose<goal>x</goal>" + kAfterGoal}, kStructure);
  row(22, {W(" \n ", "y")}, kContent);
  row(23, {W("x", "\t")}, kContent);
  row(24,
      {"<conversation_summary><goal>x</goal><constraints/><decisions/><state>y</state>"
       "<open_items></conversation_summary>"},
      kSyntax);
  row(25, {kV}, kAccept);
  row(26, {"<conversation_summary/>"}, kStructure);
  row(27, {"<wrong/>"}, kRoot);
  row(28, {" ", "\n"}, kStructure);
  row(29, {"<!--c-->"}, kStructure);
  row(30, {"<?pi x?>"}, kStructure);
  row(31, {"\xEF\xBB\xBF" + kV}, kStructure);
  row(32, {"\0"s + kV}, kSyntax);
  row(33, {"<conversation_summary>"}, kSyntax);
  row(34, {"<conversation_summary><goa"}, kSyntax);
  row(35, {"<conversation_summary><goal>x</goal>"}, kSyntax);
  row(36,
      {"<x:conversation_summary><goal>g</goal>" + kAfterGoal.substr(0, kAfterGoal.rfind('<')) +
       "</x:conversation_summary>"},
      kStructure);
  row(37,
      {"<x:conversation_summary xmlns:x=\"u\"><goal>g</goal>" +
       kAfterGoal.substr(0, kAfterGoal.rfind('<')) + "</x:conversation_summary>"},
      kStructure);
  row(38, {"<xml:conversation_summary/>"}, kStructure);
  row(39, {"<a:b:conversation_summary/>"}, kSyntax);
  row(40, {"<:conversation_summary/>"}, kRoot);
  row(41, {"<conversation_summary:/>"}, kRoot);
  row(42, {"<Conversation_Summary/>"}, kRoot);
  row(43, {"<conversation_summary a>" + kValid1Body}, kSyntax);
  row(44, {"<summary a>"}, kSyntax);
  row(45, {"<conversation_summary a=b>" + kValid1Body}, kSyntax);
  row(46, {"<conversation_summary a='b'>" + kValid1Body}, kStructure);
  row(47, {"<summary id=\"x\"/>"}, kRoot);
  row(48, {"<conversation_summary><x:goal>x</x:goal>" + kAfterGoal}, kStructure);
  row(49,
      {"<conversation_summary>\n  <goal>g</goal>\n  <constraints/>\n  <decisions/>\n  "
       "<state>s</state>\n  <open_items/>\n</conversation_summary>"},
      kAccept);
  row(50, {SpacedV("\r\n")}, kAccept);
  row(51, {"<conversation_summary>\u00a0<goal>g</goal>" + kAfterGoal}, kAccept);
  row(52, {SpacedV("\u3000")}, kAccept);
  row(53, {SpacedV("\u0085")}, kAccept);
  row(54, {SpacedV("\u200b")}, kStructure);
  row(55, {SpacedV("&#32;")}, kAccept);
  row(56, {SpacedV("&#65;")}, kStructure);
  row(57, {SpacedV("\v")}, kSyntax);
  row(58, {W("\u00a0", "s")}, kContent);
  row(59, {W("&#xA0;", "s")}, kContent);
  row(60, {W("&#32;", "s"), W(" &#32; ", "s")}, kContent);
  row(61, {W("\u2028", "s"), W("\u0085", "s"), W("\r\n", "s"), W("\r", "s")}, kContent);
  row(62, {W("\u200b", "s"), W("\ufeff", "s"), W("\u180e", "s")}, kAccept);
  row(63, {W("&amp;", "s")}, kAccept);
  row(64, {W("a & b", "s")}, kSyntax);
  row(65, {W("&nbsp;", "s")}, kSyntax);
  row(66, {W("&amp b", "s")}, kSyntax);
  row(67, {W("&#65;&#x42;", "s"), W("&#x4A;", "s"), W("&#00000065;", "s")}, kAccept);
  row(68, {W("&#X41;", "s")}, kSyntax);
  row(69, {W("&#0;", "s")}, kSyntax);
  row(70, {W("&#xD800;", "s")}, kSyntax);  // D1: the reference accepts it (U+FFFD)
  row(71, {W("&#x110000;", "s")}, kSyntax);
  row(72, {W("&#xFFFE;", "s")}, kSyntax);
  row(73, {W("&#;", "s")}, kSyntax);
  row(74, {W("&AMP;", "s")}, kSyntax);
  row(75, {W("&apos;&quot;", "s")}, kAccept);
  row(76, {W("a > b", "s"), W("\"it's\"", "s")}, kAccept);
  row(77, {W("a < b", "s")}, kSyntax);
  row(78, {W("a]]>b", "s")}, kSyntax);
  row(79, {W("a]]&gt;b", "s")}, kAccept);
  row(80,
      {W("a\x01"
         "b",
         "s")},
      kSyntax);
  row(81,
      {W("a\xFF"
         "b",
         "s")},
      kSyntax);
  row(82, {W("a\uFFFFb", "s")}, kSyntax);
  row(83, {W("\xED\xA0\x80", "s")}, kSyntax);
  row(84, {W("\U0001F680", "s")}, kAccept);
  row(85, {W("&lt;", "&gt;")}, kAccept);
  row(86, {W("&lt;![CDATA[x]]&gt;", "s")}, kAccept);
  row(87, {"<conversation_summary><goal/>" + kAfterGoal}, kContent);
  row(88,
      {"<conversation_summary><goal>g</goal><constraints/><decisions/><state/><open_items/>"
       "</conversation_summary>"},
      kContent);
  row(89,
      {"<conversation_summary><goal>g</goal><constraints>c</constraints><decisions>d"
       "</decisions><state>s</state><open_items>o</open_items></conversation_summary>"},
      kAccept);
  row(90,
      {"<conversation_summary><goal>g</goal><constraints> </constraints><decisions>\n"
       "</decisions><state>s</state><open_items>\t</open_items></conversation_summary>"},
      kAccept);
  row(91,
      {"<conversation_summary><goal>g</goal><constraints><i/></constraints><decisions/>"
       "<state>s</state><open_items/></conversation_summary>"},
      kStructure);
  row(92,
      {"<conversation_summary><goal>g</goal><constraints/><decisions/><state>s</state>"
       "<open_items><!--c--></open_items></conversation_summary>"},
      kStructure);
  row(93, {"<conversation_summary><goal>g<?p?></goal>" + kAfterGoal}, kStructure);
  row(94,
      {"<conversation_summary><goal>g</goal><constraints/><decisions/><state>s</state>"
       "<open_items/><open_items/></conversation_summary>"},
      kStructure);
  row(95,
      {"<conversation_summary><goal>g</goal><constraints/><decisions/><state>s</state>"
       "<open-items/></conversation_summary>"},
      kStructure);
  row(96, {"<conversation_summary><GOAL>g</GOAL>" + kAfterGoal}, kStructure);
  row(97, {"<conversation_summary><goal><goal>g</goal></goal>" + kAfterGoal}, kStructure);
  row(98, {"<conversation_summary> </conversation_summary>"}, kStructure);
  row(99,
      {"<conversation_summary\n><goal\t>g</goal\r\n><constraints/><decisions/><state>s</state>"
       "<open_items/></conversation_summary\n>"},
      kAccept);
  row(100,
      {"<conversation_summary><goal>g</goal><constraints /><decisions\n/><state>s</state>"
       "<open_items/></conversation_summary>"},
      kAccept);
  row(101,
      {"<conversation_summary><goal>g</goal><constraints/ ><decisions/><state>s</state>"
       "<open_items/></conversation_summary>"},
      kSyntax);
  row(102, {"< conversation_summary/>"}, kSyntax);
  row(103, {kV.substr(0, kV.rfind('<')) + "</ conversation_summary>"}, kSyntax);
  row(104, {"<conversation_summary><goal>g</state>"}, kSyntax);
  row(105, {kV + "</x>"}, kSyntax);
  row(106, {kV + kV}, kStructure);
  row(107, {kV + "<summary/>"}, kStructure);
  row(108, {kV + "<!--c-->", kV + "<?p?>", kV + "x", kV + ">", kV + "\t", kV + "\u00a0"},
      kStructure);
  row(109, {kV + "]]>"}, kSyntax);
  row(110, {kV + "<extra"}, kSyntax);
  row(111, {kV + "\0"s}, kSyntax);
  row(112, {"<summary a=\"<![CDATA[\">"}, kStructure);
  row(113, {"<!--<![CDATA[-->" + kV}, kStructure);
  row(114, {"&bad;<![CDATA[x]]>"}, kStructure);
  row(115, {"<summary/><![CDATA[x]]>"}, kStructure);
  row(116, {"<conversation_summary><goal><![cdata[x]]></goal>" + kAfterGoal}, kSyntax);
  row(117, {"<![FOO[x]]>" + kV}, kSyntax);
  row(118, {"<!-- a -- b -->" + kV}, kSyntax);
  row(119, {"<!-- x"}, kSyntax);
  row(120, {"<?xml version=\"1.1\"?>" + kV}, kSyntax);
  row(121, {"<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>" + kV}, kSyntax);
  row(122, {"<?xml version=\"1.0\" encoding=\"UTF-8\"?>" + kV}, kStructure);
  row(123, {"<!DOCTYPE x [<!ENTITY e \"v\">]>" + kV}, kStructure);
  row(124, {"<conversation_summary.v1/>"}, kRoot);
  row(125, {"<1goal/>"}, kSyntax);
  row(126, {"<r\u00e9sum\u00e9/>"}, kRoot);
  row(127, {"<a\u20ac/>"}, kSyntax);
  row(128, {"<conversation_summary a=\"1\" a=\"2\"/>"}, kStructure);
  row(129, {"<conversation_summary a=\"]]>\"/>"}, kSyntax);
  row(130, {"<conversation_summary a=\"<\"/>"}, kSyntax);
  row(131, {"<conversation_summary a=\">\"/>"}, kStructure);
  row(132, {"<conversation_summary><goal xmlns=\"\">g</goal>" + kAfterGoal}, kStructure);
  row(133, {"<"}, kSyntax);
  row(134, {"hello"}, kStructure);
  row(135, {"</conversation_summary>"}, kSyntax);
  row(136, {"<summary><goal>&bad;</goal>"}, kRoot);
  row(137, {"&bad;<summary/>"}, kSyntax);
  row(138, {" <summary/>"}, kStructure);
  row(139, {"<!--c--><summary/>", "<?xml version=\"1.0\"?><summary/>"}, kStructure);
  row(140, {W(" ", "s") + "\n"}, kStructure);
  row(141,
      {"<conversation_summary><goal> </goal><constraints/><decisions/><state>s</state>"
       "<open_items/>"},
      kSyntax);
  row(142, {W("a\r\nb", "s")}, kAccept);
  return cases;
}

// Accepts `input` and checks the one promise of success: one text block, the input byte for byte.
void ExpectAccepted(const std::string& input) {
  const auto result = ParseSummary(input);
  ASSERT_TRUE(result.ok()) << "rejected as " << InvalidSummaryReasonName(result.error().reason)
                           << " at " << result.error().offset.value_or(0) << ": "
                           << result.error().detail;
  ASSERT_EQ(result->blocks.size(), 1u);
  const TextBlock* text = result->blocks[0].as<TextBlock>();
  ASSERT_NE(text, nullptr);
  EXPECT_EQ(text->text, input);
}

void ExpectRejected(const std::string& input, InvalidSummaryReason want) {
  const auto result = ParseSummary(input);
  ASSERT_FALSE(result.ok()) << "accepted";
  EXPECT_EQ(InvalidSummaryReasonName(result.error().reason), InvalidSummaryReasonName(want))
      << "detail: " << result.error().detail << " at " << result.error().offset.value_or(0);
  ASSERT_TRUE(result.error().offset.has_value());
  EXPECT_LE(*result.error().offset, input.size());
  EXPECT_FALSE(result.error().detail.empty());
}

class SummaryCorpus : public testing::TestWithParam<CorpusCase> {};

TEST_P(SummaryCorpus, ClassifiesAsTheContractSays) {
  const CorpusCase& c = GetParam();
  if (c.want) {
    ExpectRejected(c.input, *c.want);
  } else {
    ExpectAccepted(c.input);
  }
}

INSTANTIATE_TEST_SUITE_P(Contracts, SummaryCorpus, testing::ValuesIn(Corpus()),
                         [](const testing::TestParamInfo<CorpusCase>& info) {
                           return info.param.name;
                         });

TEST(SummaryCorpusTable, CoversAll142Rows) {
  std::vector<bool> seen(143, false);
  for (const CorpusCase& c : Corpus())
    seen[std::stoul(c.name.substr(3, 3))] = true;
  for (std::size_t row = 1; row <= 142; ++row)
    EXPECT_TRUE(seen[row]) << "row " << row;
}

TEST(SummaryAccept, OutputKeepsCarriageReturnsAndEscapes) {
  const std::string input = W("a\r\nb &lt;&#65;&#x42;", "s\r");
  const auto result = ParseSummary(input);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->blocks[0].as<TextBlock>()->text, input);
}

// ---- D1: references to surrogate code points ---------------------------------------------

TEST(SummaryD1, EverySurrogateReferenceIsSyntax) {
  for (const char* reference : {"&#xD800;", "&#xDFFF;", "&#xdbff;", "&#55296;", "&#57343;"}) {
    SCOPED_TRACE(reference);
    ExpectRejected(W(reference, "s"), kSyntax);
    ExpectRejected(W("g", reference), kSyntax);
    ExpectRejected(SpacedV(reference), kSyntax);
  }
  // The neighbours are ordinary characters.
  ExpectAccepted(W("&#xD7FF;", "&#xE000;"));
  ExpectAccepted(W("&#55295;", "&#57344;"));
}

TEST(SummaryD1, SurrogateReferenceInAnAttributeIsSyntaxToo) {
  ExpectRejected("<conversation_summary a=\"&#xD800;\"/>", kSyntax);
}

// ---- White space (§3.2, §3.4) --------------------------------------------------------------

// Go's unicode.IsSpace, minus U+000B and U+000C, which are not XML characters.
const std::vector<std::string>& UnicodeSpaces() {
  static const std::vector<std::string> spaces = {
      "\t",     "\n",     "\r",     " ",      "\u0085", "\u00a0", "\u1680", "\u2000",
      "\u2001", "\u2002", "\u2003", "\u2004", "\u2005", "\u2006", "\u2007", "\u2008",
      "\u2009", "\u200a", "\u2028", "\u2029", "\u202f", "\u205f", "\u3000"};
  return spaces;
}

TEST(SummaryWhiteSpace, EveryUnicodeSpaceMayStandBetweenSections) {
  for (const std::string& space : UnicodeSpaces()) {
    SCOPED_TRACE(testing::PrintToString(space));
    ExpectAccepted(SpacedV(space));
    ExpectAccepted(SpacedV(space + space + " "));
  }
}

TEST(SummaryWhiteSpace, EveryUnicodeSpaceIsBlankInGoalAndState) {
  for (const std::string& space : UnicodeSpaces()) {
    SCOPED_TRACE(testing::PrintToString(space));
    ExpectRejected(W(space, "s"), kContent);
    ExpectRejected(W("g", space + space), kContent);
  }
}

TEST(SummaryWhiteSpace, SpaceReferencesCountAfterDecoding) {
  for (const char* reference :
       {"&#9;", "&#xA;", "&#13;", "&#x20;", "&#133;", "&#xA0;", "&#x1680;", "&#x2000;", "&#x200A;",
        "&#x2028;", "&#x2029;", "&#x202F;", "&#x205F;", "&#x3000;", "&#12288;"}) {
    SCOPED_TRACE(reference);
    ExpectAccepted(SpacedV(reference));
    ExpectRejected(W(reference, "s"), kContent);
  }
}

TEST(SummaryWhiteSpace, LookAlikesAreNotSpace) {
  for (const char* not_space :
       {"\u200b", "\ufeff", "\u180e", "&#x200B;", "&#xFEFF;", "&#x180E;", "\u00ad", "\u2060"}) {
    SCOPED_TRACE(testing::PrintToString(std::string(not_space)));
    ExpectRejected(SpacedV(not_space), kStructure);
    ExpectAccepted(W(not_space, "s"));
  }
}

TEST(SummaryWhiteSpace, VerticalTabAndFormFeedAreNotXmlCharacters) {
  for (const char* bad : {"\v", "\f", "&#11;", "&#xC;"}) {
    SCOPED_TRACE(testing::PrintToString(std::string(bad)));
    ExpectRejected(SpacedV(bad), kSyntax);
    ExpectRejected(W(bad, "s"), kSyntax);
  }
}

TEST(SummaryWhiteSpace, TagSpaceIsAsciiOnly) {
  ExpectAccepted("<conversation_summary \t\r\n><goal \n>g</goal \t>" + kAfterGoal);
  // A non-ASCII space after a name is read as part of the name, which it cannot be.
  ExpectRejected("<conversation_summary\u00a0>" + kValid1Body, kSyntax);
  ExpectRejected("<conversation_summary><goal>g</goal\u3000>" + kAfterGoal, kSyntax);
}

// ---- Character references and entities (§3.5) ------------------------------------------------

TEST(SummaryReferences, CodePointBoundaries) {
  ExpectAccepted(W("&#x10FFFF;", "&#1114111;"));
  ExpectAccepted(W("&#x10000;&#xFFFD;&#xE000;&#x9;&#x20;", "s"));
  ExpectRejected(W("&#x110000;", "s"), kSyntax);
  ExpectRejected(W("&#1114112;", "s"), kSyntax);
  ExpectRejected(W("&#xFFFF;", "s"), kSyntax);
  ExpectRejected(W("&#x1F;", "s"), kSyntax);
  ExpectRejected(W("&#8;", "s"), kSyntax);
}

TEST(SummaryReferences, HugeNumbersDoNotOverflow) {
  const std::string nines(400, '9');
  const std::string effs(400, 'f');
  ExpectRejected(W("&#" + nines + ";", "s"), kSyntax);
  ExpectRejected(W("&#x" + effs + ";", "s"), kSyntax);
  // 2^32 + 0x41 and 2^64 + 0x41 would wrap to 'A' in a 32- or 64-bit accumulator.
  ExpectRejected(W("&#x100000041;", "s"), kSyntax);
  ExpectRejected(W("&#x10000000000000041;", "s"), kSyntax);
  ExpectRejected(W("&#4294967361;", "s"), kSyntax);
  // Leading zeros are fine however many there are.
  ExpectAccepted(W("&#x" + std::string(400, '0') + "41;", "&#" + std::string(400, '0') + "65;"));
}

TEST(SummaryReferences, MalformedReferencesAreSyntax) {
  for (const char* bad :
       {"&",      "&;",     "&#",     "&#x",   "&#x;",  "&#65", "&#x41",  "&#6 5;", "&#x4G;",
        "&#-1;",  "&#+65;", "&# 65;", "&lt",   "&lt ;", "&Lt;", "&LT;",   "&quot",  "&apos",
        "&nbsp;", "&copy;", "&a;",    "&lta;", "& lt;", "&#a;", "&#xx41;"}) {
    SCOPED_TRACE(bad);
    ExpectRejected(W(std::string("x") + bad, "s"), kSyntax);
    ExpectRejected(W("g", std::string("x") + bad + "y"), kSyntax);
  }
}

TEST(SummaryReferences, HexDigitsMayBeEitherCase) {
  ExpectAccepted(W("&#x4a;&#x4A;&#xaBc;", "s"));
}

TEST(SummaryReferences, ReferencesAtTheVeryEndAreSyntax) {
  ExpectRejected("<conversation_summary><goal>&amp", kSyntax);
  ExpectRejected("<conversation_summary><goal>&#x4", kSyntax);
  ExpectRejected("<conversation_summary><goal>&", kSyntax);
}

// ---- Raw characters and UTF-8 -------------------------------------------------------------

TEST(SummaryCharacters, EveryForbiddenControlIsSyntax) {
  for (int b = 0; b < 0x20; ++b) {
    if (b == '\t' || b == '\n' || b == '\r')
      continue;
    SCOPED_TRACE(b);
    const std::string control(1, static_cast<char>(b));
    ExpectRejected(W("a" + control, "s"), kSyntax);
    ExpectRejected(SpacedV(control), kSyntax);
    ExpectRejected(control + kV, kSyntax);
    ExpectRejected(kV + control, kSyntax);
  }
  ExpectAccepted(W("a\x7f", "\xc2\x80\xc2\x9f"));  // DEL and the C1 controls are Chars
}

TEST(SummaryCharacters, MalformedUtf8IsSyntax) {
  for (const char* bad :
       {"\x80", "\xbf", "\xc0\x80", "\xc1\xbf", "\xc2", "\xc2\x41", "\xe0\x80\x80", "\xe0\x9f\xbf",
        "\xed\xbf\xbf", "\xe2\x82", "\xf0\x80\x80\x80", "\xf0\x8f\xbf\xbf", "\xf4\x90\x80\x80",
        "\xf5\x80\x80\x80", "\xf8", "\xfe", "\xff", "\xf0\x9f\x9a"}) {
    SCOPED_TRACE(testing::PrintToString(std::string(bad)));
    ExpectRejected(W(std::string("a") + bad, "s"), kSyntax);
    ExpectRejected(W("g", std::string(bad) + "a"), kSyntax);
  }
  // The shortest and longest of each length.
  ExpectAccepted(
      W("\xc2\x80\xdf\xbf\xe0\xa0\x80\xef\xbf\xbd\xf0\x90\x80\x80\xf4\x8f\xbf\xbf", "s"));
}

TEST(SummaryCharacters, NonCharactersFFFEAndFFFFAreSyntax) {
  ExpectRejected(W("\xef\xbf\xbe", "s"), kSyntax);
  ExpectRejected(W("\xef\xbf\xbf", "s"), kSyntax);
  ExpectAccepted(W("\xef\xbf\xbd\xef\xb7\x90", "s"));  // U+FFFD and U+FDD0 are Chars
}

TEST(SummaryCharacters, BracketsAreFineUnlessTheyCloseCdata) {
  ExpectAccepted(W("]", "]]"));
  ExpectAccepted(W("a]]", "]>]] >"));
  ExpectRejected(W("]]]>", "s"), kSyntax);
  ExpectRejected(SpacedV("]]>"), kSyntax);
  ExpectRejected("]]>", kSyntax);
}

// ---- Names (XML 1.0 fourth edition, Appendix B) ---------------------------------------------

std::string EmptyElement(std::string_view name) {
  std::string element = "<";
  element += name;
  element += "/>";
  return element;
}

TEST(SummaryNames, NonAsciiNamesFollowAppendixB) {
  // Valid names: the first element is just not the root.
  for (const char* name : {"r\u00e9sum\u00e9", "\u4e2d\u6587", "a\u00b7b", "a\u0300", "a\u0663",
                           "_x", ":x", "x.y-z", "\u0391\u03b2", "\u3007", "a\u3005", "\uac00"}) {
    SCOPED_TRACE(name);
    ExpectRejected(EmptyElement(name), kRoot);
  }
  // Not names: syntax.
  for (const char* name :
       {"\u00b7a", "\u0300a", "\u0663", ".x", "-x", "1x", "a\u20ac", "\u20ac", "a\u00d7",
        "\U0001F680", "a\xff", "a\xc3", "\xed\xa0\x80", "a\u2070", "\u00a0"}) {
    SCOPED_TRACE(testing::PrintToString(std::string(name)));
    ExpectRejected(EmptyElement(name), kSyntax);
  }
}

TEST(SummaryNames, PrefixesAndColons) {
  ExpectRejected("<x:conversation_summary/>", kStructure);
  ExpectRejected("<xmlns:conversation_summary/>", kStructure);
  ExpectRejected("<x:summary/>", kRoot);
  ExpectRejected("<conversation_summary:x/>", kRoot);
  ExpectRejected("<a::b/>", kSyntax);
  ExpectRejected("<conversation_summary a:b:c=\"1\"/>", kSyntax);
  ExpectRejected("<conversation_summary><goal/></goal:x>", kSyntax);
  ExpectRejected("<conversation_summary><goal>g</x:goal>" + kAfterGoal, kSyntax);
  ExpectRejected("<conversation_summary><goal:>g</goal:>" + kAfterGoal, kStructure);
  ExpectRejected("<conversation_summary><:goal>g</:goal>" + kAfterGoal, kStructure);
}

// ---- Tags ---------------------------------------------------------------------------------

TEST(SummaryTags, AttributeSyntax) {
  ExpectRejected("<conversation_summary a = \"1\"\tb='2'c=\"3\">" + kValid1Body, kStructure);
  ExpectRejected("<conversation_summary a=\"&lt;&#65;\"/>", kStructure);
  ExpectRejected("<conversation_summary a=\"'\" b='\"'/>", kStructure);
  ExpectRejected("<conversation_summary a=\"\"/>", kStructure);
  ExpectRejected("<conversation_summary a=\"&bad;\"/>", kSyntax);
  ExpectRejected("<conversation_summary a=\"\x01\"/>", kSyntax);
  ExpectRejected("<conversation_summary a=\"\xff\"/>", kSyntax);
  ExpectRejected("<conversation_summary a=\"x", kSyntax);
  ExpectRejected("<conversation_summary a=", kSyntax);
  ExpectRejected("<conversation_summary a", kSyntax);
  ExpectRejected("<conversation_summary a=\"1\"", kSyntax);
  ExpectRejected("<conversation_summary =\"1\"/>", kSyntax);
  ExpectRejected("<conversation_summary a==\"1\"/>", kSyntax);
  ExpectRejected("<conversation_summary 1a=\"1\"/>", kSyntax);
  ExpectRejected("<summary a=\"1\" b>", kSyntax);
  ExpectRejected("<summary a=\"1\"/>", kRoot);
}

TEST(SummaryTags, StartAndEndTagSyntax) {
  ExpectRejected("<conversation_summary", kSyntax);
  ExpectRejected("<conversation_summary ", kSyntax);
  ExpectRejected("<conversation_summary/", kSyntax);
  ExpectRejected("<conversation_summary/x>", kSyntax);
  ExpectRejected("<conversation_summary><goal>g</goal", kSyntax);
  ExpectRejected("<conversation_summary><goal>g</goal ", kSyntax);
  ExpectRejected("<conversation_summary><goal>g</", kSyntax);
  ExpectRejected("<conversation_summary><goal>g</goal x>" + kAfterGoal, kSyntax);
  ExpectRejected("<conversation_summary><goal>g</goal/>" + kAfterGoal, kSyntax);
  ExpectRejected("<conversation_summary><goal/></goal>" + kAfterGoal, kSyntax);
  ExpectRejected("</", kSyntax);
  ExpectRejected("</>", kSyntax);
  ExpectRejected("<>", kSyntax);
  ExpectRejected("<=/>", kSyntax);
}

TEST(SummaryTags, EndTagsMustMatch) {
  ExpectRejected("<conversation_summary><goal>g</GOAL>" + kAfterGoal, kSyntax);
  ExpectRejected("<conversation_summary><goal>g</goal>" + kAfterGoal + "</conversation_summary>",
                 kSyntax);
  ExpectRejected("<conversation_summary></Conversation_summary>", kSyntax);
  ExpectRejected("<conversation_summary></goal>", kSyntax);
}

// ---- Markup that is never allowed ---------------------------------------------------------------

TEST(SummaryMarkup, Comments) {
  ExpectRejected("<!---->" + kV, kStructure);
  ExpectRejected("<!-- - -->" + kV, kStructure);
  ExpectRejected("<!--\x01\xff-->" + kV, kStructure);  // comment bytes are not checked
  ExpectRejected("<!--->", kSyntax);
  ExpectRejected("<!---->", kStructure);
  ExpectRejected("<!--a--->", kSyntax);
  ExpectRejected("<!-", kSyntax);
  ExpectRejected("<!-x-->", kSyntax);
  ExpectRejected("<!", kSyntax);
  ExpectRejected("<!--", kSyntax);
  ExpectRejected("<!--a--", kSyntax);
  ExpectRejected(kV + "<!--x", kSyntax);
}

TEST(SummaryMarkup, ProcessingInstructionsAndDeclarations) {
  ExpectRejected("<?x?>", kStructure);
  ExpectRejected("<?a:b:c data?>", kStructure);  // a target is a name, not a qualified name
  ExpectRejected("<?x", kSyntax);
  ExpectRejected("<?x ?", kSyntax);
  ExpectRejected("<?", kSyntax);
  ExpectRejected(
      "<?"
      "?>",
      kSyntax);
  ExpectRejected("<? x?>", kSyntax);
  ExpectRejected("<?1x?>", kSyntax);
  ExpectRejected("<?xml?>" + kV, kStructure);
  ExpectRejected("<?xml version='1.0' encoding='utf-8'?>" + kV, kStructure);
  ExpectRejected("<?xml version=\"1.0\" encoding=\"Utf-8\" standalone=\"yes\"?>" + kV, kStructure);
  ExpectRejected("<?xml encoding=\"latin1\"?>" + kV, kSyntax);
  ExpectRejected("<?xml version=\"2\"?>" + kV, kSyntax);
  ExpectRejected("<?xml version=\"\"?>" + kV, kStructure);   // empty counts as absent
  ExpectRejected("<?xml version=1.1?>" + kV, kStructure);    // unquoted is not read
  ExpectRejected("<?xml version=\"1.1?>" + kV, kStructure);  // unterminated is not read
  ExpectRejected("<?xml version = \"1.1\"?>" + kV, kStructure);
  ExpectRejected("<?xml version=x version=\"1.1\"?>" + kV, kSyntax);
  // The byte after the first "version=" is skipped, so this "version=" is never seen.
  ExpectRejected("<?xml version=version=\"1.1\"?>" + kV, kStructure);
  ExpectRejected("<?xml xversion=\"1.1\"?>" + kV, kSyntax);
  ExpectRejected("<?XML version=\"1.1\"?>" + kV, kStructure);
  ExpectRejected("<?xml-stylesheet version=\"1.1\"?>" + kV, kStructure);
  ExpectRejected(kV + "<?xml version=\"9\"?>", kSyntax);
}

TEST(SummaryMarkup, Directives) {
  ExpectRejected("<!DOCTYPE x>", kStructure);
  ExpectRejected("<!DOCTYPE x [<!-- > --> <!ELEMENT a (b)>]>" + kV, kStructure);
  ExpectRejected("<!DOCTYPE x \"a>b\" 'c>d'>" + kV, kStructure);
  ExpectRejected("<!DOCTYPE x", kSyntax);
  ExpectRejected("<!DOCTYPE x [<!ENTITY e \"v\">]", kSyntax);
  ExpectRejected("<!DOCTYPE x [<!--", kSyntax);
  ExpectRejected("<!DOCTYPE x [<!-- x -->", kSyntax);
  ExpectRejected("<!DOCTYPE x \"unterminated>", kSyntax);
  ExpectRejected("<!>", kSyntax);  // the byte after "<!" is the directive's first byte
  ExpectRejected("<!>>", kStructure);
  ExpectRejected("<!x<>>", kStructure);
  ExpectRejected("<!x<!>>", kStructure);
  ExpectRejected("<!x<!->>", kStructure);
  ExpectRejected("<conversation_summary><!ELEMENT a>", kStructure);
}

TEST(SummaryMarkup, CdataPreCheckBeatsEverything) {
  ExpectRejected("\0<![CDATA["s, kStructure);
  ExpectRejected("<conversation_summary a=\"<![CDATA[", kStructure);
  ExpectRejected(kV + "<![CDATA[", kStructure);
  ExpectRejected("<![CDATA[", kStructure);
  ExpectRejected(W(" ", "s") + "<!--<![CDATA[-->", kStructure);
  ExpectRejected("<![CDATA", kSyntax);
  ExpectRejected("<![cdata[x]]>" + kV, kSyntax);
}

// ---- Classification order (§3.3) --------------------------------------------------------------

TEST(SummaryOrder, FirstFailureInDocumentOrderWins) {
  ExpectRejected("<summary>" + std::string("\0", 1), kRoot);
  ExpectRejected("\x01<summary/>", kSyntax);
  ExpectRejected("<conversation_summary><goal>g</goal>prose\x01" + kAfterGoal, kSyntax);
  ExpectRejected("<conversation_summary><goal>g</goal>prose&bad;" + kAfterGoal, kSyntax);
  ExpectRejected("<conversation_summary><goal>g</goal>prose<bad" + kAfterGoal, kStructure);
  ExpectRejected("<conversation_summary><goal>g</goal>prose<x/>&bad;" + kAfterGoal, kStructure);
  ExpectRejected("hello\xff", kSyntax);
  ExpectRejected(kV + "x&bad;", kSyntax);
  ExpectRejected(kV + "<x", kSyntax);
  // Blank goal or state is judged only at the end of a document that is otherwise perfect.
  ExpectRejected(W(" ", " ") + "<x/>", kStructure);
  ExpectRejected(W(" ", " ").substr(0, W(" ", " ").size() - 1), kSyntax);
  ExpectRejected(W("", ""), kContent);
}

TEST(SummaryOrder, TextInsideTheRootIsJudgedAfterTheWholeTextToken) {
  // The token "prose" at the end of input is refused for being prose, not for the truncation.
  ExpectRejected("<conversation_summary>prose", kStructure);
  ExpectRejected("<conversation_summary> \n", kSyntax);
  ExpectRejected("<conversation_summary><goal>x", kSyntax);
}

// ---- Errors ---------------------------------------------------------------------------------

TEST(SummaryErrors, OffsetsPointAtTheFailure) {
  const auto offset_of = [](const std::string& input) {
    return ParseSummary(input).error().offset.value();
  };
  EXPECT_EQ(offset_of(""), 0u);
  EXPECT_EQ(offset_of("<summary/>"), 0u);
  EXPECT_EQ(offset_of(W("ab&bad;", "s")), W("ab", "s").find("</goal>"));
  EXPECT_EQ(offset_of(W("ab\xff", "s")), W("ab", "s").find("</goal>"));
  EXPECT_EQ(offset_of(W("g", " ")), W("g", " ").find("<state>"));
  EXPECT_EQ(offset_of(W(" ", "s")), W(" ", "s").find("<goal>"));
  EXPECT_EQ(offset_of(kV + "\n"), kV.size());
  EXPECT_EQ(offset_of(kV.substr(0, 40)), 40u);
  EXPECT_EQ(offset_of("<conversation_summary> \n x<goal>"), 25u);
  EXPECT_EQ(offset_of("<conversation_summary a=\"1\">"), 22u);
  EXPECT_EQ(offset_of("&bad;<![CDATA[x]]>"), 5u);
}

TEST(SummaryErrors, DetailNeverQuotesTheInput) {
  const std::string marker = "Zq7Secret";
  for (const std::string& input :
       {"<" + marker + "/>", W(marker + "&" + marker + ";", "s"), "<conversation_summary " + marker,
        "<conversation_summary><" + marker + "/>", kV + marker, marker,
        "<?xml version=\"" + marker + "\"?>", "<!--" + marker + "-- -->",
        "<conversation_summary><goal>g</" + marker + ">"}) {
    const auto result = ParseSummary(input);
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.error().detail.find(marker), std::string::npos) << result.error().detail;
    EXPECT_EQ(result.error().detail.find("Zq7"), std::string::npos);
  }
}

TEST(InvalidSummaryReason, WireNamesAreFixedAndRoundTrip) {
  const std::vector<std::pair<InvalidSummaryReason, std::string_view>> names = {
      {InvalidSummaryReason::kWire, "wire"},
      {InvalidSummaryReason::kIdentity, "identity"},
      {InvalidSummaryReason::kOutputShape, "output_shape"},
      {InvalidSummaryReason::kByteLimit, "byte_limit"},
      {InvalidSummaryReason::kTokenUsage, "token_usage"},
      {InvalidSummaryReason::kTokenLimit, "token_limit"},
      {InvalidSummaryReason::kXmlSyntax, "xml_syntax"},
      {InvalidSummaryReason::kXmlRoot, "xml_root"},
      {InvalidSummaryReason::kXmlStructure, "xml_structure"},
      {InvalidSummaryReason::kXmlContent, "xml_content"}};
  for (const auto& [reason, name] : names) {
    EXPECT_EQ(InvalidSummaryReasonName(reason), name);
    EXPECT_EQ(ParseInvalidSummaryReason(name), reason);
  }
  for (const std::string_view unknown : {"", "XML_SYNTAX", "xml-syntax", "syntax", "xml_syntax "}) {
    EXPECT_FALSE(ParseInvalidSummaryReason(unknown).has_value()) << unknown;
  }
}

TEST(SummaryErrors, MessageNamesOnlyTheReason) {
  const auto result = ParseSummary("<summary/>");
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().Message(), "invalid compaction summary (xml_root)");
}

// ---- Size ---------------------------------------------------------------------------------

TEST(SummarySize, TenMegabytesOfNestedElementsAreRefusedAtTheFirstOne) {
  std::string nested;
  nested.reserve(10 << 20);
  while (nested.size() < (10u << 20))
    nested += "<a>";
  const auto before_root = ParseSummary(nested);
  ASSERT_FALSE(before_root.ok());
  EXPECT_EQ(before_root.error().reason, kRoot);
  EXPECT_EQ(before_root.error().offset, 0u);

  const std::string in_goal = "<conversation_summary><goal>" + nested;
  const auto inside = ParseSummary(in_goal);
  ASSERT_FALSE(inside.ok());
  EXPECT_EQ(inside.error().reason, kStructure);
  EXPECT_EQ(inside.error().offset, std::string_view("<conversation_summary><goal>").size());
}

TEST(SummarySize, TenMegabytesOfOpenTagsInTheRootAreRefusedAtTheFirstOne) {
  std::string input = "<conversation_summary>";
  while (input.size() < (10u << 20))
    input += "<goal><goal>";
  ExpectRejected(input, kStructure);
}

TEST(SummarySize, OneMegabyteOfTextInGoalIsAccepted) {
  std::string goal;
  while (goal.size() < (1u << 20))
    goal += "ship it &amp; test \xe2\x9c\x93 &#x1F680;\r\n";
  ExpectAccepted(W(goal, "s"));
  ExpectRejected(W(goal + "&", "s"), kSyntax);
}

// ---- The fuzz seeds ------------------------------------------------------------------------

// Each seed's file name starts with the verdict it must get: accept_, syntax_, root_,
// structure_ or content_. Keeps the seed corpus honest as the grammar evolves.
TEST(SummaryFuzzSeeds, EachSeedGetsTheVerdictItsNameSays) {
  const char* source = std::getenv("HARNESS_SOURCE_DIR");
  if (source == nullptr)
    GTEST_SKIP() << "HARNESS_SOURCE_DIR is not set (run through ctest)";
  const std::filesystem::path dir = std::filesystem::path(source) / "fuzz/corpus/summary";
  std::size_t seeds = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    SCOPED_TRACE(name);
    std::ifstream file(entry.path(), std::ios::binary);
    const std::string input{std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
    const std::string verdict = name.substr(0, name.find('_'));
    if (verdict == "accept") {
      ExpectAccepted(input);
    } else {
      const auto want = ParseInvalidSummaryReason("xml_" + verdict);
      ASSERT_TRUE(want.has_value()) << "seed names start with a verdict";
      ExpectRejected(input, *want);
    }
    ++seeds;
  }
  EXPECT_GE(seeds, 30u);
}

}  // namespace
}  // namespace harness

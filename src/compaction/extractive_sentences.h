// The extractive compactor's sentence classifiers: which of a person's or the agent's
// sentences set a rule, make a choice, name a next step, or say nothing worth keeping.
//
// Contract (each classifier takes the sentence's lower-case form, extractive_text.h Lower,
// except IsFiller and LooksLikeCode, which take it as written):
// - Sentences(lines) splits clean lines at '.', '!' or '?' followed by white space, and at
//   line ends.
// - IsConstraint: a rule word or phrase anywhere ("must", "never", "don't", "only", "keep",
//   "avoid", "without", "should", "at most", "instead of", "ask me", …) or a rule's opening
//   ("use …", "prefer …", "stick to …", "no …", "leave …"), after lead-ins ("and", "also",
//   "please", "but", "so").
// - LooksLikeCode: indented lines, comments, markup, prompts, tracebacks, stack frames, log
//   lines ("ValueError: …") and statements ending in ';', '{' or "):"; never a rule's source.
// - IsDecision: a choice or a conclusion ("I'll", "we will", "let's", "decided", "rather
//   than", "the fix is", "root cause", "turns out", ", not …") that is neither a question nor
//   exploration ("let me", "let's look", "I'll check", "to understand", …).
// - IsFiller: thinking aloud ("but", "actually", "maybe", "wait", "I think"), an announcement
//   ending in ':', a cut sentence, or fewer than four words.
// - EditReason(lines): why the agent says it makes the change that follows its words: the
//   first sentence of its clean lines that is not code, filler (IsFiller), a question or an
//   announcement of the edit alone ("Let me update the file.", "Now I'll fix it."), cut to
//   kEditReasonBytes; "" when there is none.
// - IsNextStep: an explicit way forward ("next step", "Next, I'll", "still need", "todo:").
// - IsGreeting and IsContinuation: the whole message is a greeting or thanks, or a nudge
//   ("continue", "keep going", "go ahead", "retry"), trailing punctuation aside.
// - ListPoints(lines): when at least three of the clean lines are list items ("1. ", "2) ",
//   "- ", "* ", "• "), the first sentence that says something (not IsFiller, not code) of the
//   words before the first item, then of each item (the marker, a bold lead's asterisks and
//   the final period taken off), in order; otherwise nothing. An answer that is a list is told by
//   the lead of every item, not by its first item whole.
// - IsPointer: the message points at a file ("@prompt.md do this") with fewer than three
//   words of its own besides filler.
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace harness::extractive_detail {

std::vector<std::string> Sentences(const std::vector<std::string>& lines);
bool IsConstraint(std::string_view lower);
bool LooksLikeCode(std::string_view line);
bool IsDecision(std::string_view lower);
bool IsFiller(std::string_view sentence);
inline constexpr std::size_t kEditReasonBytes = 120;
std::string EditReason(const std::vector<std::string>& lines);
bool IsNextStep(std::string_view lower);
bool IsGreeting(std::string_view lower);
bool IsContinuation(std::string_view lower);
bool IsPointer(std::string_view lower);
std::vector<std::string> ListPoints(const std::vector<std::string>& lines);

}  // namespace harness::extractive_detail

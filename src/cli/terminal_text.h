// TerminalText: untrusted text (model output, transcripts, journal contents, server error
// details) made safe to print on a terminal.
//
// Contract:
// - The result is well-formed UTF-8 that a terminal shows as text and never executes: every
//   character it holds is printable, a newline (\n) or a tab (\t).
// - Each character a terminal would act on is written visibly instead, in one notation:
//   * a C0 control other than \n and \t (ESC, BEL, CR, ...) and DEL as `\xHH` (two lower-case hex
//     digits): ESC is `\x1b`, so an OSC 52 clipboard write, an OSC 0 title or a CSI 2J screen
//     clear shows as text starting `\x1b]` or `\x1b[`;
//   * a C1 control (U+0080..U+009F, which some terminals treat as ESC sequences) as `\uHHHH`;
//   * a bidirectional embedding, override or isolate (U+202A..U+202E, U+2066..U+2069), which
//     would reorder what follows it on the line, as `\uHHHH`;
//   * each byte that is not part of well-formed UTF-8 (RFC 3629) as `\xHH`.
// - Every other character is copied as it is, backslashes included: the notation is for a
//   reader, not reversible (a literal "\x1b" in the input prints the same as an ESC byte).
// - Only what is printed for a person goes through it: the journal and --json output keep the
//   exact bytes (JSON escaping makes control characters inert there).
// TerminalLine: TerminalText for text printed as (part of) one line of a line-oriented output
// (names of files, facts, reasons): a newline and a tab are written as `\x0a` and `\x09` too, so
// the text can neither end its line nor start one that looks like another result.
// TerminalTextStream: TerminalText over text that arrives in pieces (a model's streamed answer).
// Contract: for any pieces p1..pn, Next(p1) + ... + Next(pn) + Finish() == TerminalText(p1 + ...
// + pn): a UTF-8 character cut between two pieces is held back (at most 3 bytes) until the piece
// that completes it, instead of being shown as escaped bytes. Finish shows what is held back and
// starts over.
// RewritesInPlace(fd): whether output to `fd` may use the one escape sequence the CLI ever writes,
// the erase-line of a progress line rewritten in place: `fd` is a terminal, TERM is not "dumb",
// and NO_COLOR (no-color.org) is unset or empty. The CLI writes no colour; NO_COLOR turns off
// the only sequence it has. Proof: tests/e2e/chat_tmux_test.cc
// (NoColorShowsTheProgressOneLinePerStage, ACompactionAtATerminalShowsOneLineRewrittenInPlace).
// Thread safety: TerminalText is a pure function; a TerminalTextStream is used by one thread at
// a time; RewritesInPlace reads the environment.
#pragma once

#include <string>
#include <string_view>

namespace harness::cli {

std::string TerminalText(std::string_view text);
std::string TerminalLine(std::string_view text);
bool RewritesInPlace(int fd);

class TerminalTextStream {
 public:
  std::string Next(std::string_view piece);
  std::string Finish();

 private:
  std::string held_;  // the start of a character the next piece may complete
};

}  // namespace harness::cli

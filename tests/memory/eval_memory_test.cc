// The memory of `harness eval DIR` on a directory of one transcript, counted by the program's
// replaced operator new (counted_heap.h): the command itself (eval_command.cc), from reading the
// file to the second window's compaction, each window in a fresh session over the memory journal.
#include <gtest/gtest.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "commands.h"
#include "memory/counted_heap.h"
#include "memory/transcripts.h"

namespace harness {
namespace {

namespace fs = std::filesystem;

// A corpus directory of one transcript, removed when the test ends.
struct Corpus {
  fs::path dir;
  explicit Corpus(const std::string& text) {
    std::string name = (fs::temp_directory_path() / "harness-eval-memory-XXXXXX").string();
    if (::mkdtemp(name.data()) == nullptr)
      return;
    dir = name;
    std::ofstream(dir / "shape.json", std::ios::binary) << text;
  }
  ~Corpus() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

// What `harness eval DIR` allocates at its peak, over the transcript's size. The text is read by
// the command, so it is counted; the command line is parsed before.
double PeakOverText(const std::string& text) {
  Corpus corpus(text);
  EXPECT_FALSE(corpus.dir.empty());
  CLI::App app;
  auto line = cli::AddEvalCommand(app);
  const std::string dir = corpus.dir.string();
  const char* argv[] = {"harness", "eval", dir.c_str()};
  app.parse(3, argv);
  const HeapPeak peak;
  const std::optional<int> code = cli::RunEvalCommand(*line);
  EXPECT_EQ(code, 0) << "every window must commit";
  return static_cast<double>(peak.Bytes()) / static_cast<double>(text.size());
}

// While a window's compaction runs, the loop's history is the only decoded copy of the
// transcript (eval decodes the file again for each run and for the summary's measures, after the
// session is gone), beside the attempt's projection of the head and the memory journal's
// records of the run (about the text). Before eval held a decoded copy of its own through every
// run, many short messages peaked at 7.1 times the text.
TEST(EvalMemory, EvaluatingATranscriptPeaksWithinAFewTimesTheText) {
  struct Shape {
    const char* name;
    std::string text;
    double limit;
  };
  const std::size_t bytes = 2u << 20;
  const Shape shapes[] = {{"many messages", ManyMessages(bytes), 6.0},
                          {"many blocks", ManyBlocks(bytes), 6.0},
                          {"coding session", CodingSession(bytes, false), 6.0}};
  for (const Shape& shape : shapes) {
    const double ratio = PeakOverText(shape.text);
    std::printf("%s: eval heap peak %.2f times the text\n", shape.name, ratio);
    EXPECT_LT(ratio, shape.limit) << shape.name;
  }
}

}  // namespace
}  // namespace harness

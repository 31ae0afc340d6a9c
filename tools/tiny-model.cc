// tiny-model: writes a tiny llama-architecture GGUF model with random weights and a real
// tokenizer, for the end-to-end tests' llama-server (docs/local-model.md).
//
//   tiny-model VOCAB.gguf OUT.gguf
//
// VOCAB.gguf is one of llama.cpp's vocab-only files (the tests use models/ggml-vocab-gpt-2.gguf);
// every general.* and tokenizer.* key is copied from it, so the server tokenizes text exactly as
// that tokenizer does. The weights are seeded N(0, 0.02) f32 and the norms are 1: the model is
// a real transformer that runs at full speed and produces tokens, but the tokens mean nothing.
// The output is a function of the input file alone (same bytes on every run and machine with
// the same ggml), so a test that pins a generation with a seed stays pinned.
//
// This program is built by scripts/llama-server against the static ggml-base library of the
// cached llama.cpp build; the repository's own CMake build does not compile it.

#include <ggml.h>
#include <gguf.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <numbers>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace {

// The shape of the model: as small as llama.cpp loads comfortably, with a context large enough
// for the compaction tests: llama-server caps each slot at the trained context, and a summarizer
// request (about 1,300 prompt tokens plus the summary budget) overflows 2048, which the server
// answers with a 500.
constexpr int64_t kEmbedding = 64;
constexpr int64_t kLayers = 2;
constexpr int64_t kHeads = 2;
constexpr int64_t kFeedForward = 128;
constexpr uint32_t kContext = 8192;
constexpr float kRmsEpsilon = 1e-5F;
constexpr float kRopeBase = 10000.0F;
constexpr float kWeightStdDev = 0.02F;
constexpr uint64_t kSeed = 0x6861726e657373ULL;  // "harness"

struct GgufDeleter {
  void operator()(gguf_context* ctx) const { gguf_free(ctx); }
};
struct GgmlDeleter {
  void operator()(ggml_context* ctx) const { ggml_free(ctx); }
};
using Gguf = std::unique_ptr<gguf_context, GgufDeleter>;
using Ggml = std::unique_ptr<ggml_context, GgmlDeleter>;

// Normal samples from the fully specified mt19937_64 through Box-Muller written out here:
// std::normal_distribution's algorithm is implementation-defined, so it would tie the model's
// bytes to one standard library.
class NormalSource {
 public:
  explicit NormalSource(uint64_t seed) : engine_(seed) {}

  float Next(float stddev) {
    if (has_spare_) {
      has_spare_ = false;
      return spare_ * stddev;
    }
    // Uniforms in (0, 1]: 53 random bits, shifted away from 0 so the logarithm is finite.
    const double u1 = (static_cast<double>(engine_() >> 11) + 1.0) * 0x1.0p-53;
    const double u2 = static_cast<double>(engine_() >> 11) * 0x1.0p-53;
    const double radius = std::sqrt(-2.0 * std::log(u1));
    const double angle = 2.0 * std::numbers::pi * u2;
    spare_ = static_cast<float>(radius * std::sin(angle));
    has_spare_ = true;
    return static_cast<float>(radius * std::cos(angle)) * stddev;
  }

 private:
  std::mt19937_64 engine_;
  float spare_ = 0;
  bool has_spare_ = false;
};

// One tensor of the model: its name, shape (ggml order: ne[0] is the row length) and values.
struct Tensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> values;
};

Tensor Random(std::string name, std::vector<int64_t> shape, NormalSource& normal) {
  int64_t count = 1;
  for (int64_t d : shape)
    count *= d;
  std::vector<float> values(static_cast<size_t>(count));
  for (float& v : values)
    v = normal.Next(kWeightStdDev);
  return {std::move(name), std::move(shape), std::move(values)};
}

Tensor Ones(std::string name, int64_t length) {
  return {std::move(name), {length}, std::vector<float>(static_cast<size_t>(length), 1.0F)};
}

// Every tensor llama.cpp's llama architecture requires (src/models/llama.cpp,
// load_arch_tensors). There is no output.weight: the loader then ties the output projection to
// token_embd, which halves the file.
std::vector<Tensor> ModelTensors(int64_t vocab) {
  NormalSource normal(kSeed);
  std::vector<Tensor> tensors;
  tensors.push_back(Random("token_embd.weight", {kEmbedding, vocab}, normal));
  tensors.push_back(Ones("output_norm.weight", kEmbedding));
  for (int64_t layer = 0; layer < kLayers; ++layer) {
    std::string block = "blk.";
    block.append(std::to_string(layer)).append(".");
    auto name = [&block](std::string_view suffix) {
      std::string full = block;
      full.append(suffix);
      return full;
    };
    tensors.push_back(Ones(name("attn_norm.weight"), kEmbedding));
    tensors.push_back(Random(name("attn_q.weight"), {kEmbedding, kEmbedding}, normal));
    tensors.push_back(Random(name("attn_k.weight"), {kEmbedding, kEmbedding}, normal));
    tensors.push_back(Random(name("attn_v.weight"), {kEmbedding, kEmbedding}, normal));
    tensors.push_back(Random(name("attn_output.weight"), {kEmbedding, kEmbedding}, normal));
    tensors.push_back(Ones(name("ffn_norm.weight"), kEmbedding));
    tensors.push_back(Random(name("ffn_gate.weight"), {kEmbedding, kFeedForward}, normal));
    tensors.push_back(Random(name("ffn_down.weight"), {kFeedForward, kEmbedding}, normal));
    tensors.push_back(Random(name("ffn_up.weight"), {kEmbedding, kFeedForward}, normal));
  }
  return tensors;
}

// GPT-2's byte-level BPE stores each byte of a token as one printable code point: the bytes
// '!'..'~', 0xA1..0xAC and 0xAE..0xFF as themselves, every other byte b as U+0100 + n, where n
// counts the bytes before b that are not in those ranges. Returns the token's bytes, or nullopt
// for a token that is not written in that alphabet.
std::optional<std::string> TokenBytes(std::string_view text) {
  std::array<int, 324> byte_of{};
  byte_of.fill(-1);
  int next = 0;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    byte_of[printable ? b : 256 + next++] = b;
  }
  std::string bytes;
  for (std::size_t i = 0; i < text.size();) {
    const auto lead = static_cast<unsigned char>(text[i]);
    char32_t cp = 0;
    if (lead < 0x80) {
      cp = lead;
      i += 1;
    } else if ((lead & 0xE0) == 0xC0 && i + 1 < text.size()) {
      cp = (char32_t{lead} & 0x1F) << 6 | (static_cast<unsigned char>(text[i + 1]) & 0x3F);
      i += 2;
    } else {
      return std::nullopt;  // beyond U+07FF: not the byte alphabet
    }
    if (cp >= byte_of.size() || byte_of[cp] < 0)
      return std::nullopt;
    bytes.push_back(static_cast<char>(byte_of[cp]));
  }
  return bytes;
}

// Well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, at most U+10FFFF).
bool IsUtf8(std::string_view bytes) {
  for (std::size_t i = 0; i < bytes.size();) {
    const auto b0 = static_cast<unsigned char>(bytes[i]);
    std::size_t length = 0;
    char32_t cp = 0;
    if (b0 < 0x80) {
      ++i;
      continue;
    } else if (b0 >= 0xC2 && b0 <= 0xDF) {
      length = 2;
      cp = b0 & 0x1F;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
      length = 3;
      cp = b0 & 0x0F;
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
      length = 4;
      cp = b0 & 0x07;
    } else {
      return false;
    }
    if (i + length > bytes.size())
      return false;
    for (std::size_t k = 1; k < length; ++k) {
      const auto b = static_cast<unsigned char>(bytes[i + k]);
      if ((b & 0xC0) != 0x80)
        return false;
      cp = cp << 6 | (b & 0x3F);
    }
    if ((length == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
        (length == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
      return false;
    i += length;
  }
  return true;
}

// A random model picks any token, and a token holding part of a multi-byte character leaves
// the answer invalid UTF-8, which llama-server's chat parser refuses with a 500 ("does not match
// the expected format"), about one short answer in ten. Marked as control tokens, such pieces
// still tokenize input but print as nothing, so every answer is valid UTF-8. Returns how many
// tokens were marked.
std::size_t HidePartialCharacters(gguf_context* out, int64_t tokens_key) {
  const int64_t types_key = gguf_find_key(out, "tokenizer.ggml.token_type");
  if (types_key < 0 || gguf_get_arr_type(out, types_key) != GGUF_TYPE_INT32 ||
      gguf_get_arr_n(out, types_key) != gguf_get_arr_n(out, tokens_key))
    return 0;
  const auto n = gguf_get_arr_n(out, types_key);
  const auto* types = static_cast<const int32_t*>(gguf_get_arr_data(out, types_key));
  std::vector<int32_t> changed(types, types + n);
  constexpr int32_t kNormal = 1;
  constexpr int32_t kControl = 3;
  std::size_t marked = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (changed[i] != kNormal)
      continue;
    const auto bytes = TokenBytes(gguf_get_arr_str(out, tokens_key, i));
    if (bytes && !IsUtf8(*bytes)) {
      changed[i] = kControl;
      ++marked;
    }
  }
  gguf_set_arr_data(out, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, changed.data(), n);
  return marked;
}

bool StartsWith(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

int Fail(const std::string& message) {
  std::fprintf(stderr, "tiny-model: %s\n", message.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3)
    return Fail("usage: tiny-model VOCAB.gguf OUT.gguf");
  const std::string vocab_path = argv[1];
  const std::string out_path = argv[2];

  gguf_init_params read_params{};
  read_params.no_alloc = true;
  read_params.ctx = nullptr;
  Gguf vocab(gguf_init_from_file(vocab_path.c_str(), read_params));
  if (!vocab)
    return Fail("cannot read " + vocab_path + " as GGUF");
  const int64_t tokens_key = gguf_find_key(vocab.get(), "tokenizer.ggml.tokens");
  if (tokens_key < 0 || gguf_get_kv_type(vocab.get(), tokens_key) != GGUF_TYPE_ARRAY ||
      gguf_get_arr_type(vocab.get(), tokens_key) != GGUF_TYPE_STRING) {
    return Fail(vocab_path + " has no tokenizer.ggml.tokens string array");
  }
  const auto n_vocab = static_cast<int64_t>(gguf_get_arr_n(vocab.get(), tokens_key));
  if (n_vocab <= 0)
    return Fail(vocab_path + " has an empty vocabulary");

  // Keep the tokenizer and the provenance; drop the vocab file's own architecture keys, which
  // describe a model this file is not.
  Gguf out(gguf_init_empty());
  gguf_set_kv(out.get(), vocab.get());
  for (int64_t i = gguf_get_n_kv(out.get()) - 1; i >= 0; --i) {
    const std::string key = gguf_get_key(out.get(), i);
    if (!StartsWith(key, "general.") && !StartsWith(key, "tokenizer.")) {
      gguf_remove_key(out.get(), key.c_str());
    }
  }
  const std::size_t hidden =
      HidePartialCharacters(out.get(), gguf_find_key(out.get(), "tokenizer.ggml.tokens"));
  gguf_set_val_str(out.get(), "general.architecture", "llama");
  gguf_set_val_str(out.get(), "general.name", "harness tiny random llama");
  gguf_set_val_u32(out.get(), "general.file_type", 0);  // all f32
  gguf_set_val_u32(out.get(), "llama.vocab_size", static_cast<uint32_t>(n_vocab));
  gguf_set_val_u32(out.get(), "llama.context_length", kContext);
  gguf_set_val_u32(out.get(), "llama.embedding_length", kEmbedding);
  gguf_set_val_u32(out.get(), "llama.block_count", kLayers);
  gguf_set_val_u32(out.get(), "llama.feed_forward_length", kFeedForward);
  gguf_set_val_u32(out.get(), "llama.attention.head_count", kHeads);
  gguf_set_val_u32(out.get(), "llama.attention.head_count_kv", kHeads);
  gguf_set_val_f32(out.get(), "llama.attention.layer_norm_rms_epsilon", kRmsEpsilon);
  gguf_set_val_u32(out.get(), "llama.rope.dimension_count", kEmbedding / kHeads);
  gguf_set_val_f32(out.get(), "llama.rope.freq_base", kRopeBase);

  const std::vector<Tensor> tensors = ModelTensors(n_vocab);
  // The ggml context only describes the tensors (no_alloc); their data stays in `tensors`,
  // which outlives the write.
  ggml_init_params meta_params{};
  meta_params.mem_size = ggml_tensor_overhead() * (tensors.size() + 1);
  meta_params.mem_buffer = nullptr;
  meta_params.no_alloc = true;
  Ggml meta(ggml_init(meta_params));
  if (!meta)
    return Fail("cannot allocate the tensor descriptions");
  for (const Tensor& t : tensors) {
    ggml_tensor* described = ggml_new_tensor(meta.get(), GGML_TYPE_F32,
                                             static_cast<int>(t.shape.size()), t.shape.data());
    ggml_set_name(described, t.name.c_str());
    gguf_add_tensor(out.get(), described);
    gguf_set_tensor_data(out.get(), t.name.c_str(), t.values.data());
  }
  if (!gguf_write_to_file(out.get(), out_path.c_str(), /*only_meta=*/false)) {
    return Fail("cannot write " + out_path);
  }
  std::fprintf(stderr,
               "tiny-model: wrote %s (n_vocab %lld, %zu partial-character tokens hidden, %zu "
               "tensors)\n",
               out_path.c_str(), static_cast<long long>(n_vocab), hidden, tensors.size());
  return 0;
}

#include "core/formats/llama2c_checkpoint.hpp"

#include <cctype>
#include <cstring>
#include <limits>

#include "core/common/error.hpp"

namespace loom {
namespace {

constexpr int64_t kHeaderBytes = 7 * 4;
constexpr int32_t kVersionedMagic = 0x616b3432;  // "ak42": llama2.c's export.py v1/v2 files

// n_a * n_b with an overflow check (all factors come from an untrusted header).
int64_t mul(const std::string& path, int64_t a, int64_t b) {
  if (a != 0 && b > std::numeric_limits<int64_t>::max() / a) throw Error(path + ": header sizes overflow");
  return a * b;
}

bool is_byte_piece(const std::string& s) {
  return s.size() == 6 && s.compare(0, 3, "<0x") == 0 && s[5] == '>' &&
         std::isxdigit(static_cast<unsigned char>(s[3])) && std::isxdigit(static_cast<unsigned char>(s[4]));
}

// llama2.c's tokenizer.py wrote BOS/EOS as "\n<s>\n" / "\n</s>\n"; strip the newlines so the
// pieces are the SentencePiece ones again.
std::string strip_special_newlines(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && s[b] == '\n') ++b;
  while (e > b && s[e - 1] == '\n') --e;
  const std::string core = s.substr(b, e - b);
  if (core == "<unk>" || core == "<s>" || core == "</s>") return core;
  return s;
}

std::string spaces_to_spm(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char ch : s) {
    if (ch == ' ') {
      out += "\xE2\x96\x81";  // U+2581 LOWER ONE EIGHTH BLOCK, SentencePiece's space marker
    } else {
      out += ch;
    }
  }
  return out;
}

}  // namespace

Llama2cCheckpoint Llama2cCheckpoint::open(const std::string& path) {
  Llama2cCheckpoint ck;
  ck.path_ = path;
  ck.file_ = MappedFile::open(path);
  const size_t size = ck.file_.size();
  if (size < static_cast<size_t>(kHeaderBytes)) {
    throw Error(path + ": " + std::to_string(size) + " bytes is too short for a llama2.c header (28 bytes)");
  }
  int32_t h[7];
  std::memcpy(h, ck.file_.data(), sizeof(h));
  if (h[0] == kVersionedMagic) {
    throw Error(path + ": a llama2.c versioned export (magic \"ak42\"); only the legacy v0 format "
                       "(export.py --version 0) is supported");
  }
  Llama2cConfig& c = ck.config_;
  c.dim = h[0];
  c.hidden_dim = h[1];
  c.n_layers = h[2];
  c.n_heads = h[3];
  c.n_kv_heads = h[4];
  c.shared_classifier = h[5] > 0;
  c.vocab_size = h[5] == std::numeric_limits<int32_t>::min() ? 0 : (h[5] < 0 ? -h[5] : h[5]);
  c.seq_len = h[6];
  const char* names[7] = {"dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "seq_len"};
  const int32_t vals[7] = {c.dim, c.hidden_dim, c.n_layers, c.n_heads, c.n_kv_heads, c.vocab_size, c.seq_len};
  for (int i = 0; i < 7; ++i) {
    if (vals[i] <= 0) throw Error(path + ": header " + names[i] + " = " + std::to_string(h[i]) + " must be positive");
  }
  if (c.dim % c.n_heads != 0) {
    throw Error(path + ": dim " + std::to_string(c.dim) + " is not a multiple of n_heads " + std::to_string(c.n_heads));
  }
  if (c.n_kv_heads > c.n_heads || c.n_heads % c.n_kv_heads != 0) {
    throw Error(path + ": n_heads " + std::to_string(c.n_heads) + " is not a multiple of n_kv_heads " +
                std::to_string(c.n_kv_heads));
  }
  if (c.head_size() % 2 != 0) throw Error(path + ": head size " + std::to_string(c.head_size()) + " is odd (RoPE needs pairs)");

  const int64_t dim = c.dim, hidden = c.hidden_dim, layers = c.n_layers, kv_dim = c.kv_dim();
  ck.sz_.tok = mul(path, c.vocab_size, dim);
  ck.sz_.wq = mul(path, dim, dim);
  ck.sz_.wkv = mul(path, kv_dim, dim);
  ck.sz_.ffn = mul(path, hidden, dim);
  ck.sz_.freq = mul(path, c.seq_len, c.head_size() / 2);
  // Region map of the weights, in floats from the end of the header.
  int64_t pos = 0;
  auto take = [&](int64_t n) {
    const int64_t at = pos;
    if (n > std::numeric_limits<int64_t>::max() / 8 - pos) throw Error(path + ": header sizes overflow");
    pos += n;
    return at;
  };
  Offsets& o = ck.off_;
  o.tok = take(ck.sz_.tok);
  o.rms_att = take(mul(path, layers, dim));
  o.wq = take(mul(path, layers, ck.sz_.wq));
  o.wk = take(mul(path, layers, ck.sz_.wkv));
  o.wv = take(mul(path, layers, ck.sz_.wkv));
  o.wo = take(mul(path, layers, ck.sz_.wq));
  o.rms_ffn = take(mul(path, layers, dim));
  o.w1 = take(mul(path, layers, ck.sz_.ffn));
  o.w2 = take(mul(path, layers, ck.sz_.ffn));
  o.w3 = take(mul(path, layers, ck.sz_.ffn));
  o.rms_final = take(dim);
  o.freq_real = take(ck.sz_.freq);
  o.freq_imag = take(ck.sz_.freq);
  o.wcls = c.shared_classifier ? o.tok : take(ck.sz_.tok);
  const int64_t expected = kHeaderBytes + pos * 4;
  if (static_cast<int64_t>(size) != expected) {
    throw Error(path + ": file is " + std::to_string(size) + " bytes but its header (dim " + std::to_string(c.dim) +
                ", hidden " + std::to_string(c.hidden_dim) + ", layers " + std::to_string(c.n_layers) + ", heads " +
                std::to_string(c.n_heads) + "/" + std::to_string(c.n_kv_heads) + ", vocab " +
                std::to_string(h[5]) + ", seq_len " + std::to_string(c.seq_len) + ") needs exactly " +
                std::to_string(expected));
  }
  return ck;
}

std::span<const float> Llama2cCheckpoint::at(int64_t offset, int64_t n) const {
  // The header is 28 bytes, so every array is 4-byte aligned in the page-aligned mapping.
  const auto* base = reinterpret_cast<const float*>(file_.data() + kHeaderBytes);
  return {base + offset, static_cast<size_t>(n)};
}

std::span<const float> Llama2cCheckpoint::layer_at(int64_t base, int64_t per_layer, int layer) const {
  if (layer < 0 || layer >= config_.n_layers) {
    throw Error(path_ + ": layer " + std::to_string(layer) + " out of range 0.." + std::to_string(config_.n_layers - 1));
  }
  return at(base + per_layer * layer, per_layer);
}

Llama2cTokenizer Llama2cTokenizer::read(const std::string& path, int32_t vocab_size) {
  MappedFile file = MappedFile::open(path);
  const uint8_t* p = file.data();
  const size_t size = file.size();
  size_t pos = 0;
  auto need = [&](size_t n, const std::string& what) {
    if (n > size - pos) {
      throw Error(path + ": " + what + " needs " + std::to_string(n) + " bytes at offset " + std::to_string(pos) +
                  ", the file has " + std::to_string(size - pos) + " left");
    }
  };
  Llama2cTokenizer tok;
  need(4, "max_token_length");
  std::memcpy(&tok.max_token_length, p, 4);
  pos = 4;
  if (tok.max_token_length <= 0) {
    throw Error(path + ": max_token_length " + std::to_string(tok.max_token_length) + " must be positive");
  }
  bool have_unk = false, have_bos = false, have_eos = false;
  while (vocab_size > 0 ? tok.size() < vocab_size : pos < size) {
    const std::string what = "token " + std::to_string(tok.size());
    need(8, what + " score and length");
    float score;
    int32_t len;
    std::memcpy(&score, p + pos, 4);
    std::memcpy(&len, p + pos + 4, 4);
    pos += 8;
    if (len < 0 || len > tok.max_token_length + 2) {  // +2: the newlines around <s> and </s>
      throw Error(path + ": " + what + " length " + std::to_string(len) + " is outside 0..max_token_length (" +
                  std::to_string(tok.max_token_length) + ")");
    }
    need(static_cast<size_t>(len), what + " bytes");
    const std::string raw(reinterpret_cast<const char*>(p + pos), static_cast<size_t>(len));
    pos += static_cast<size_t>(len);

    const int32_t id = tok.size();
    std::string piece = strip_special_newlines(raw);
    SpmTokenType type = SpmTokenType::kNormal;
    if (piece == "<unk>") {
      type = SpmTokenType::kUnknown;
      if (!have_unk) tok.unk_id = id;
      have_unk = true;
    } else if (piece == "<s>" || piece == "</s>") {
      type = SpmTokenType::kControl;
      bool& have = piece == "<s>" ? have_bos : have_eos;
      if (!have) (piece == "<s>" ? tok.bos_id : tok.eos_id) = id;
      have = true;
    } else if (piece.empty()) {
      type = SpmTokenType::kControl;
    } else if (is_byte_piece(piece)) {
      type = SpmTokenType::kByte;
    } else {
      piece = spaces_to_spm(piece);
    }
    tok.pieces.push_back(std::move(piece));
    tok.scores.push_back(score);
    tok.types.push_back(type);
  }
  if (pos != size) {
    throw Error(path + ": " + std::to_string(size - pos) + " bytes after the " + std::to_string(vocab_size) +
                " tokens the model's vocab_size asks for");
  }
  if (tok.pieces.empty()) throw Error(path + ": no tokens");
  return tok;
}

}  // namespace loom

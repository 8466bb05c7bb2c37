// llama.cpp's `tokenizer.ggml.pre` names (src/llama-vocab.cpp, llama_vocab::impl::load) and the
// pre-tokenizer steps each stands for (llm_tokenizer_bpe), as Loom's own PCRE2 expressions.
//
// llama.cpp runs most expressions through std::regex on a "collapsed" copy of the text (each
// non-ASCII character replaced by one byte for its class), and a few through hand-coded
// splitters. The expressions below are written so that PCRE2 on the real text cuts the same
// words; where llama.cpp's way of running an expression changes what it means, the expression
// here says what llama.cpp does, not what the model's tokenizer.json wrote:
//  - \p{Lu}, \p{Ll}, \p{Lt}, \p{Lm}, \p{Lo} all collapse to "any letter" (so Tiny Aya's and
//    Youtu's upper-then-lower runs are plain letter runs; Tekken and GPT-4o use lookaheads over
//    [^a-z] / [^A-Z], which only tell case apart in ASCII, on both sides);
//  - \d is ASCII (std::wregex), $ is the end of the piece (\z);
//  - an expression without \p{..} sees every non-ASCII space as U+000B, so a character range
//    that spans spaces (DeepSeek's U+0800..U+4E00) never matches them;
//  - Kimi K2 is hand-coded with its own Han ranges and one letter run (no case split);
//  - AFMoE's and Tiny Aya's digit groups are hand-coded (DigitGroupSplitter).
// Each list of steps is applied in order, every step splitting the previous step's pieces.
#include <string>
#include <vector>

#include "core/common/error.hpp"
#include "core/tokenizer/pre_tokenizer.hpp"

namespace loom {

namespace {

// 's 't 're 've 'm 'll 'd in either case (llama.cpp's spelling of (?i:...), which std::regex
// lacks).
const std::string kContractions = R"re((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]))re";
// The tail most modern expressions share: punctuation runs keep the line breaks after them,
// line breaks keep the spaces before them, and a space run leaves its last space to the word
// that follows.
const std::string kSpaceTail = R"re(|\s*[\r\n]+|\s+(?!\S)|\s+)re";

const std::string kLlama3 = kContractions +
                            R"re(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*)re" +
                            kSpaceTail;
const std::string kQwen2 = kContractions +
                           R"re(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*)re" +
                           kSpaceTail;
// Llama 3's with letters and marks together (Qwen 3.5).
const std::string kQwen35 =
    kContractions +
    R"re(|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*)re" + kSpaceTail;
// Punctuation and symbols as one class, and ASCII punctuation glued to the Latin word after it.
const std::string kDeepseek3 =
    R"re([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+)re"
    R"re(| ?[\p{P}\p{S}]+[\r\n]*)re" +
    kSpaceTail;
// Han, hiragana and katakana runs (DeepSeek V3, Hunyuan dense, Spark, Youtu).
const std::string kHanKana = R"re([\x{4E00}-\x{9FA5}\x{3040}-\x{309F}\x{30A0}-\x{30FF}]+)re";
// Han, "everything from U+0800 to U+4E00" and Hangul (DeepSeek LLM and Coder, as written),
// less the spaces in that range (U+1680, U+2000.., U+3000): llama.cpp has made them 0x0B first.
const std::string kDeepseekCjk =
    R"re((?:(?!\s)[\x{4E00}-\x{9FA5}\x{0800}-\x{4E00}\x{AC00}-\x{D7FF}])+)re";
// Words up to the next space or sentence punctuation (BLOOM, Poro, Viking, GPT-3 Finnish). The
// parentheses and | are inside the class, as in the original.
const std::string kUpToPunctuation =
    R"re( ?[^(\s|.,!?\x{2026}\x{3002}\x{FF0C}\x{3001}\x{0964}\x{06D4}\x{060C})]+)re";
// Letter runs where an upper-case run may only start a word: GPT-4o/Llama 4 and Tekken.
const std::string kCaseRuns =
    R"re([^\r\n\p{L}\p{N}]?(?:(?=\p{L})[^a-z])*(?:(?=\p{L})[^A-Z])+)re";
const std::string kCaseRuns2 =
    R"re([^\r\n\p{L}\p{N}]?(?:(?=\p{L})[^a-z])+(?:(?=\p{L})[^A-Z])*)re";
// Any run of letters and marks; what [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+
// means once llama.cpp collapses every letter class to one.
const std::string kLetterMarkRun = R"re([^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+)re";
// Kimi K2's Han (llama.cpp's unicode_cpt_is_han ranges, not Unicode's Script=Han).
const std::string kKimiHan =
    R"re([\x{4E00}-\x{9FFF}\x{3400}-\x{4DBF}\x{20000}-\x{2A6DF}\x{2A700}-\x{2EBEF})re"
    R"re(\x{F900}-\x{FAFF}\x{2F800}-\x{2FA1F}])re";

struct Family {
  std::vector<const char*> names;
  std::vector<std::string> steps;
  bool ignore_merges = false;
  bool add_bos = false;
  bool merges_optional = false;
  bool byte_level = true;
  bool whole_newline_runs = false;
};

const std::vector<Family>& families() {
  static const std::vector<Family> table = {
      // No name (an old conversion) or "default": llama.cpp's generic splitting.
      {{"default"},
       {R"re([\p{P}\$\+<=>\^~\|]+)re", kGpt2Pattern, R"re(\p{N}+)re", "[0-9][0-9][0-9]"}},
      {{"minicpm5"},
       {R"re(\p{N}{1,3})re",
        kContractions + R"re(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}+| ?[^\s\p{L}\p{N}]+[\r\n]*)re" +
            kSpaceTail},
       true},
      {{"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2",
        "jina-v5-nano"},
       {kLlama3},
       true,
       true},
      {{"deepseek-llm"},
       {R"re([\r\n])re",
        R"re(\s?[A-Za-z\x{B5}\x{C0}-\x{D6}\x{D8}-\x{F6}\x{F8}-\x{1BA}\x{1BC}-\x{1BF}\x{1C4}-\x{293})re"
        R"re(\x{295}-\x{2AF}\x{370}-\x{373}\x{376}\x{377}\x{37B}-\x{37D}\x{37F}\x{386}\x{388}-\x{38A})re"
        R"re(\x{38C}\x{38E}-\x{3A1}\x{3A3}-\x{3F5}\x{3F7}-\x{481}\x{48A}-\x{52F}\x{531}-\x{556})re"
        R"re(\x{10A0}-\x{10C5}\x{13A0}-\x{13F5}\x{13F8}-\x{13FD}\x{1C90}-\x{1CBA}\x{1CBD}-\x{1CBF})re"
        R"re(\x{1D00}-\x{1D2B}\x{1D6B}-\x{1D77}\x{1D79}-\x{1D9A}\x{1E00}-\x{1F15}\x{1F18}-\x{1F1D})re"
        R"re(\x{1F20}-\x{1F45}\x{1F48}-\x{1F4D}\x{1F50}-\x{1F57}\x{1F59}\x{1F5B}\x{1F5D})re"
        R"re(\x{1F5F}-\x{1F7D}\x{1F80}-\x{1FB4}\x{1FB6}-\x{1FBC}\x{1FBE}\x{1FC2}-\x{1FC4})re"
        R"re(\x{1FC6}-\x{1FCC}\x{1FD0}-\x{1FD3}\x{1FD6}-\x{1FDB}\x{1FE0}-\x{1FEC}\x{1FF2}-\x{1FF4})re"
        R"re(\x{1FF6}-\x{1FFC}\x{2102}\x{2107}\x{210A}-\x{2113}\x{2115}\x{2119}-\x{211D}\x{2124})re"
        R"re(\x{2126}\x{2128}\x{212A}-\x{212D}\x{212F}-\x{2134}\x{2139}\x{213C}-\x{213F})re"
        R"re(\x{2145}-\x{2149}\x{214E}\x{2183}\x{2184}\x{2C00}-\x{2C7B}\x{2C7E}-\x{2CE4})re"
        R"re(\x{2CEB}-\x{2CEE}\x{2CF2}\x{2CF3}\x{A640}-\x{A66D}\x{A680}-\x{A69B}\x{A722}-\x{A76F})re"
        R"re(\x{A771}-\x{A787}\x{A78B}-\x{A78E}\x{AB70}-\x{ABBF}\x{FB00}-\x{FB06}\x{FB13}-\x{FB17})re"
        R"re(\x{FF21}-\x{FF3A}\x{FF41}-\x{FF5A}\x{10400}-\x{1044F}\x{104B0}-\x{104D3})re"
        R"re(\x{104D8}-\x{104FB}\x{10C80}-\x{10CB2}\x{10CC0}-\x{10CF2}\x{118A0}-\x{118DF})re"
        R"re(\x{1E900}-\x{1E943}]+)re",
        // U+3000 (a space, so 0x0B by then) is left out of the original's U+3000..U+3002.
        R"re(\s?[!-/:-~\x{FF01}-\x{FF0F}\x{FF1A}-\x{FF5E}\x{2018}-\x{201F}\x{3001}-\x{3002}]+)re",
        R"re(\s+\z)re", kDeepseekCjk, R"re(\p{N}+)re"}},
      {{"deepseek-coder"},
       {R"re([\r\n])re", R"re(\s?\p{L}+)re", R"re(\s?\p{P}+)re", kDeepseekCjk, R"re(\p{N})re"}},
      {{"deepseek-v3", "hunyuan-dense", "hy_v4", "joyai-llm"},
       {R"re(\p{N}{1,3})re", kHanKana, kDeepseek3}},
      {{"spark2_5"},
       {R"re(\p{N}{1,3})re", kHanKana,
        R"re([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+)re"
        R"re(| ?[\p{P}\p{S}]+|[\r\n]|\s+(?!\S)|\s+)re",
        R"re(\p{N})re"}},
      {{"youtu"},
       {R"re([\x{AC00}-\x{D7A3}\x{3131}-\x{318E}]+)re"
        R"re(|[\x{FF01}\x{2026}\x{201C}\x{201D}\x{2018}\x{2019}\x{2014}\x{FF1A}\x{FF1B}\x{FF0C})re"
        R"re(\x{3001}-\x{303F}\x{FE30}-\x{FE4F}]+|[\x{3105}-\x{312F}]+|)re" +
            kHanKana,
        kLetterMarkRun + kContractions + "?" + R"re(|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*)re" +
            kSpaceTail},
       true},
      {{"falcon"}, {R"re([\p{P}\$\+<=>\^~\|`]+)re", kGpt2Pattern, "[0-9][0-9][0-9]"}},
      {{"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b",
        "mellum2"},
       {R"re(\p{N})re", kGpt2Pattern}},
      {{"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0",
        "mellum", "modern-bert", "jina-v1-en", "jina-v2-code", "roberta-bpe", "mpt", "olmo",
        "jais", "trillion", "granite-docling", "exaone4"},
       {kGpt2Pattern}},
      {{"jais-2"},
       {kContractions +
        R"re(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+)re"
        R"re(|\s{512}(?!\S)|\s{256}(?!\S)|\s{128}(?!\S)|\s{64}(?!\S)|\s{32}(?!\S)|\s{16}(?!\S))re"
        R"re(|\s{8}(?!\S)|\s{4}(?!\S)|\s{1,2}(?!\S)|\s{1})re"}},
      {{"qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "stablelm2", "megrez", "hunyuan",
        "grok-2", "solar-open"},
       {kQwen2}},
      {{"qwen35"}, {kQwen35}},
      {{"dbrx", "smaug-bpe", "chatglm-bpe"}, {kLlama3}},
      {{"glm4", "glm5"}, {kLlama3}, true},
      {{"poro-chat", "bloom", "gpt3-finnish"}, {kUpToPunctuation}},
      {{"viking"}, {kUpToPunctuation, R"re(\p{N})re"}},
      {{"tekken"},
       {kCaseRuns + "|" + kCaseRuns2 + R"re(|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*)re" + kSpaceTail},
       true,
       true},
      {{"exaone-moe"},
       {kContractions +
        R"re(|[^\r\n\p{L}\p{N}]?(?:\p{L}\p{M}*(?: \p{L}\p{M}*)*)+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]?)re"
        R"re(|\s*[\r\n]|\s+(?!\S)|\s+)re"}},
      {{"chameleon"},
       {R"re(<sentinel:[0-9]+>)re", R"re(IMGIMG[A-I]{1,4}Z)re", "[\\t\\n]|    |  ", R"re(\p{N})re",
        R"re([\p{P}!-/:-@\[-`{-~])re", kGpt2Pattern},
       false,
       true},
      {{"gpt-4o", "llama4", "kanana2", "talkie", "minimax-m2"},
       {kCaseRuns + kContractions + "?|" + kCaseRuns2 + kContractions + "?" +
        R"re(|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*)re" + kSpaceTail}},
      {{"granite-embed-multi-97m"},
       {R"re([^\r\n\p{L}\p{N}]?(?:(?=[\p{L}\p{M}])[^a-z])*(?:(?=[\p{L}\p{M}])[^A-Z])+)re" +
        kContractions + "?" +
        R"re(|[^\r\n\p{L}\p{N}]?(?:(?=[\p{L}\p{M}])[^a-z])+(?:(?=[\p{L}\p{M}])[^A-Z])*)re" +
        kContractions + "?" + R"re(|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*)re" + kSpaceTail},
       true},
      {{"tiny_aya", "cohere2moe"},
       {kDigitGroupsStep, kLetterMarkRun + kContractions + "?" +
                              R"re(|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*)re" + kSpaceTail}},
      // Digit runs, then a cut before every group of three ASCII digits counted from the right
      // (an empty match, a lookahead alone).
      {{"superbpe"}, {R"re(\p{N}+)re", R"re((?=(?:[0-9]{3})+(?![0-9])))re"}},
      {{"bailingmoe", "bailingmoe2", "llada-moe"},
       {R"re('(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N})re"
        R"re(| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)re"}},
      {{"seed-coder"},
       {kContractions + R"re(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}\r\n]+)re" +
        kSpaceTail}},
      {{"kimi-k2"},
       {kKimiHan + "+|[^\\r\\n\\p{L}\\p{N}]?(?:(?!" + kKimiHan + ")\\p{L})+" + kContractions +
        "?" + R"re(|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*)re" + kSpaceTail},
       false,
       false,
       true},
      {{"ufakzeka"},
       {R"re([^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*)re" + kSpaceTail}},
      {{"afmoe"},
       {kDigitGroupsStep,
        // U+8C48 (not U+F900) starts the third range: llama.cpp's source holds the NFC form.
        R"re([\x{4E00}-\x{9FFF}\x{3400}-\x{4DBF}\x{8C48}-\x{FAFF}\x{3040}-\x{309F}\x{30A0}-\x{30FF})re"
        R"re(\x{FF65}-\x{FF9F}\x{2F00}-\x{2FDF}\x{0E40}-\x{0E7F}\x{0E80}-\x{0EFF}\x{1780}-\x{17FF})re"
        R"re(\x{1000}-\x{109F}\x{AA60}-\x{AA7F}\x{A9E0}-\x{A9FF}\x{AC00}-\x{D7AF}\x{1100}-\x{11FF}]+)re",
        kDeepseek3}},
      {{"laguna"}, {R"re([^\n]+|\n+)re", kQwen2}},
      // SentencePiece-style BPE (raw UTF-8, U+2581 for spaces): only line breaks cut words.
      {{"gemma4", "granite-embed-multi-311m"},
       {R"re([^\n]+|\n+)re"},
       false,
       false,
       false,
       false,
       true},
      {{"sarvam-moe"}, {R"re([^\n]+|\n+)re"}, false, false, false, false},
  };
  return table;
}

// Names llama.cpp knows that Loom does not run: jina-embeddings-v2-base-zh's "whitespace"
// tokenizer (its own session in llama.cpp, whitespace-separated words looked up whole).
constexpr const char* kNotRun[] = {"whitespace"};

}  // namespace

std::vector<std::string> known_gguf_pre_tokenizers() {
  std::vector<std::string> names;
  for (const Family& f : families()) names.insert(names.end(), f.names.begin(), f.names.end());
  return names;
}

PreTokenizerSpec pre_tokenizer_for_gguf(const std::string& pre) {
  for (const Family& f : families()) {
    for (const char* name : f.names) {
      if (pre != name) continue;
      PreTokenizerSpec spec;
      spec.patterns = f.steps;
      spec.ignore_merges = f.ignore_merges;
      spec.add_bos = f.add_bos;
      spec.merges_optional = f.merges_optional;
      spec.byte_level = f.byte_level;
      spec.whole_newline_runs = f.whole_newline_runs;
      return spec;
    }
  }
  for (const char* name : kNotRun) {
    if (pre == name) {
      throw Error("tokenizer.ggml.pre '" + pre +
                      "' is llama.cpp's whitespace-word tokenizer, which Loom does not run",
                  LOOM_ERR_UNSUPPORTED);
    }
  }
  std::string known;
  for (const std::string& name : known_gguf_pre_tokenizers()) {
    known += (known.empty() ? "" : ", ") + name;
  }
  throw Error("tokenizer.ggml.pre '" + pre + "' is not supported (known: " + known + ")",
              LOOM_ERR_UNSUPPORTED);
}

}  // namespace loom

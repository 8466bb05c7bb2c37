// unicode_normalize() over utf8proc_map().
#include "core/tokenizer/unicode_normalize.hpp"

#include <utf8proc.h>

#include <cstdint>
#include <cstdlib>

#include "core/common/error.hpp"

namespace loom {

NormalForm normal_form_from_name(std::string_view name) {
  if (name == "NFC") return NormalForm::kNfc;
  if (name == "NFD") return NormalForm::kNfd;
  if (name == "NFKC") return NormalForm::kNfkc;
  if (name == "NFKD") return NormalForm::kNfkd;
  throw Error(
      "normalizer '" + std::string(name) + "' is not supported (supported: NFC, NFD, NFKC, NFKD)",
      LOOM_ERR_UNSUPPORTED);
}

std::string unicode_normalize(std::string_view s, NormalForm form) {
  if (form == NormalForm::kNone || s.empty()) return std::string(s);
  int options = UTF8PROC_STABLE;
  switch (form) {
    case NormalForm::kNfc:
      options |= UTF8PROC_COMPOSE;
      break;
    case NormalForm::kNfd:
      options |= UTF8PROC_DECOMPOSE;
      break;
    case NormalForm::kNfkc:
      options |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT;
      break;
    case NormalForm::kNfkd:
      options |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT;
      break;
    case NormalForm::kNone:
      break;
  }
  // ASCII is already in every normal form: skip the copy through utf8proc.
  bool ascii = true;
  for (const char c : s) ascii = ascii && static_cast<uint8_t>(c) < 0x80;
  if (ascii) return std::string(s);
  utf8proc_uint8_t* out = nullptr;
  const utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()),
                                          static_cast<utf8proc_ssize_t>(s.size()), &out,
                                          static_cast<utf8proc_option_t>(options));
  if (n < 0) {
    throw Error(std::string("unicode normalisation failed: ") + utf8proc_errmsg(n));
  }
  std::string result(reinterpret_cast<const char*>(out), static_cast<size_t>(n));
  std::free(out);
  return result;
}

}  // namespace loom

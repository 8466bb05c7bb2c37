#include "core/executor/prequantized_format.hpp"

#include "core/common/error.hpp"

namespace loom {

std::optional<std::string> plugin_for_prequantized(const GgufFile& file) {
  const GgufValue* v = file.find("loom.quantization.format");
  if (v == nullptr) return std::nullopt;
  const std::string& format = v->as_string();
  if (format == "int8") return "int8";
  if (format == "int4") return "int4";
  if (format == "fp8_e4m3") return "fp8";
  throw Error(file.path() + ": loom.quantization.format \"" + format +
              "\" is not a format this Loom reads (int8, int4, fp8_e4m3)");
}

void check_prequantized_plugin(const GgufFile& file, const std::string& plugin) {
  const std::optional<std::string> needed = plugin_for_prequantized(file);
  if (!needed || *needed == plugin) return;
  throw Error(file.path() + " holds weights pre-quantized by loom-convert in format \"" +
              file.find("loom.quantization.format")->as_string() + "\": they need [quantization] plugin = \"" +
              *needed + "\", not \"" + plugin + "\"");
}

}  // namespace loom

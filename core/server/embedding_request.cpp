#include "core/server/embedding_request.hpp"

#include <bit>
#include <cstring>

#include "core/engine/embedding_worker.hpp"
#include "core/server/api_error.hpp"
#include "core/server/request_fields.hpp"

namespace loom {
namespace {

// One input: a string (tokenized) or a list of token ids.
std::vector<int32_t> read_input(const Json& v, const std::string& field, const EmbeddingWorker& model) {
  if (v.is_string()) return model.tokenize(v.get<std::string>());
  if (!v.is_array() || v.empty() || !v[0].is_number())
    throw bad_field("input", "'" + field + "' must be a string or a non-empty list of token ids");
  std::vector<int32_t> ids;
  for (size_t i = 0; i < v.size(); ++i)
    ids.push_back(static_cast<int32_t>(
        as_int(v[i], field + "[" + std::to_string(i) + "]", 0, int64_t{model.vocab_size()} - 1)));
  return ids;
}

}  // namespace

EmbeddingRequest parse_embedding_request(const Json& body, const EmbeddingWorker& model) {
  check_request_fields(body, RequestRoute::kEmbeddings);
  EmbeddingRequest r;
  r.model = read_string(body, "model", "model");
  r.user = read_string(body, "user", "user").value_or("");
  const auto format = read_string(body, "encoding_format", "encoding_format").value_or("float");
  if (format != "float" && format != "base64")
    throw bad_field("encoding_format", "'encoding_format' must be \"float\" or \"base64\", got \"" + format + "\"");
  r.base64 = format == "base64";
  if (auto dims = read_int(body, "dimensions", "dimensions", 1, INT32_MAX); dims && *dims != model.dim())
    throw bad_field("dimensions", "'dimensions' = " + std::to_string(*dims) + " is not supported: model '" +
                                      model.name() + "' gives " + std::to_string(model.dim()) +
                                      "-dimensional embeddings and does not truncate them");
  const auto it = body.find("input");
  if (it == body.end() || it->is_null()) throw bad_field("input", "'input' is required");
  const Json& in = *it;
  if (in.is_string() || (in.is_array() && !in.empty() && in[0].is_number())) {
    r.inputs.push_back(read_input(in, "input", model));
  } else if (in.is_array() && !in.empty()) {
    for (size_t i = 0; i < in.size(); ++i) r.inputs.push_back(read_input(in[i], "input[" + std::to_string(i) + "]", model));
  } else {
    throw bad_field("input", "'input' must be a string, a list of strings, a list of token ids or a list of such "
                             "lists, and not empty");
  }
  for (size_t i = 0; i < r.inputs.size(); ++i) {
    const auto n = static_cast<int64_t>(r.inputs[i].size());
    if (n == 0) throw bad_field("input", "input " + std::to_string(i) + " has no tokens");
    if (n > model.max_tokens())
      throw bad_field("input", "input " + std::to_string(i) + " has " + std::to_string(n) + " tokens; model '" +
                                   model.name() + "' takes at most " + std::to_string(model.max_tokens()));
  }
  return r;
}

std::string base64_encode(const void* data, size_t size) {
  static constexpr char kDigits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const auto* p = static_cast<const unsigned char*>(data);
  std::string out;
  out.reserve((size + 2) / 3 * 4);
  for (size_t i = 0; i < size; i += 3) {
    const uint32_t n = (uint32_t{p[i]} << 16) | (i + 1 < size ? uint32_t{p[i + 1]} << 8 : 0) |
                       (i + 2 < size ? uint32_t{p[i + 2]} : 0);
    out += kDigits[(n >> 18) & 63];
    out += kDigits[(n >> 12) & 63];
    out += i + 1 < size ? kDigits[(n >> 6) & 63] : '=';
    out += i + 2 < size ? kDigits[n & 63] : '=';
  }
  return out;
}

Json embedding_response(const EmbeddingRequest& request, const std::vector<float>& vectors, int32_t dim,
                        const std::string& model_name) {
  static_assert(std::endian::native == std::endian::little, "base64 embeddings are little-endian f32 bytes");
  Json data = Json::array();
  int64_t tokens = 0;
  for (size_t i = 0; i < request.inputs.size(); ++i) {
    const float* v = vectors.data() + i * static_cast<size_t>(dim);
    Json item{{"object", "embedding"}, {"index", i}};
    if (request.base64) {
      item["embedding"] = base64_encode(v, sizeof(float) * static_cast<size_t>(dim));
    } else {
      item["embedding"] = std::vector<float>(v, v + dim);
    }
    data.push_back(std::move(item));
    tokens += static_cast<int64_t>(request.inputs[i].size());
  }
  return Json{{"object", "list"},
              {"data", std::move(data)},
              {"model", model_name},
              {"usage", {{"prompt_tokens", tokens}, {"total_tokens", tokens}}}};
}

}  // namespace loom

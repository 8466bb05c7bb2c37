#include "core/config/toml_json.hpp"

#include <charconv>
#include <cmath>
#include <sstream>

namespace loom::config_detail {
namespace {

template <typename T>
std::string spelled(const T& value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

}  // namespace

nlohmann::json toml_to_json(const toml::node& node, const std::string& key_path,
                            Problems& problems) {
  switch (node.type()) {
    case toml::node_type::table: {
      nlohmann::json out = nlohmann::json::object();
      for (auto&& [key, value] : *node.as_table()) {
        out[std::string(key.str())] = toml_to_json(value, join_key(key_path, key.str()), problems);
      }
      return out;
    }
    case toml::node_type::array: {
      nlohmann::json out = nlohmann::json::array();
      const toml::array& array = *node.as_array();
      for (size_t i = 0; i < array.size(); ++i) {
        out.push_back(toml_to_json(array[i], key_path + "[" + std::to_string(i) + "]", problems));
      }
      return out;
    }
    case toml::node_type::string:
      return node.as_string()->get();
    case toml::node_type::integer:
      return node.as_integer()->get();
    case toml::node_type::floating_point: {
      const double value = node.as_floating_point()->get();
      if (!std::isfinite(value)) {
        problems.add(pos_of(node.source()), key_path,
                     "inf and nan cannot be passed to a plugin (its config is JSON)");
        return nullptr;
      }
      return value;
    }
    case toml::node_type::boolean:
      return node.as_boolean()->get();
    case toml::node_type::date:
      return spelled(node.as_date()->get());
    case toml::node_type::time:
      return spelled(node.as_time()->get());
    case toml::node_type::date_time:
      return spelled(node.as_date_time()->get());
    case toml::node_type::none:
      break;
  }
  return nullptr;
}

std::string toml_string(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out = "\"";
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (u < 0x20 || u == 0x7f) {
          out += "\\u00";
          out += kHex[u >> 4];
          out += kHex[u & 0xf];
        } else {
          out += c;  // UTF-8 passes through unchanged
        }
    }
  }
  out += '"';
  return out;
}

std::string toml_key(std::string_view key) {
  bool bare = !key.empty();
  for (char c : key) {
    bare = bare && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-');
  }
  return bare ? std::string(key) : toml_string(key);
}

std::string toml_inline_value(const nlohmann::json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::object: {
      if (value.empty()) return "{}";
      std::string out = "{ ";
      bool first = true;
      for (auto it = value.begin(); it != value.end(); ++it) {
        out += (first ? "" : ", ") + toml_key(it.key()) + " = " + toml_inline_value(it.value());
        first = false;
      }
      return out + " }";
    }
    case nlohmann::json::value_t::array: {
      std::string out = "[";
      bool first = true;
      for (const auto& item : value) {
        out += (first ? "" : ", ") + toml_inline_value(item);
        first = false;
      }
      return out + "]";
    }
    case nlohmann::json::value_t::string:
      return toml_string(value.get<std::string>());
    case nlohmann::json::value_t::boolean:
      return value.get<bool>() ? "true" : "false";
    case nlohmann::json::value_t::number_integer:
      return std::to_string(value.get<int64_t>());
    case nlohmann::json::value_t::number_unsigned:
      return std::to_string(value.get<uint64_t>());
    case nlohmann::json::value_t::number_float: {
      // Shortest spelling that reads back to the same double; TOML needs a '.' or an exponent.
      char buffer[64];
      const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value.get<double>());
      std::string out(buffer, result.ptr);
      if (out.find_first_of(".e") == std::string::npos) out += ".0";
      return out;
    }
    case nlohmann::json::value_t::null:
    case nlohmann::json::value_t::binary:
    case nlohmann::json::value_t::discarded:
      break;
  }
  // Only reachable for JSON that did not come from TOML; a TOML string keeps the text readable.
  return toml_string(value.dump());
}

}  // namespace loom::config_detail

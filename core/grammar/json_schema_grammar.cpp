#include "core/grammar/json_schema_grammar.hpp"

#include <algorithm>
#include <cctype>
#include <optional>
#include <cmath>
#include <map>
#include <set>
#include <vector>

#include "core/common/error.hpp"
#include "core/grammar/gbnf_text.hpp"
#include "core/grammar/grammar.hpp"
#include "core/grammar/integer_range_gbnf.hpp"
#include "core/grammar/json_schema_merge.hpp"
#include "core/grammar/number_range_gbnf.hpp"
#include "core/grammar/regex_grammar.hpp"

namespace loom {
namespace {

using OJson = nlohmann::ordered_json;

// The shared rules every compiled schema may use.
std::string base_rules() {
  // One space, or a line break and an indent (as pretty-printers write it), or nothing.
  return "json-ws ::= ([ \\t] | \"\\n\" [ \\t]{0," + std::to_string(kMaxJsonSpace) +
         "})?\n"
         "json-char ::= [^\"\\\\\\x00-\\x1F] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4})\n"
         "json-string ::= \"\\\"\" json-char* \"\\\"\"\n"
         "json-integer ::= \"-\"? (\"0\" | [1-9] [0-9]{0,17})\n"
         "json-number ::= json-integer (\".\" [0-9]{1,18})? ([eE] [-+]? [0-9]{1,3})?\n"
         "json-boolean ::= \"true\" | \"false\"\n"
         "json-null ::= \"null\"\n"
         "json-value ::= json-object | json-array | json-string | json-number | json-boolean | json-null\n"
         "json-member ::= json-string json-ws \":\" json-ws json-value json-ws\n"
         "json-object ::= \"{\" json-ws (json-member (\",\" json-ws json-member)*)? \"}\"\n"
         "json-array ::= \"[\" json-ws (json-value json-ws (\",\" json-ws json-value json-ws)*)? \"]\"\n"
         "json-date ::= [0-9]{4} \"-\" (\"0\" [1-9] | \"1\" [0-2]) \"-\" (\"0\" [1-9] | [12] [0-9] | \"3\" [01])\n"
         "json-time ::= ([01] [0-9] | \"2\" [0-3]) \":\" [0-5] [0-9] \":\" [0-5] [0-9] (\".\" [0-9]{1,9})? "
         "(\"Z\" | [+-] ([01] [0-9] | \"2\" [0-3]) \":\" [0-5] [0-9])\n"
         "json-hex ::= [0-9a-fA-F]\n"
         "json-uuid ::= json-hex{8} \"-\" json-hex{4} \"-\" json-hex{4} \"-\" json-hex{4} \"-\" json-hex{12}\n"
         "json-email ::= [a-zA-Z0-9._%+-]{1,64} \"@\" [a-zA-Z0-9-]{1,63} (\".\" [a-zA-Z0-9-]{1,63}){1,4}\n";
}

const std::set<std::string> kKeywords = {"type",     "properties", "required",  "additionalProperties",
                                         "enum",     "const",      "items",     "minItems",
                                         "maxItems", "anyOf",      "oneOf",     "allOf",
                                         "$ref",     "format",     "pattern",   "minLength",
                                         "maxLength", "minimum",   "maximum",   "exclusiveMinimum",
                                         "exclusiveMaximum", "prefixItems"};

class SchemaCompiler {
 public:
  SchemaCompiler(const OJson& root, std::string prefix) : root_(root), prefix_(std::move(prefix)) {}

  JsonSchemaRules compile_root() {
    JsonSchemaRules out;
    out.expression = compile(root_, "root", "");
    for (const auto& [name, body] : rules_) out.rules += name + " ::= " + body + "\n";
    return out;
  }

 private:
  [[noreturn]] static void fail(const std::string& path, const std::string& what) {
    throw Error((path.empty() ? std::string("schema") : path) + ": " + what);
  }

  static std::string join(const std::string& path, const std::string& key) { return path.empty() ? key : path + "." + key; }

  // A rule name made of the letters GBNF names allow, unique.
  std::string new_rule(const std::string& hint) {
    std::string name = prefix_ + "s";
    for (char c : hint) name += std::isalnum(static_cast<unsigned char>(c)) ? c : '-';
    if (name.size() > 48) name.resize(48);
    return name + "-" + std::to_string(++counter_);
  }

  std::string define(const std::string& hint, const std::string& body) {
    const std::string name = new_rule(hint);
    rules_.emplace_back(name, body);
    return name;
  }

  static std::string literal_json(const OJson& v) { return gbnf_literal(v.dump()); }

  std::string compile(const OJson& s, const std::string& hint, const std::string& path) {
    if (s.is_boolean()) {
      if (!s.get<bool>()) fail(path, "the schema 'false' matches no value");
      return "json-value";
    }
    if (!s.is_object()) fail(path, "a schema must be an object or a boolean");
    for (const auto& [key, _] : s.items()) {
      if (!kKeywords.count(key) && !is_schema_annotation(key)) fail(path, "unsupported JSON Schema keyword '" + key + "'");
    }
    // allOf, and anyOf/oneOf/$ref with keywords beside them, are merged into schemas first.
    if (needs_combination_rewrite(s)) return compile(rewrite_schema_combinations(s, root_, path), hint, path);
    if (auto it = s.find("$ref"); it != s.end()) return compile_ref(*it, path);
    if (auto it = s.find("const"); it != s.end()) return literal_json(*it);
    if (auto it = s.find("enum"); it != s.end()) {
      if (!it->is_array() || it->empty()) fail(join(path, "enum"), "must be a non-empty array");
      std::string out = "(";
      for (size_t i = 0; i < it->size(); ++i) out += (i ? " | " : "") + literal_json((*it)[i]);
      return out + ")";
    }
    for (const char* key : {"anyOf", "oneOf"}) {
      const auto it = s.find(key);
      if (it == s.end()) continue;
      const std::string p = join(path, key);
      if (!it->is_array() || it->empty()) fail(p, "must be a non-empty array");
      std::string out = "(";
      for (size_t i = 0; i < it->size(); ++i) {
        out += (i ? " | " : "") + compile((*it)[i], hint + "-" + std::to_string(i), p + "[" + std::to_string(i) + "]");
      }
      return out + ")";
    }
    const auto type = s.find("type");
    if (type == s.end()) {
      if (s.contains("properties") || s.contains("additionalProperties") || s.contains("required")) {
        return compile_typed(s, "object", hint, path);
      }
      if (s.contains("items") || s.contains("prefixItems") || s.contains("minItems") || s.contains("maxItems")) {
        return compile_typed(s, "array", hint, path);
      }
      if (s.contains("format") || s.contains("pattern") || s.contains("minLength") || s.contains("maxLength")) {
        return compile_typed(s, "string", hint, path);
      }
      if (s.contains("minimum") || s.contains("maximum") || s.contains("exclusiveMinimum") || s.contains("exclusiveMaximum")) {
        return compile_typed(s, "number", hint, path);
      }
      return "json-value";
    }
    if (type->is_string()) return compile_typed(s, type->get<std::string>(), hint, path);
    if (!type->is_array() || type->empty()) fail(join(path, "type"), "must be a type name or a non-empty array of them");
    std::string out = "(";
    for (size_t i = 0; i < type->size(); ++i) {
      if (!(*type)[i].is_string()) fail(join(path, "type"), "must hold type names");
      out += (i ? " | " : "") + compile_typed(s, (*type)[i].get<std::string>(), hint, path);
    }
    return out + ")";
  }

  std::string compile_ref(const OJson& ref, const std::string& path) {
    if (!ref.is_string()) fail(join(path, "$ref"), "must be a string");
    const std::string r = ref.get<std::string>();
    if (auto it = refs_.find(r); it != refs_.end()) return it->second;
    if (r.empty() || r[0] != '#') fail(join(path, "$ref"), "only references inside the schema ('#...') are supported, got '" + r + "'");
    const OJson* target = nullptr;
    try {
      const OJson::json_pointer ptr(r.substr(1));
      if (root_.contains(ptr)) target = &root_.at(ptr);
    } catch (const std::exception&) {
    }
    if (!target) fail(join(path, "$ref"), "'" + r + "' does not point into the schema");
    // Named before compiled, so a recursive schema refers to itself.
    const std::string name = new_rule("ref" + r.substr(1));
    refs_.emplace(r, name);
    const size_t slot = rules_.size();
    rules_.emplace_back(name, "");
    const std::string body = compile(*target, "ref" + r.substr(1), r);
    rules_[slot].second = body;
    return name;
  }

  std::string compile_typed(const OJson& s, const std::string& type, const std::string& hint, const std::string& path) {
    if (type == "string") return compile_string(s, hint, path);
    if (type == "integer") return compile_integer(s, path);
    if (type == "number") return compile_number(s, path);
    if (type == "boolean") return "json-boolean";
    if (type == "null") return "json-null";
    if (type == "object") return compile_object(s, hint, path);
    if (type == "array") return compile_array(s, hint, path);
    fail(join(path, "type"), "unknown type '" + type + "'");
  }

  static std::optional<int64_t> read_count(const OJson& s, const char* key, const std::string& path) {
    const auto it = s.find(key);
    if (it == s.end()) return std::nullopt;
    if (!it->is_number_integer() || it->get<int64_t>() < 0) fail(join(path, key), "must be a non-negative integer");
    return it->get<int64_t>();
  }

  std::string compile_string(const OJson& s, const std::string& hint, const std::string& path) {
    const auto min = read_count(s, "minLength", path);
    const auto max = read_count(s, "maxLength", path);
    if (min && max && *max < *min) fail(join(path, "maxLength"), "is below minLength");
    if (auto f = s.find("format"); f != s.end()) {
      if (min || max || s.contains("pattern")) fail(join(path, "format"), "format together with pattern or lengths is not supported");
      static const std::map<std::string, std::string> kFormats = {
          {"date", "json-date"}, {"time", "json-time"}, {"date-time", "json-date \"T\" json-time"},
          {"uuid", "json-uuid"}, {"email", "json-email"}};
      const std::string name = f->is_string() ? f->get<std::string>() : "";
      const auto it = kFormats.find(name);
      if (it == kFormats.end()) fail(join(path, "format"), "unsupported string format '" + (f->is_string() ? name : f->dump()) + "'");
      return "\"\\\"\" " + it->second + " \"\\\"\"";
    }
    if (auto p = s.find("pattern"); p != s.end()) {
      if (min || max) fail(join(path, "pattern"), "pattern together with minLength/maxLength is not supported");
      if (!p->is_string()) fail(join(path, "pattern"), "must be a string");
      RegexOptions opt;
      opt.json_string = true;
      opt.unanchored = true;
      std::string expr;
      try {
        expr = regex_to_gbnf_expression(p->get<std::string>(), opt);
      } catch (const Error& e) {
        fail(join(path, "pattern"), e.what());
      }
      return define(hint + "-pattern", "\"\\\"\" " + expr + " \"\\\"\"");
    }
    if (!min && !max) return "json-string";
    const int64_t lo = min.value_or(0);
    if (lo > kMaxRepetition || max.value_or(0) > kMaxRepetition) {
      fail(join(path, max ? "maxLength" : "minLength"), "above " + std::to_string(kMaxRepetition) + " is not supported");
    }
    const std::string bounds = "{" + std::to_string(lo) + "," + (max ? std::to_string(*max) : "") + "}";
    return "\"\\\"\" json-char" + bounds + " \"\\\"\"";
  }

  std::string compile_integer(const OJson& s, const std::string& path) {
    auto bound = [&](const char* key, bool lower, bool exclusive) -> std::optional<int64_t> {
      const auto it = s.find(key);
      if (it == s.end()) return std::nullopt;
      if (!it->is_number()) fail(join(path, key), "must be a number");
      double v = it->get<double>();
      if (std::fabs(v) > 1e18) return std::nullopt;
      v = lower ? std::ceil(v) : std::floor(v);
      auto i = static_cast<int64_t>(v);
      if (exclusive && static_cast<double>(i) == it->get<double>()) i += lower ? 1 : -1;
      return i;
    };
    std::optional<int64_t> lo = bound("minimum", true, false), hi = bound("maximum", false, false);
    if (auto x = bound("exclusiveMinimum", true, true)) lo = lo ? std::max(*lo, *x) : *x;
    if (auto x = bound("exclusiveMaximum", false, true)) hi = hi ? std::min(*hi, *x) : *x;
    if (!lo && !hi) return "json-integer";
    if (lo && hi && *lo > *hi) fail(path, "the integer bounds leave no value");
    return "(" + integer_range_gbnf(lo, hi) + ")";
  }

  // Bounds read from the schema's own number text, so 0.1 is a tenth (number_range_gbnf.hpp).
  std::string compile_number(const OJson& s, const std::string& path) {
    std::optional<DecimalBound> lo, hi;
    auto read = [&](const char* key, bool exclusive, std::optional<DecimalBound>& into, bool lower) {
      const auto it = s.find(key);
      if (it == s.end()) return;
      if (!it->is_number()) fail(join(path, key), "must be a number");
      // Beyond what an 18-digit number can reach, on the open side: no bound at all.
      const double v = it->get<double>();
      if (std::fabs(v) >= 1e18 && (lower ? v < 0 : v > 0)) return;
      DecimalBound b;
      try {
        b = decimal_bound(it->dump(), exclusive);
      } catch (const Error& e) {
        fail(join(path, key), e.what());
      }
      // Two lower (or upper) bounds: the tighter one counts.
      if (!into || tighter_bound(b, *into, lower)) into = b;
    };
    read("minimum", false, lo, true);
    read("exclusiveMinimum", true, lo, true);
    read("maximum", false, hi, false);
    read("exclusiveMaximum", true, hi, false);
    if (!lo && !hi) return "json-number";
    try {
      return "(" + number_range_gbnf(lo, hi) + ")";
    } catch (const Error& e) {
      fail(path, e.what());
    }
  }

  std::string compile_object(const OJson& s, const std::string& hint, const std::string& path) {
    struct Prop {
      std::string member;
      bool required;
    };
    std::vector<Prop> props;
    std::set<std::string> required;
    if (auto r = s.find("required"); r != s.end()) {
      if (!r->is_array()) fail(join(path, "required"), "must be an array of property names");
      for (const auto& k : *r) {
        if (!k.is_string()) fail(join(path, "required"), "must be an array of property names");
        required.insert(k.get<std::string>());
      }
    }
    std::set<std::string> known;
    if (auto p = s.find("properties"); p != s.end()) {
      if (!p->is_object()) fail(join(path, "properties"), "must be an object");
      for (const auto& [key, sub] : p->items()) {
        known.insert(key);
        const std::string value = compile(sub, hint + "-" + key, join(join(path, "properties"), key));
        props.push_back({literal_json(OJson(key)) + " json-ws \":\" json-ws " + value + " json-ws", required.count(key) > 0});
      }
    }
    for (const std::string& k : required) {
      if (!known.count(k)) fail(join(path, "required"), "'" + k + "' is required but not in properties");
    }
    std::string extra;  // one additional member, when allowed
    if (auto a = s.find("additionalProperties"); a == s.end() || (a->is_boolean() && a->get<bool>())) {
      extra = "json-member";
    } else if (!a->is_boolean()) {
      extra = "json-string json-ws \":\" json-ws " + compile(*a, hint + "-extra", join(path, "additionalProperties")) + " json-ws";
    }
    // Properties come in schema order. tail(k): some member was written, k.. may follow, each
    // after a comma; head(k): none yet, so the first one written has no comma.
    std::string tail_extra = extra.empty() ? "" : "(\",\" json-ws " + extra + ")*";
    std::vector<std::string> tails(props.size() + 1);
    tails[props.size()] = tail_extra;
    for (size_t k = props.size(); k-- > 0;) {
      const std::string item = "\",\" json-ws " + props[k].member;
      tails[k] = (props[k].required ? item : "(" + item + ")?") + (tails[k + 1].empty() ? "" : " " + tails[k + 1]);
    }
    std::string head = extra.empty() ? "" : "(" + extra + " " + tail_extra + ")?";
    for (size_t k = props.size(); k-- > 0;) {
      const std::string with = props[k].member + (tails[k + 1].empty() ? "" : " " + tails[k + 1]);
      if (props[k].required) {
        head = with;
      } else {
        head = head.empty() ? "(" + with + ")?" : "(" + with + " | " + define(hint + "-rest", head) + ")";
      }
    }
    return define(hint, "\"{\" json-ws " + (head.empty() ? "" : head + " ") + "\"}\"");
  }

  std::string compile_array(const OJson& s, const std::string& hint, const std::string& path) {
    for (const char* k : {"uniqueItems", "contains"}) {
      if (s.contains(k)) fail(path, std::string("unsupported JSON Schema keyword '") + k + "'");
    }
    const auto min = read_count(s, "minItems", path);
    const auto max = read_count(s, "maxItems", path);
    if (min && max && *max < *min) fail(join(path, "maxItems"), "is below minItems");
    if (s.contains("prefixItems")) return compile_tuple(s, hint, path, min.value_or(0), max);
    if (min.value_or(0) > kMaxRepetition || max.value_or(0) > kMaxRepetition) {
      fail(join(path, max ? "maxItems" : "minItems"), "above " + std::to_string(kMaxRepetition) + " is not supported");
    }
    const auto items = s.find("items");
    const std::string item = items == s.end() ? "json-value" : compile(*items, hint + "-item", join(path, "items"));
    if (max && *max == 0) return "\"[\" json-ws \"]\"";
    const int64_t lo = std::max<int64_t>(min.value_or(0), 1) - 1;
    const std::string more = "(\",\" json-ws " + item + " json-ws){" + std::to_string(lo) + "," +
                             (max ? std::to_string(*max - 1) : "") + "}";
    std::string list = item + " json-ws " + more;
    if (min.value_or(0) == 0) list = "(" + list + ")?";
    return define(hint, "\"[\" json-ws " + list + " \"]\"");
  }

  // prefixItems (a tuple): element i follows prefixItems[i], later ones `items` (false: none;
  // absent: any value). The array may stop after any element once minItems are written.
  std::string compile_tuple(const OJson& s, const std::string& hint, const std::string& path, int64_t min,
                            std::optional<int64_t> max) {
    const auto& prefix = s.at("prefixItems");
    const std::string p = join(path, "prefixItems");
    if (!prefix.is_array() || prefix.empty()) fail(p, "must be a non-empty array of schemas");
    const auto k = static_cast<int64_t>(prefix.size());
    std::optional<std::string> extra = "json-value";
    if (auto it = s.find("items"); it != s.end()) {
      if (it->is_boolean() && !it->get<bool>()) {
        extra.reset();
      } else {
        extra = compile(*it, hint + "-item", join(path, "items"));
      }
    }
    if (!extra) max = max ? std::min(*max, k) : k;
    if (min > max.value_or(min)) fail(join(path, "minItems"), "is above the number of items the schema allows");
    if (min > kMaxRepetition || max.value_or(0) > kMaxRepetition) {
      fail(join(path, max ? "maxItems" : "minItems"), "above " + std::to_string(kMaxRepetition) + " is not supported");
    }
    // After the tuple: more items, as many as minItems still needs up to what maxItems allows.
    std::string rest;
    if (extra && (!max || *max > k)) {
      const int64_t lo = std::max<int64_t>(min - k, 0);
      rest = "(\",\" json-ws " + *extra + " json-ws){" + std::to_string(lo) + "," + (max ? std::to_string(*max - k) : "") + "}";
    }
    const int64_t last = std::min(k, max.value_or(k));
    std::string tail = rest;
    for (int64_t i = last; i-- > 0;) {
      const std::string element = compile(prefix[static_cast<size_t>(i)], hint + "-" + std::to_string(i),
                                          p + "[" + std::to_string(i) + "]");
      const std::string item = (i ? "\",\" json-ws " : "") + element + " json-ws" + (tail.empty() ? "" : " " + tail);
      tail = i < min ? item : "(" + item + ")?";
    }
    return define(hint, "\"[\" json-ws " + (tail.empty() ? "" : tail + " ") + "\"]\"");
  }

  const OJson& root_;
  const std::string prefix_;
  std::vector<std::pair<std::string, std::string>> rules_;
  std::map<std::string, std::string> refs_;
  int counter_ = 0;
};

}  // namespace

JsonSchemaRules json_schema_rules(const nlohmann::ordered_json& schema, const std::string& rule_prefix) {
  return SchemaCompiler(schema, rule_prefix).compile_root();
}

std::string json_base_rules() { return base_rules(); }

std::string json_schema_grammar(const nlohmann::ordered_json& schema) {
  const JsonSchemaRules compiled = json_schema_rules(schema, "");
  return "root ::= " + compiled.expression + "\n" + compiled.rules + base_rules();
}

std::string json_object_grammar() { return "root ::= json-object\n" + base_rules(); }

}  // namespace loom

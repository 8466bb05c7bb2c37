#include "core/grammar/json_schema_merge.hpp"

#include <algorithm>
#include <set>
#include <tuple>
#include <vector>

#include "core/common/error.hpp"

namespace loom {
namespace {

using OJson = nlohmann::ordered_json;

// Enough for any schema a person writes; a cycle of references through allOf/anyOf ends here.
constexpr int kMaxDepth = 16;
// Alternatives a distributed anyOf may multiply into before the grammar would grow too large.
constexpr size_t kMaxAlternatives = 64;

const std::set<std::string> kAnnotations = {"title",   "description", "default",  "examples",  "$schema",
                                            "$id",     "$comment",    "deprecated", "readOnly", "writeOnly",
                                            "$defs",   "definitions", "strict"};

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw Error((path.empty() ? std::string("schema") : path) + ": " + what);
}

std::string join(const std::string& path, const std::string& key) { return path.empty() ? key : path + "." + key; }

bool is_combinator(const std::string& key) { return key == "allOf" || key == "anyOf" || key == "oneOf" || key == "$ref"; }

const OJson& resolve_ref(const OJson& ref, const OJson& root, const std::string& path) {
  const std::string p = join(path, "$ref");
  if (!ref.is_string()) fail(p, "must be a string");
  const std::string r = ref.get<std::string>();
  if (r.empty() || r[0] != '#') fail(p, "only references inside the schema ('#...') are supported, got '" + r + "'");
  try {
    const OJson::json_pointer ptr(r.substr(1));
    if (root.contains(ptr)) return root.at(ptr);
  } catch (const std::exception&) {
  }
  fail(p, "'" + r + "' does not point into the schema");
}

// The type names a schema admits; "number" admits "integer".
std::vector<std::string> types_of(const OJson& t, const std::string& path) {
  std::vector<std::string> out;
  if (t.is_string()) {
    out.push_back(t.get<std::string>());
  } else if (t.is_array()) {
    for (const OJson& v : t) {
      if (!v.is_string()) fail(path, "must hold type names");
      out.push_back(v.get<std::string>());
    }
  } else {
    fail(path, "must be a type name or a non-empty array of them");
  }
  return out;
}

OJson intersect_types(const OJson& a, const OJson& b, const std::string& path) {
  const std::vector<std::string> ta = types_of(a, path), tb = types_of(b, path);
  auto admits = [](const std::vector<std::string>& ts, const std::string& t) {
    return std::find(ts.begin(), ts.end(), t) != ts.end() || (t == "integer" && std::find(ts.begin(), ts.end(), "number") != ts.end());
  };
  OJson out = OJson::array();
  for (const std::string& t : ta)
    if (admits(tb, t)) out.push_back(t);
  for (const std::string& t : tb)
    if (t == "integer" && admits(ta, t) && std::find(out.begin(), out.end(), t) == out.end()) out.push_back(t);
  if (out.empty()) fail(path, "no type satisfies every allOf member");
  return out.size() == 1 ? out[0] : out;
}

// Property names an object schema admits when it is closed (additionalProperties: false).
bool closed(const OJson& s) {
  const auto it = s.find("additionalProperties");
  return it != s.end() && it->is_boolean() && !it->get<bool>();
}

std::set<std::string> property_names(const OJson& s) {
  std::set<std::string> out;
  if (const auto it = s.find("properties"); it != s.end() && it->is_object())
    for (const auto& [k, _] : it->items()) out.insert(k);
  return out;
}

OJson all_of(const OJson& a, const OJson& b) { return OJson{{"allOf", OJson::array({a, b})}}; }

// Two schemas with no combinator at their top, as one.
OJson merge(const OJson& a, const OJson& b, const std::string& path) {
  OJson out = a;
  const bool closed_a = closed(a), closed_b = closed(b);
  const std::set<std::string> names_a = property_names(a), names_b = property_names(b);
  for (const auto& [key, vb] : b.items()) {
    if (kAnnotations.count(key)) continue;
    const std::string p = join(path, key);
    if (!out.contains(key)) {
      out[key] = vb;
      continue;
    }
    OJson& va = out[key];
    if (key == "type") {
      va = intersect_types(va, vb, p);
    } else if (key == "properties") {
      if (!va.is_object() || !vb.is_object()) fail(p, "must be an object");
      for (const auto& [name, sb] : vb.items()) va[name] = va.contains(name) ? all_of(va[name], sb) : sb;
    } else if (key == "required") {
      if (!va.is_array() || !vb.is_array()) fail(p, "must be an array of property names");
      for (const OJson& r : vb)
        if (std::find(va.begin(), va.end(), r) == va.end()) va.push_back(r);
    } else if (key == "additionalProperties") {
      if (va == vb) continue;
      if (va.is_boolean() && vb.is_boolean()) {
        va = va.get<bool>() && vb.get<bool>();
      } else if (va.is_boolean()) {
        if (va.get<bool>()) va = vb;  // true and X: X; false and X: false
      } else if (vb.is_boolean()) {
        if (!vb.get<bool>()) va = false;
      } else {
        fail(p, "two different additionalProperties schemas cannot be combined");
      }
    } else if (key == "enum") {
      if (!va.is_array() || !vb.is_array()) fail(p, "must be a non-empty array");
      OJson both = OJson::array();
      for (const OJson& v : va)
        if (std::find(vb.begin(), vb.end(), v) != vb.end()) both.push_back(v);
      if (both.empty()) fail(p, "no value is in every allOf member's enum");
      va = both;
    } else if (key == "const") {
      if (va != vb) fail(p, "the allOf members ask for different values");
    } else if (key == "minimum" || key == "exclusiveMinimum" || key == "minLength" || key == "minItems") {
      if (!va.is_number() || !vb.is_number()) fail(p, "must be a number");
      if (vb > va) va = vb;
    } else if (key == "maximum" || key == "exclusiveMaximum" || key == "maxLength" || key == "maxItems") {
      if (!va.is_number() || !vb.is_number()) fail(p, "must be a number");
      if (vb < va) va = vb;
    } else if (key == "items") {
      if (va.is_boolean() || vb.is_boolean()) {
        const OJson& flag = va.is_boolean() ? va : vb;
        const OJson& other = va.is_boolean() ? vb : va;
        va = flag.get<bool>() ? other : OJson(false);
      } else {
        va = all_of(va, vb);
      }
    } else if (va != vb) {
      // prefixItems, pattern, format: one value each, which two members cannot share unless equal.
      fail(p, "two different values cannot be combined (allOf)");
    }
  }
  // A member's additionalProperties schema applies to the properties the other adds.
  for (const auto& [x, names_x, names_y] : {std::tuple{&a, &names_a, &names_b}, std::tuple{&b, &names_b, &names_a}}) {
    const auto it = x->find("additionalProperties");
    if (it == x->end() || !it->is_object()) continue;
    for (const std::string& name : *names_y)
      if (!names_x->count(name)) out["properties"][name] = all_of(*it, out["properties"][name]);
  }
  // A closed member admits only its own properties: what the other adds is dropped.
  if (closed_a || closed_b) {
    out["additionalProperties"] = false;
    if (out.contains("properties")) {
      OJson kept = OJson::object();
      for (const auto& [name, s] : out["properties"].items())
        if ((!closed_a || names_a.count(name)) && (!closed_b || names_b.count(name))) kept[name] = s;
      out["properties"] = kept;
    }
    if (out.contains("required")) {
      for (const OJson& r : out["required"]) {
        const std::string name = r.is_string() ? r.get<std::string>() : r.dump();
        if ((closed_a && !names_a.count(name)) || (closed_b && !names_b.count(name)))
          fail(join(path, "required"), "'" + name + "' is required by one allOf member and excluded by another's additionalProperties: false");
      }
    }
  }
  return out;
}

// The schema as alternatives (any one of them is valid), none with a combinator at its top.
std::vector<OJson> alternatives(const OJson& s, const OJson& root, const std::string& path, int depth) {
  if (depth > kMaxDepth) fail(path, "allOf/anyOf/$ref nest too deeply (a reference cycle?)");
  if (s.is_boolean()) return s.get<bool>() ? std::vector<OJson>{OJson::object()} : std::vector<OJson>{};
  if (!s.is_object()) fail(path, "a schema must be an object or a boolean");
  OJson base = OJson::object();
  for (const auto& [key, v] : s.items())
    if (!is_combinator(key) && !kAnnotations.count(key)) base[key] = v;
  // The members first, the keywords beside them last: properties are written in the order the
  // members name them, and the keywords beside refine them.
  std::vector<OJson> out{OJson::object()};
  auto combine = [&](const std::vector<OJson>& with, const std::string& p) {
    std::vector<OJson> next;
    for (const OJson& x : out)
      for (const OJson& y : with) next.push_back(merge(x, y, p));
    if (next.size() > kMaxAlternatives)
      fail(p, "distributing anyOf over allOf gives more than " + std::to_string(kMaxAlternatives) + " alternatives");
    out = std::move(next);
  };
  if (const auto it = s.find("$ref"); it != s.end()) combine(alternatives(resolve_ref(*it, root, path), root, path, depth + 1), path);
  if (const auto it = s.find("allOf"); it != s.end()) {
    const std::string p = join(path, "allOf");
    if (!it->is_array() || it->empty()) fail(p, "must be a non-empty array");
    for (size_t i = 0; i < it->size(); ++i) {
      const std::string pi = p + "[" + std::to_string(i) + "]";
      combine(alternatives((*it)[i], root, pi, depth + 1), pi);
    }
  }
  for (const char* key : {"anyOf", "oneOf"}) {
    const auto it = s.find(key);
    if (it == s.end()) continue;
    const std::string p = join(path, key);
    if (!it->is_array() || it->empty()) fail(p, "must be a non-empty array");
    std::vector<OJson> any;
    for (size_t i = 0; i < it->size(); ++i) {
      std::vector<OJson> alt = alternatives((*it)[i], root, p + "[" + std::to_string(i) + "]", depth + 1);
      any.insert(any.end(), std::make_move_iterator(alt.begin()), std::make_move_iterator(alt.end()));
    }
    combine(any, p);
  }
  combine({base}, path);
  return out;
}

}  // namespace

bool is_schema_annotation(const std::string& key) { return kAnnotations.count(key) != 0; }

bool needs_combination_rewrite(const OJson& s) {
  if (!s.is_object()) return false;
  if (s.contains("allOf")) return true;
  const int combinators = (s.contains("anyOf") ? 1 : 0) + (s.contains("oneOf") ? 1 : 0) + (s.contains("$ref") ? 1 : 0);
  if (combinators == 0) return false;
  if (combinators > 1) return true;
  return std::any_of(s.items().begin(), s.items().end(),
                     [](const auto& kv) { return !is_combinator(kv.key()) && !kAnnotations.count(kv.key()); });
}

OJson rewrite_schema_combinations(const OJson& schema, const OJson& root, const std::string& path) {
  std::vector<OJson> alts = alternatives(schema, root, path, 0);
  if (alts.empty()) fail(path, "the schema matches no value");
  if (alts.size() == 1) return alts[0];
  OJson any = OJson::array();
  for (OJson& a : alts) any.push_back(std::move(a));
  return OJson{{"anyOf", std::move(any)}};
}

}  // namespace loom

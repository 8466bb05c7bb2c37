// jinja2's built-in filters and tests, as far as chat templates use them. Tojson is Hugging
// Face's (json.dumps with ensure_ascii=False, keys in insertion order), not jinja2's HTML-safe one,
// since transformers replaces it when rendering chat templates.
#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "core/common/error.hpp"
#include "core/template/jinja/builtins.hpp"
#include "core/template/jinja/checked_int.hpp"

namespace loom::jinja {
namespace {

CallArgs shift(const CallArgs& args, size_t n) {
  CallArgs out;
  out.positional.assign(args.positional.begin() + static_cast<long>(std::min(n, args.positional.size())),
                        args.positional.end());
  out.named = args.named;
  return out;
}

// item access along a dotted path ("function.name"), as jinja2's attrgetter does it.
Value attribute_path(const Value& obj, const std::string& path) {
  Value v = obj;
  size_t start = 0;
  for (;;) {
    const size_t dot = path.find('.', start);
    const std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    const bool digits = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    v = get_item(v, digits ? Value::integer(std::stoll(part)) : Value::string(part));
    if (dot == std::string::npos) return v;
    if (v.is_undefined()) return v;
    start = dot + 1;
  }
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

Value to_int(const Value& v, const Value* fallback) {
  const Value def = fallback ? *fallback : Value::integer(0);
  if (v.is_bool() || v.is_int()) return Value::integer(v.as_int());
  if (v.is_float()) return std::isfinite(v.as_float()) ? Value::integer(static_cast<int64_t>(v.as_float())) : def;
  if (v.is_string()) {
    const std::string s = strip_chars(v.as_string(), nullptr, true, true);
    char* end = nullptr;
    const long long i = std::strtoll(s.c_str(), &end, 10);
    if (!s.empty() && end == s.c_str() + s.size()) return Value::integer(i);
    const double f = std::strtod(s.c_str(), &end);
    if (!s.empty() && end == s.c_str() + s.size() && std::isfinite(f)) return Value::integer(static_cast<int64_t>(f));
  }
  return def;
}

Value to_float(const Value& v, const Value* fallback) {
  const Value def = fallback ? *fallback : Value::number(0.0);
  if (v.is_number()) return Value::number(v.as_float());
  if (v.is_string()) {
    const std::string s = strip_chars(v.as_string(), nullptr, true, true);
    char* end = nullptr;
    const double f = std::strtod(s.c_str(), &end);
    if (!s.empty() && end == s.c_str() + s.size()) return Value::number(f);
  }
  return def;
}

// select/reject/selectattr/rejectattr: args are [attribute,] test name, test args.
Value select_items(const Value& seq, const CallArgs& args, bool by_attr, bool keep) {
  ValueList out;
  const std::string attr = by_attr ? (args.get(0, "") ? args.get(0, "")->str() : "") : "";
  const size_t test_at = by_attr ? 1 : 0;
  const Value* test = args.get(test_at, "");
  const CallArgs test_args = shift(args, test_at + 1);
  for (const Value& item : iterate(seq)) {
    const Value v = by_attr ? attribute_path(item, attr) : item;
    const bool pass = test ? apply_test(test->str(), v, test_args) : v.truthy();
    if (pass == keep) out.push_back(item);
  }
  return Value::list(std::move(out));
}

}  // namespace

bool has_filter(const std::string& n) {
  static const char* const kNames[] = {"abs", "capitalize", "count", "d", "default", "e", "escape", "first",
                                       "float", "indent", "int", "items", "join", "last", "length", "list",
                                       "lower", "map", "reject", "rejectattr", "replace", "reverse", "safe",
                                       "select", "selectattr", "string", "sum", "title", "tojson", "trim",
                                       "unique", "upper"};
  return std::find(std::begin(kNames), std::end(kNames), n) != std::end(kNames);
}

Value apply_filter(const std::string& name, const Value& value, const CallArgs& args) {
  const Value* a0 = args.get(0, "");
  if (name == "default" || name == "d") {
    const Value* boolean = args.get(1, "boolean");
    const bool use_default = value.is_undefined() || (boolean && boolean->truthy() && !value.truthy());
    return use_default ? (args.get(0, "default_value") ? *args.get(0, "default_value") : Value::string("")) : value;
  }
  if (name == "length" || name == "count") return Value::integer(value_length(value));
  if (name == "string") return value.is_string() ? value : Value::string(value.str());
  if (name == "safe") return value;
  if (name == "tojson") {
    const Value* indent = args.get(0, "indent");
    const Value* sort_keys = args.get(SIZE_MAX, "sort_keys");
    const Value* ensure_ascii = args.get(SIZE_MAX, "ensure_ascii");
    if (value.is_undefined()) fail_undefined(value);
    return Value::string(to_json_text(value, indent && indent->is_number() ? static_cast<int>(indent->as_int()) : -1,
                                      sort_keys && sort_keys->truthy(), ensure_ascii && ensure_ascii->truthy()));
  }
  if (name == "items") {
    if (value.is_undefined()) return Value::list();
    if (!value.is_dict()) throw Error("items filter needs a mapping, got " + value.type_name());
    return *call_method(Value::dict(value.as_dict()), "items", {});
  }
  if (name == "list") return Value::list(iterate(value));
  if (name == "first" || name == "last") {
    const ValueList items = iterate(value);
    if (items.empty()) return Value::undefined("No " + name + " item, sequence was empty.");
    return name == "first" ? items.front() : items.back();
  }
  if (name == "reverse") {
    if (value.is_string()) return slice_value(value, Value(), Value(), Value::integer(-1));
    ValueList items = iterate(value);
    std::reverse(items.begin(), items.end());
    return Value::list(std::move(items));
  }
  if (name == "join") {
    const Value* attr = args.get(1, "attribute");
    std::string out;
    const std::string sep = args.get(0, "d") ? args.get(0, "d")->str() : "";
    const ValueList items = iterate(value);
    for (size_t i = 0; i < items.size(); ++i) {
      out += (i ? sep : "") + (attr ? attribute_path(items[i], attr->str()) : items[i]).str();
    }
    return Value::string(out);
  }
  if (name == "map") {
    ValueList out;
    const Value* attr = args.get(SIZE_MAX, "attribute");
    for (const Value& item : iterate(value)) {
      if (attr) {
        Value v = attribute_path(item, attr->str());
        const Value* def = args.get(SIZE_MAX, "default");
        out.push_back(v.is_undefined() && def ? *def : v);
      } else {
        if (!a0) throw Error("map needs a filter name or attribute=");
        out.push_back(apply_filter(a0->str(), item, shift(args, 1)));
      }
    }
    return Value::list(std::move(out));
  }
  if (name == "select" || name == "reject") return select_items(value, args, false, name == "select");
  if (name == "selectattr" || name == "rejectattr") return select_items(value, args, true, name == "selectattr");
  if (name == "unique") {
    ValueList out;
    for (const Value& item : iterate(value)) {
      if (std::none_of(out.begin(), out.end(), [&](const Value& o) { return values_equal(o, item); })) out.push_back(item);
    }
    return Value::list(std::move(out));
  }
  if (name == "sum") {
    Value total = args.get(1, "start") ? *args.get(1, "start") : Value::integer(0);
    for (const Value& item : iterate(value)) {
      if (!item.is_number() || !total.is_number()) throw Error("sum needs numbers, got " + item.type_name());
      total = item.is_float() || total.is_float() ? Value::number(total.as_float() + item.as_float())
                                                  : Value::integer(checked_add(total.as_int(), item.as_int()));
    }
    return total;
  }
  if (name == "int") return to_int(value, args.get(0, "default"));
  if (name == "float") return to_float(value, args.get(0, "default"));
  if (name == "abs") {
    if (value.is_float()) return Value::number(std::fabs(value.as_float()));
    if (value.is_number()) return Value::integer(value.as_int() < 0 ? checked_neg(value.as_int()) : value.as_int());
    throw Error("bad operand type for abs(): '" + value.type_name() + "'");
  }
  if (name == "escape" || name == "e") return Value::string(html_escape(value.str()));
  if (name == "indent") {
    const Value* width_v = args.get(0, "width");
    const int64_t width = width_v && !width_v->is_string() ? width_v->as_int() : 4;
    if (width < 0 || width > 4096) throw Error("indent width " + std::to_string(width) + " is outside 0..4096");
    const std::string pad = width_v && width_v->is_string() ? width_v->as_string() : std::string(static_cast<size_t>(width), ' ');
    const bool first = args.get(1, "first") && args.get(1, "first")->truthy();
    const bool blank = args.get(2, "blank") && args.get(2, "blank")->truthy();
    const std::string s = value.str();
    std::string out;
    size_t start = 0;
    bool is_first = true;
    for (;;) {
      const size_t nl = s.find('\n', start);
      const std::string line = s.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
      if ((!is_first || first) && (blank || !line.empty())) out += pad;
      out += line;
      if (nl == std::string::npos) break;
      out += '\n';
      start = nl + 1;
      is_first = false;
    }
    return Value::string(out);
  }
  // The string filters, with Python's str methods' semantics.
  const Value text = Value::string(value.str());
  if (name == "trim") return Value::string(strip_chars(text.as_string(), a0, true, true));
  if (name == "upper" || name == "lower" || name == "title" || name == "capitalize") {
    return *call_method(text, name, {});
  }
  if (name == "replace") return *call_method(text, "replace", args);
  throw Error("no filter named '" + name + "'");
}

bool has_test(const std::string& n) {
  static const char* const kNames[] = {"defined", "undefined", "none", "boolean", "false", "true", "integer",
                                       "float", "number", "string", "mapping", "iterable", "sequence",
                                       "callable", "odd", "even", "divisibleby", "eq", "equalto", "==",
                                       "ne", "!=", "lt", "<", "le", "<=", "gt", ">", "ge", ">=", "in",
                                       "sameas", "lower", "upper"};
  return std::find(std::begin(kNames), std::end(kNames), n) != std::end(kNames);
}

bool apply_test(const std::string& n, const Value& v, const CallArgs& args) {
  const Value* a0 = args.get(0, "");
  auto arg = [&]() -> const Value& {
    if (!a0) throw Error("test '" + n + "' needs an argument");
    return *a0;
  };
  if (n == "defined") return !v.is_undefined();
  if (n == "undefined") return v.is_undefined();
  if (n == "none") return v.is_none();
  if (n == "boolean") return v.is_bool();
  if (n == "false") return v.is_bool() && !v.as_bool();
  if (n == "true") return v.is_bool() && v.as_bool();
  if (n == "integer") return v.is_int();
  if (n == "float") return v.is_float();
  if (n == "number") return v.is_number();
  if (n == "string") return v.is_string();
  if (n == "mapping") return v.is_dict() && !v.is_namespace();
  if (n == "iterable") return v.is_list() || v.is_dict() || v.is_string() || v.is_undefined();
  if (n == "sequence") return v.is_list() || v.is_dict() || v.is_string() || v.is_undefined();
  if (n == "callable") return v.is_function();
  if (n == "odd" || n == "even") {
    if (!v.is_number() || v.is_float()) throw Error("test '" + n + "' needs an integer, got " + v.type_name());
    const int64_t r = ((v.as_int() % 2) + 2) % 2;
    return n == "odd" ? r == 1 : r == 0;
  }
  if (n == "divisibleby") return divisible_by(v.as_int(), arg().as_int());
  if (n == "eq" || n == "equalto" || n == "==") return values_equal(v, arg());
  if (n == "ne" || n == "!=") return !values_equal(v, arg());
  if (n == "lt" || n == "<") return value_less(v, arg());
  if (n == "le" || n == "<=") return !value_less(arg(), v);
  if (n == "gt" || n == ">") return value_less(arg(), v);
  if (n == "ge" || n == ">=") return !value_less(v, arg());
  if (n == "in") return value_contains(arg(), v);
  if (n == "sameas") {
    if (v.kind() != arg().kind()) return false;
    if (v.is_none() || v.is_undefined()) return true;
    return (v.is_bool() || v.is_int() || v.is_string()) && values_equal(v, arg());
  }
  if (n == "lower" || n == "upper") {
    if (!v.is_string()) return false;
    return call_method(v, n, {})->as_string() == v.as_string();
  }
  throw Error("no test named '" + n + "'");
}

}  // namespace loom::jinja

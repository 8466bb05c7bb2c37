// Python object behaviour: item/attribute access, slicing, ordering, `in`, iteration, len, and
// the str/dict methods templates call.
#include <algorithm>

#include "core/common/error.hpp"
#include "core/template/jinja/builtins.hpp"

namespace loom::jinja {
namespace {

bool is_py_space(const std::string& cp) {
  if (cp.size() != 1) return cp == "\xC2\xA0" || cp == "\xC2\x85" || cp == "\xE3\x80\x80";
  const char c = cp[0];
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f' ||
         (c >= '\x1c' && c <= '\x1f');
}

const std::string& need_string(const Value* v, const char* what) {
  if (!v || !v->is_string()) throw Error(std::string(what) + " must be a str, got " + (v ? v->type_name() : "nothing"));
  return v->as_string();
}

std::string upper_ascii(std::string s) {
  for (char& c : s) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 32);
  }
  return s;
}
std::string lower_ascii(std::string s) {
  for (char& c : s) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
  }
  return s;
}

Value split_string(const std::string& s, const Value* sep, const Value* maxsplit_v) {
  const int64_t maxsplit = maxsplit_v && maxsplit_v->is_int() ? maxsplit_v->as_int() : -1;
  ValueList out;
  if (!sep || sep->is_none()) {  // runs of whitespace, no empty parts
    const std::vector<std::string> cps = code_points(s);
    size_t i = 0;
    while (i < cps.size()) {
      while (i < cps.size() && is_py_space(cps[i])) ++i;
      if (i >= cps.size()) break;
      std::string part;
      if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
        while (i < cps.size()) part += cps[i++];
        while (!part.empty() && (part.back() == ' ' || part.back() == '\n' || part.back() == '\t')) part.pop_back();
      } else {
        while (i < cps.size() && !is_py_space(cps[i])) part += cps[i++];
      }
      out.push_back(Value::string(part));
    }
    return Value::list(std::move(out));
  }
  const std::string& d = need_string(sep, "split separator");
  if (d.empty()) throw Error("empty separator");
  size_t start = 0;
  for (;;) {
    const size_t at = s.find(d, start);
    if (at == std::string::npos || (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit)) break;
    out.push_back(Value::string(s.substr(start, at - start)));
    start = at + d.size();
  }
  out.push_back(Value::string(s.substr(start)));
  return Value::list(std::move(out));
}

std::string replace_all(const std::string& s, const std::string& from, const std::string& to, int64_t count) {
  std::string out;
  if (from.empty()) {  // Python inserts `to` around every character
    const std::vector<std::string> cps = code_points(s);
    int64_t n = 0;
    for (const std::string& cp : cps) {
      if (count < 0 || n < count) {
        out += to;
        ++n;
      }
      out += cp;
    }
    if (count < 0 || n < count) out += to;
    return out;
  }
  size_t start = 0;
  int64_t n = 0;
  for (;;) {
    const size_t at = s.find(from, start);
    if (at == std::string::npos || (count >= 0 && n >= count)) break;
    out += s.substr(start, at - start) + to;
    start = at + from.size();
    ++n;
  }
  return out + s.substr(start);
}

std::string title_case(const std::string& s) {
  std::string out;
  bool prev_cased = false;
  for (char c : s) {
    const bool lower = c >= 'a' && c <= 'z';
    const bool upper = c >= 'A' && c <= 'Z';
    if (lower && !prev_cased) c = static_cast<char>(c - 32);
    else if (upper && prev_cased) c = static_cast<char>(c + 32);
    prev_cased = lower || upper;
    out += c;
  }
  return out;
}

std::string format_string(const std::string& fmt, const CallArgs& args) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] == '{' && i + 1 < fmt.size() && fmt[i + 1] == '{') {
      out += '{';
      ++i;
    } else if (fmt[i] == '}' && i + 1 < fmt.size() && fmt[i + 1] == '}') {
      out += '}';
      ++i;
    } else if (fmt[i] == '{') {
      const size_t close = fmt.find('}', i);
      if (close == std::string::npos) throw Error("Single '{' encountered in format string");
      const std::string field = fmt.substr(i + 1, close - i - 1);
      if (field.find_first_of(":!") != std::string::npos) throw Error("format specs are not supported: {" + field + "}");
      const Value* v = nullptr;
      if (field.empty()) {
        v = auto_index < args.positional.size() ? &args.positional[auto_index] : nullptr;
        ++auto_index;
      } else if (std::all_of(field.begin(), field.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        const size_t k = std::stoul(field);
        v = k < args.positional.size() ? &args.positional[k] : nullptr;
      } else {
        v = args.get(SIZE_MAX, field);
      }
      if (!v) throw Error("format: no argument for {" + field + "}");
      out += v->str();
      i = close;
    } else {
      out += fmt[i];
    }
  }
  return out;
}

}  // namespace

[[noreturn]] void fail_undefined(const Value& undefined) {
  throw Error(undefined.undefined_hint().empty() ? "undefined value" : undefined.undefined_hint());
}

std::string strip_chars(const std::string& s, const Value* chars, bool left, bool right) {
  const std::vector<std::string> cps = code_points(s);
  std::vector<std::string> set;
  const bool whitespace = !chars || chars->is_none() || chars->is_undefined();
  if (!whitespace) set = code_points(need_string(chars, "strip characters"));
  auto strip_it = [&](const std::string& cp) {
    return whitespace ? is_py_space(cp) : std::find(set.begin(), set.end(), cp) != set.end();
  };
  size_t b = 0, e = cps.size();
  if (left) {
    while (b < e && strip_it(cps[b])) ++b;
  }
  if (right) {
    while (e > b && strip_it(cps[e - 1])) --e;
  }
  std::string out;
  for (size_t i = b; i < e; ++i) out += cps[i];
  return out;
}

Value get_item(const Value& obj, const Value& key) {
  if (obj.is_undefined()) fail_undefined(obj);
  if (obj.is_dict() && key.is_string()) {
    const Value* v = obj.as_dict().find(key.as_string());
    if (v) return *v;
    return Value::undefined("'" + obj.type_name() + " object' has no attribute '" + key.as_string() + "'");
  }
  if ((obj.is_list() || obj.is_string()) && key.is_number() && !key.is_float()) {
    const int64_t n = value_length(obj);
    int64_t i = key.as_int();
    if (i < 0) i += n;
    if (i < 0 || i >= n) return Value::undefined("'" + obj.type_name() + " object' has no element " + key.str());
    if (obj.is_list()) return obj.as_list()[static_cast<size_t>(i)];
    return Value::string(code_points(obj.as_string())[static_cast<size_t>(i)]);
  }
  if (key.is_string()) return get_attr(obj, key.as_string());
  return Value::undefined("'" + obj.type_name() + " object' has no element " + key.repr());
}

Value get_attr(const Value& obj, const std::string& name) {
  if (obj.is_undefined()) fail_undefined(obj);
  if (obj.is_dict()) {
    const Value* v = obj.as_dict().find(name);
    if (v) return *v;
  }
  return Value::undefined("'" + obj.type_name() + " object' has no attribute '" + name + "'");
}

Value slice_value(const Value& obj, const Value& start_v, const Value& stop_v, const Value& step_v) {
  if (obj.is_undefined()) fail_undefined(obj);
  if (!obj.is_list() && !obj.is_string()) throw Error("'" + obj.type_name() + "' object is not subscriptable");
  const std::vector<std::string> cps = obj.is_string() ? code_points(obj.as_string()) : std::vector<std::string>{};
  const int64_t n = obj.is_list() ? static_cast<int64_t>(obj.as_list().size()) : static_cast<int64_t>(cps.size());
  const bool has_step = !step_v.is_undefined() && !step_v.is_none();
  const int64_t step = has_step ? step_v.as_int() : 1;
  if (step == 0) throw Error("slice step cannot be zero");
  auto bound = [&](const Value& v, int64_t fallback) {
    if (v.is_undefined() || v.is_none()) return fallback;
    int64_t i = v.as_int();
    if (i < 0) i += n;
    return step > 0 ? std::clamp<int64_t>(i, 0, n) : std::clamp<int64_t>(i, -1, n - 1);
  };
  const int64_t start = bound(start_v, step > 0 ? 0 : n - 1);
  const int64_t stop = bound(stop_v, step > 0 ? n : -1);
  ValueList items;
  std::string text;
  for (int64_t i = start; step > 0 ? i < stop : i > stop;) {
    if (obj.is_list()) items.push_back(obj.as_list()[static_cast<size_t>(i)]);
    else text += cps[static_cast<size_t>(i)];
    if (__builtin_add_overflow(i, step, &i)) break;  // a step past INT64_MAX/MIN is past the end
  }
  return obj.is_list() ? Value::list(std::move(items)) : Value::string(std::move(text));
}

bool value_less(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) return a.as_float() < b.as_float();
  if (a.is_string() && b.is_string()) return a.as_string() < b.as_string();
  if (a.is_list() && b.is_list()) {
    const ValueList& x = a.as_list();
    const ValueList& y = b.as_list();
    for (size_t i = 0; i < std::min(x.size(), y.size()); ++i) {
      if (!values_equal(x[i], y[i])) return value_less(x[i], y[i]);
    }
    return x.size() < y.size();
  }
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  throw Error("'<' not supported between instances of '" + a.type_name() + "' and '" + b.type_name() + "'");
}

bool value_contains(const Value& haystack, const Value& needle) {
  if (haystack.is_string()) {
    if (!needle.is_string()) throw Error("'in <string>' requires string as left operand, not " + needle.type_name());
    return haystack.as_string().find(needle.as_string()) != std::string::npos;
  }
  if (haystack.is_dict()) return needle.is_string() && haystack.as_dict().find(needle.as_string()) != nullptr;
  if (haystack.is_list()) {
    for (const Value& v : haystack.as_list()) {
      if (values_equal(v, needle)) return true;
    }
    return false;
  }
  if (haystack.is_undefined()) return false;
  throw Error("argument of type '" + haystack.type_name() + "' is not iterable");
}

ValueList iterate(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::kUndefined: return {};
    case Value::Kind::kList: return value.as_list();
    case Value::Kind::kDict: {
      ValueList keys;
      for (const auto& kv : value.as_dict().items) keys.push_back(Value::string(kv.first));
      return keys;
    }
    case Value::Kind::kString: {
      ValueList chars;
      for (std::string& cp : code_points(value.as_string())) chars.push_back(Value::string(std::move(cp)));
      return chars;
    }
    default: throw Error("'" + value.type_name() + "' object is not iterable");
  }
}

int64_t value_length(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::kUndefined: return 0;
    case Value::Kind::kString: return static_cast<int64_t>(code_points(value.as_string()).size());
    case Value::Kind::kList: return static_cast<int64_t>(value.as_list().size());
    case Value::Kind::kDict: return static_cast<int64_t>(value.as_dict().items.size());
    default: throw Error("object of type '" + value.type_name() + "' has no len()");
  }
}

std::optional<Value> call_method(const Value& obj, const std::string& name, const CallArgs& args) {
  const Value* a0 = args.get(0, "");
  const Value* a1 = args.get(1, "");
  if (obj.is_string()) {
    const std::string& s = obj.as_string();
    if (name == "strip") return Value::string(strip_chars(s, a0, true, true));
    if (name == "lstrip") return Value::string(strip_chars(s, a0, true, false));
    if (name == "rstrip") return Value::string(strip_chars(s, a0, false, true));
    if (name == "startswith" || name == "endswith") {
      ValueList options = a0 && a0->is_list() ? a0->as_list() : ValueList{a0 ? *a0 : Value()};
      for (const Value& o : options) {
        const std::string& p = need_string(&o, name.c_str());
        const bool hit = name == "startswith" ? s.compare(0, p.size(), p) == 0 && s.size() >= p.size()
                                              : s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
        if (hit) return Value::boolean(true);
      }
      return Value::boolean(false);
    }
    if (name == "split") return split_string(s, args.get(0, "sep"), args.get(1, "maxsplit"));
    if (name == "upper") return Value::string(upper_ascii(s));
    if (name == "lower") return Value::string(lower_ascii(s));
    if (name == "title") return Value::string(title_case(s));
    if (name == "capitalize") return Value::string(upper_ascii(s.substr(0, 1)) + lower_ascii(s.substr(std::min<size_t>(1, s.size()))));
    if (name == "replace") {
      return Value::string(replace_all(s, need_string(a0, "replace old"), need_string(a1, "replace new"),
                                       args.get(2, "count") ? args.get(2, "count")->as_int() : -1));
    }
    if (name == "find") {
      const size_t at = s.find(need_string(a0, "find argument"));
      return Value::integer(at == std::string::npos ? -1 : value_length(Value::string(s.substr(0, at))));
    }
    if (name == "count") {
      const std::string& p = need_string(a0, "count argument");
      int64_t n = 0;
      for (size_t at = s.find(p); !p.empty() && at != std::string::npos; at = s.find(p, at + p.size())) ++n;
      return Value::integer(n);
    }
    if (name == "join") {
      std::string out;
      const ValueList items = iterate(a0 ? *a0 : Value());
      for (size_t i = 0; i < items.size(); ++i) out += (i ? s : "") + need_string(&items[i], "join item");
      return Value::string(out);
    }
    if (name == "format") return Value::string(format_string(s, args));
    if (name == "removeprefix") {
      const std::string& p = need_string(a0, "prefix");
      return Value::string(s.compare(0, p.size(), p) == 0 ? s.substr(p.size()) : s);
    }
    if (name == "removesuffix") {
      const std::string& p = need_string(a0, "suffix");
      const bool hit = s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
      return Value::string(hit ? s.substr(0, s.size() - p.size()) : s);
    }
    return std::nullopt;
  }
  if (obj.is_dict() && !obj.is_namespace()) {
    const ValueDict& d = obj.as_dict();
    if (name == "items" || name == "keys" || name == "values") {
      ValueList out;
      for (const auto& [k, v] : d.items) {
        if (name == "items") out.push_back(Value::tuple({Value::string(k), v}));
        else out.push_back(name == "keys" ? Value::string(k) : v);
      }
      return Value::list(std::move(out));
    }
    if (name == "get") {
      const Value* v = a0 && a0->is_string() ? d.find(a0->as_string()) : nullptr;
      return v ? *v : (a1 ? *a1 : Value::none());
    }
  }
  return std::nullopt;
}

}  // namespace loom::jinja

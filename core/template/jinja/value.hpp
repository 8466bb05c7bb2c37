// The values a Jinja template computes with, shaped like the Python objects jinja2 sees when
// Hugging Face renders a chat template: None, bool, int, float, str, list, dict (insertion
// ordered, string keys, as JSON gives them), callables, and jinja2's Undefined. Lists and dicts
// are shared by reference like Python objects, so `ns.attr = ...` on a namespace() is seen by
// every holder of it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace loom::jinja {

class Value;
using ValueList = std::vector<Value>;

struct ValueDict {
  std::vector<std::pair<std::string, Value>> items;  // insertion order, unique keys
  const Value* find(std::string_view key) const;
  void set(const std::string& key, Value value);
};

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> named;
  // The argument at `index` or named `name`, or nullptr when the call gave neither.
  const Value* get(size_t index, std::string_view name) const;
};

using NativeFunction = std::function<Value(const CallArgs&)>;

class Value {
 public:
  enum class Kind { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict, kFunction };

  Value() = default;  // Undefined
  static Value undefined(std::string hint);  // hint: what was missing, for error messages
  static Value none();
  static Value boolean(bool b);
  static Value integer(int64_t i);
  static Value number(double f);
  static Value string(std::string s);
  static Value list(ValueList items = {});
  static Value tuple(ValueList items);  // a list that prints as a Python tuple: (1, 2)
  static Value dict(ValueDict items = {});
  static Value namespace_object(ValueDict items);  // a dict whose attributes can be assigned
  static Value function(std::string name, NativeFunction fn);
  static Value from_json(const nlohmann::ordered_json& json);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_int() const { return kind_ == Kind::kInt; }
  bool is_float() const { return kind_ == Kind::kFloat; }
  bool is_number() const { return kind_ == Kind::kInt || kind_ == Kind::kFloat || kind_ == Kind::kBool; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_list() const { return kind_ == Kind::kList; }
  bool is_dict() const { return kind_ == Kind::kDict; }
  bool is_namespace() const { return kind_ == Kind::kDict && namespace_; }
  bool is_tuple() const { return kind_ == Kind::kList && tuple_; }
  bool is_function() const { return kind_ == Kind::kFunction; }

  bool as_bool() const { return b_; }
  int64_t as_int() const;    // bool and int
  double as_float() const;   // bool, int and float
  const std::string& as_string() const { return s_; }
  const ValueList& as_list() const { return *list_; }
  ValueList& as_list() { return *list_; }
  const ValueDict& as_dict() const { return *dict_; }
  ValueDict& as_dict() { return *dict_; }
  const NativeFunction& as_function() const { return *fn_; }
  const std::string& undefined_hint() const { return s_; }

  bool truthy() const;
  // Python str(): None -> "None", True -> "True", 1.0 -> "1.0", lists and dicts as their repr;
  // Undefined -> "".
  std::string str() const;
  std::string repr() const;
  // Python's type name, for error messages ("str", "int", "dict", ...).
  std::string type_name() const;

 private:
  Kind kind_ = Kind::kUndefined;
  bool b_ = false;
  bool namespace_ = false;
  bool tuple_ = false;
  int64_t i_ = 0;
  double f_ = 0.0;
  std::string s_;  // string, function name, or the undefined hint
  std::shared_ptr<ValueList> list_;
  std::shared_ptr<ValueDict> dict_;
  std::shared_ptr<NativeFunction> fn_;
};

// Python ==: 1 == 1.0 == True, lists and dicts compared element by element.
bool values_equal(const Value& a, const Value& b);

// Python float repr: the shortest text that reads back the same double ("0.1", "1e+16", "1.0").
std::string float_repr(double f);

// json.dumps(value, ensure_ascii, indent, separators=None, sort_keys) as Hugging Face's tojson
// filter calls it; indent < 0 means none. Throws for values JSON cannot hold.
std::string to_json_text(const Value& value, int indent, bool sort_keys, bool ensure_ascii);

// The text split into Unicode code points (each a UTF-8 string), as Python indexes str.
std::vector<std::string> code_points(std::string_view s);

}  // namespace loom::jinja

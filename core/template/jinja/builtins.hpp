// jinja2's filters and tests, and the Python str/dict methods templates call
// (`message.content.startswith('<think>')`, `tool.items()`), with Python's semantics.
#pragma once

#include <optional>
#include <string>

#include "core/template/jinja/value.hpp"

namespace loom::jinja {

// `value | name(args)`. Throws loom::Error for an unknown filter or a bad argument.
Value apply_filter(const std::string& name, const Value& value, const CallArgs& args);
// `value is name(args)`. Throws loom::Error for an unknown test.
bool apply_test(const std::string& name, const Value& value, const CallArgs& args);
bool has_test(const std::string& name);
bool has_filter(const std::string& name);

// `obj.name(args)` for a str, dict or list method; nullopt when obj has no such method.
std::optional<Value> call_method(const Value& obj, const std::string& name, const CallArgs& args);

// obj[key] as jinja2's getitem does it (then the attribute): dict key, list/str index (negative
// from the end), or Undefined naming what was missing.
Value get_item(const Value& obj, const Value& key);
// obj.name as jinja2's getattr does it: the dict key, else Undefined. Raises on an Undefined obj.
Value get_attr(const Value& obj, const std::string& name);
// Python slicing, for lists and strings (by code point).
Value slice_value(const Value& obj, const Value& start, const Value& stop, const Value& step);
// Python ordering (<) for numbers, strings and lists; throws for others.
bool value_less(const Value& a, const Value& b);
// Python `needle in haystack`.
bool value_contains(const Value& haystack, const Value& needle);
// Items of an iterable as a for loop sees them: list items, dict keys, string characters;
// Undefined iterates as empty. Throws for others.
ValueList iterate(const Value& value);
// len(); Undefined is 0.
int64_t value_length(const Value& value);
// Throws the UndefinedError jinja2 raises when an Undefined is used beyond printing or testing.
[[noreturn]] void fail_undefined(const Value& undefined);

// Python str.strip/lstrip/rstrip with an optional set of characters (whitespace when none).
std::string strip_chars(const std::string& s, const Value* chars, bool left, bool right);

}  // namespace loom::jinja

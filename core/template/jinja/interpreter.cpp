// Walks the parsed template: expressions evaluate to Values, statements append text. Scoping
// follows jinja2: `set` writes the current scope, every for-loop iteration and macro call has its
// own scope (so a `set` inside a loop is gone after it, which is why templates use namespace()),
// `if` has none.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <unordered_map>

#include "core/template/jinja/builtins.hpp"
#include "core/template/jinja/checked_int.hpp"
#include "core/template/jinja/lexer.hpp"
#include "core/template/jinja/parser.hpp"
#include "core/template/jinja/template.hpp"

namespace loom::jinja {
namespace {

// An error that already names its template line; not wrapped again on the way out.
class LocatedError : public Error {
 public:
  explicit LocatedError(std::string message) : Error(std::move(message)) {}
};

class Scope {
 public:
  explicit Scope(const Scope* parent) : parent_(parent) {}
  const Value* find(const std::string& name) const {
    for (const Scope* s = this; s; s = s->parent_) {
      const auto it = s->vars_.find(name);
      if (it != s->vars_.end()) return &it->second;
    }
    return nullptr;
  }
  void set(const std::string& name, Value v) { vars_[name] = std::move(v); }

 private:
  const Scope* parent_;
  std::unordered_map<std::string, Value> vars_;
};

constexpr int kMaxCallDepth = 256;

// 'ab' * n and [..] * n build at most this many characters or items, as range() is bounded.
constexpr uint64_t kMaxRepeatedItems = 1u << 20;

Value arithmetic(const std::string& op, const Value& a, const Value& b) {
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  if (a.is_number() && b.is_number()) {
    const bool is_float = a.is_float() || b.is_float();
    if (op == "/") {
      if (b.as_float() == 0.0) throw Error("division by zero");
      return Value::number(a.as_float() / b.as_float());
    }
    if (op == "**") {
      if (!is_float && b.as_int() >= 0) return Value::integer(checked_power(a.as_int(), b.as_int()));
      return Value::number(std::pow(a.as_float(), b.as_float()));
    }
    if (is_float) {
      const double x = a.as_float(), y = b.as_float();
      if (op == "+") return Value::number(x + y);
      if (op == "-") return Value::number(x - y);
      if (op == "*") return Value::number(x * y);
      if (y == 0.0) throw Error("float division by zero");
      if (op == "//") return Value::number(std::floor(x / y));
      if (op == "%") return Value::number(x - std::floor(x / y) * y);
    }
    const int64_t x = a.as_int(), y = b.as_int();
    if (op == "+") return Value::integer(checked_add(x, y));
    if (op == "-") return Value::integer(checked_sub(x, y));
    if (op == "*") return Value::integer(checked_mul(x, y));
    if (y == 0) throw Error("integer division or modulo by zero");
    if (x == INT64_MIN && y == -1) {  // the one quotient int64 cannot hold (and x86 traps on)
      if (op == "%") return Value::integer(0);
      fail_int_overflow("//");
    }
    // Python's floor division and modulo from C++'s truncating ones; the remainder takes the
    // divisor's sign by adding y to a remainder of the other sign, which cannot overflow.
    const int64_t r = x % y;
    const bool adjust = r != 0 && ((r < 0) != (y < 0));
    if (op == "//") return Value::integer(x / y - (adjust ? 1 : 0));
    if (op == "%") return Value::integer(adjust ? r + y : r);
  }
  if (op == "+" && a.is_string() && b.is_string()) return Value::string(a.as_string() + b.as_string());
  if (op == "+" && a.is_list() && b.is_list()) {
    ValueList items = a.as_list();
    items.insert(items.end(), b.as_list().begin(), b.as_list().end());
    return Value::list(std::move(items));
  }
  if (op == "*" && (a.is_string() || a.is_list()) && b.is_int()) {
    const size_t unit = a.is_string() ? a.as_string().size() : a.as_list().size();
    if (b.as_int() > 0 && unit > 0 && static_cast<uint64_t>(b.as_int()) > kMaxRepeatedItems / unit)
      throw Error("repetition too long: " + std::to_string(b.as_int()) + " copies of " + std::to_string(unit) + " items");
    const int64_t copies = unit == 0 ? 0 : std::max<int64_t>(b.as_int(), 0);
    if (a.is_string()) {
      std::string out;
      out.reserve(unit * static_cast<size_t>(copies));
      for (int64_t i = 0; i < copies; ++i) out += a.as_string();
      return Value::string(std::move(out));
    }
    ValueList items;
    items.reserve(unit * static_cast<size_t>(copies));
    for (int64_t i = 0; i < copies; ++i) items.insert(items.end(), a.as_list().begin(), a.as_list().end());
    return Value::list(std::move(items));
  }
  if (op == "*" && a.is_int() && (b.is_string() || b.is_list())) return arithmetic("*", b, a);
  throw Error("unsupported operand type(s) for " + op + ": '" + a.type_name() + "' and '" + b.type_name() + "'");
}

class Interpreter {
 public:
  explicit Interpreter(const std::string& name) : name_(name) {}

  enum class Flow { kNormal, kBreak, kContinue };

  Flow exec(const NodeList& nodes, Scope& scope, std::string& out) {
    for (const NodePtr& node : nodes) {
      Flow flow = Flow::kNormal;
      try {
        flow = exec_node(*node, scope, out);
      } catch (const TemplateException&) {
        throw;
      } catch (const LocatedError&) {
        throw;
      } catch (const Error& e) {
        throw LocatedError(name_ + ":" + std::to_string(node->line) + ": " + e.what());
      }
      if (flow != Flow::kNormal) return flow;
    }
    return Flow::kNormal;
  }

 private:
  Flow exec_node(const Node& node, Scope& scope, std::string& out) {
    switch (node.kind) {
      case Node::Kind::kText: out += node.text; return Flow::kNormal;
      case Node::Kind::kOutput: out += eval(*node.expr, scope).str(); return Flow::kNormal;
      case Node::Kind::kIf:
        for (const auto& [cond, body] : node.branches) {
          if (!cond || eval(*cond, scope).truthy()) return exec(body, scope, out);
        }
        return Flow::kNormal;
      case Node::Kind::kFor: exec_for(node, scope, out); return Flow::kNormal;
      case Node::Kind::kSet: exec_set(node, scope); return Flow::kNormal;
      case Node::Kind::kMacro: define_macro(node, scope); return Flow::kNormal;
      case Node::Kind::kBreak: return Flow::kBreak;
      case Node::Kind::kContinue: return Flow::kContinue;
    }
    return Flow::kNormal;
  }

  static void bind(const std::vector<std::string>& targets, const Value& v, Scope& scope) {
    if (targets.size() == 1) {
      scope.set(targets[0], v);
      return;
    }
    if (!v.is_list() || v.as_list().size() != targets.size()) {
      throw Error("cannot unpack " + v.type_name() + " into " + std::to_string(targets.size()) + " names");
    }
    for (size_t i = 0; i < targets.size(); ++i) scope.set(targets[i], v.as_list()[i]);
  }

  void exec_for(const Node& node, Scope& scope, std::string& out) {
    ValueList items = iterate(eval(*node.expr, scope));
    if (node.condition) {  // the loop's `if` filters before loop.index/length are counted
      ValueList kept;
      for (Value& item : items) {
        Scope probe(&scope);
        bind(node.targets, item, probe);
        if (eval(*node.condition, probe).truthy()) kept.push_back(std::move(item));
      }
      items = std::move(kept);
    }
    const auto n = static_cast<int64_t>(items.size());
    for (int64_t i = 0; i < n; ++i) {
      Scope iteration(&scope);
      bind(node.targets, items[static_cast<size_t>(i)], iteration);
      ValueDict loop;
      loop.items = {{"index0", Value::integer(i)},
                    {"index", Value::integer(i + 1)},
                    {"revindex0", Value::integer(n - i - 1)},
                    {"revindex", Value::integer(n - i)},
                    {"first", Value::boolean(i == 0)},
                    {"last", Value::boolean(i == n - 1)},
                    {"length", Value::integer(n)},
                    {"depth", Value::integer(1)},
                    {"depth0", Value::integer(0)},
                    {"previtem", i > 0 ? items[static_cast<size_t>(i - 1)] : Value::undefined("there is no previous item")},
                    {"nextitem", i + 1 < n ? items[static_cast<size_t>(i + 1)] : Value::undefined("there is no next item")}};
      iteration.set("loop", Value::dict(std::move(loop)));
      if (exec(node.body, iteration, out) == Flow::kBreak) break;
    }
    if (n == 0 && !node.else_body.empty()) {
      Scope inner(&scope);
      exec(node.else_body, inner, out);
    }
  }

  void exec_set(const Node& node, Scope& scope) {
    Value v;
    if (node.expr) {
      v = eval(*node.expr, scope);
    } else {
      std::string text;
      Scope inner(&scope);
      exec(node.body, inner, text);
      v = Value::string(std::move(text));
    }
    if (node.attr.empty()) {
      bind(node.targets, v, scope);
      return;
    }
    const Value* ns = scope.find(node.targets[0]);
    if (!ns || !ns->is_namespace()) throw Error("cannot assign attribute on non-namespace object '" + node.targets[0] + "'");
    Value target = *ns;  // shares the namespace's dict
    target.as_dict().set(node.attr, std::move(v));
  }

  void define_macro(const Node& node, Scope& scope) {
    const Node* macro = &node;
    Scope* defining = &scope;
    scope.set(node.text, Value::function(node.text, [this, macro, defining](const CallArgs& args) {
      if (++depth_ > kMaxCallDepth) throw Error("macro '" + macro->text + "' recursed too deeply");
      Scope call(defining);
      for (size_t i = 0; i < macro->params.size(); ++i) {
        const MacroParam& p = macro->params[i];
        const Value* given = args.get(i, p.name);
        if (given) call.set(p.name, *given);
        else if (p.default_value) call.set(p.name, eval(*p.default_value, call));
        else call.set(p.name, Value::undefined("'" + p.name + "' is undefined"));
      }
      if (args.positional.size() > macro->params.size()) throw Error("macro '" + macro->text + "' takes " + std::to_string(macro->params.size()) + " arguments");
      std::string text;
      exec(macro->body, call, text);
      --depth_;
      return Value::string(std::move(text));
    }));
  }

  CallArgs eval_args(const Expr& e, size_t first, Scope& scope) {
    CallArgs args;
    for (size_t i = first; i < e.args.size(); ++i) args.positional.push_back(eval(*e.args[i], scope));
    for (const auto& [k, v] : e.kwargs) args.named.emplace_back(k, eval(*v, scope));
    return args;
  }

  Value eval(const Expr& e, Scope& scope) {
    switch (e.kind) {
      case Expr::Kind::kLiteral: return e.literal;
      case Expr::Kind::kName: {
        const Value* v = scope.find(e.name);
        return v ? *v : Value::undefined("'" + e.name + "' is undefined");
      }
      case Expr::Kind::kList:
      case Expr::Kind::kTuple: {
        ValueList items;
        for (const ExprPtr& a : e.args) items.push_back(eval(*a, scope));
        return e.kind == Expr::Kind::kTuple ? Value::tuple(std::move(items)) : Value::list(std::move(items));
      }
      case Expr::Kind::kDict: {
        ValueDict d;
        for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
          const Value key = eval(*e.args[i], scope);
          if (!key.is_string()) throw Error("dict keys must be strings, got " + key.type_name());
          d.set(key.as_string(), eval(*e.args[i + 1], scope));
        }
        return Value::dict(std::move(d));
      }
      case Expr::Kind::kGetAttr: return get_attr(eval(*e.args[0], scope), e.name);
      case Expr::Kind::kGetItem: return get_item(eval(*e.args[0], scope), eval(*e.args[1], scope));
      case Expr::Kind::kSlice: {
        auto part = [&](size_t i) { return e.args[i] ? eval(*e.args[i], scope) : Value::none(); };
        return slice_value(eval(*e.args[0], scope), part(1), part(2), part(3));
      }
      case Expr::Kind::kCall: return eval_call(e, scope);
      case Expr::Kind::kFilter: {
        const Value operand = eval(*e.args[0], scope);
        return apply_filter(e.name, operand, eval_args(e, 1, scope));
      }
      case Expr::Kind::kTest: {
        const Value operand = eval(*e.args[0], scope);
        return Value::boolean(apply_test(e.name, operand, eval_args(e, 1, scope)) != e.negated);
      }
      case Expr::Kind::kUnary: {
        const Value v = eval(*e.args[0], scope);
        if (e.name == "not") return Value::boolean(!v.truthy());
        if (!v.is_number()) {
          if (v.is_undefined()) fail_undefined(v);
          throw Error("bad operand type for unary " + e.name + ": '" + v.type_name() + "'");
        }
        if (e.name == "+") return v.is_float() ? v : Value::integer(v.as_int());
        return v.is_float() ? Value::number(-v.as_float()) : Value::integer(checked_neg(v.as_int()));
      }
      case Expr::Kind::kBinary: return eval_binary(e, scope);
      case Expr::Kind::kCondition:
        if (eval(*e.args[1], scope).truthy()) return eval(*e.args[0], scope);
        return e.args[2] ? eval(*e.args[2], scope) : Value::undefined("the condition was false and there is no else");
    }
    return Value();
  }

  Value eval_call(const Expr& e, Scope& scope) {
    Value callee;
    if (e.args[0]->kind == Expr::Kind::kGetAttr) {
      const Value obj = eval(*e.args[0]->args[0], scope);
      const CallArgs args = eval_args(e, 1, scope);
      if (std::optional<Value> r = call_method(obj, e.args[0]->name, args)) return *r;
      callee = get_attr(obj, e.args[0]->name);
      if (callee.is_function()) return callee.as_function()(args);
    } else {
      callee = eval(*e.args[0], scope);
      if (callee.is_function()) return callee.as_function()(eval_args(e, 1, scope));
    }
    if (callee.is_undefined()) fail_undefined(callee);
    throw Error("'" + callee.type_name() + "' object is not callable");
  }

  Value eval_binary(const Expr& e, Scope& scope) {
    const std::string& op = e.name;
    Value a = eval(*e.args[0], scope);
    if (op == "and") return a.truthy() ? eval(*e.args[1], scope) : a;
    if (op == "or") return a.truthy() ? a : eval(*e.args[1], scope);
    const Value b = eval(*e.args[1], scope);
    if (op == "==") return Value::boolean(values_equal(a, b));
    if (op == "!=") return Value::boolean(!values_equal(a, b));
    if (op == "<") return Value::boolean(value_less(a, b));
    if (op == ">") return Value::boolean(value_less(b, a));
    if (op == "<=") return Value::boolean(!value_less(b, a));
    if (op == ">=") return Value::boolean(!value_less(a, b));
    if (op == "in") return Value::boolean(value_contains(b, a));
    if (op == "not in") return Value::boolean(!value_contains(b, a));
    if (op == "~") return Value::string(a.str() + b.str());
    return arithmetic(op, a, b);
  }

  const std::string& name_;
  int depth_ = 0;
};

Value builtin_namespace(const CallArgs& args) {
  ValueDict d;
  for (const Value& p : args.positional) {
    if (!p.is_dict()) throw Error("namespace() takes mappings and keyword arguments");
    for (const auto& [k, v] : p.as_dict().items) d.set(k, v);
  }
  for (const auto& [k, v] : args.named) d.set(k, v);
  return Value::namespace_object(std::move(d));
}

Value builtin_range(const CallArgs& args) {
  if (args.positional.empty() || args.positional.size() > 3) throw Error("range expected 1 to 3 arguments");
  int64_t start = 0, stop = 0, step = 1;
  if (args.positional.size() == 1) {
    stop = args.positional[0].as_int();
  } else {
    start = args.positional[0].as_int();
    stop = args.positional[1].as_int();
    if (args.positional.size() == 3) step = args.positional[2].as_int();
  }
  if (step == 0) throw Error("range() arg 3 must not be zero");
  ValueList out;
  for (int64_t i = start; step > 0 ? i < stop : i > stop;) {
    if (out.size() >= 100000) throw Error("range too long");
    out.push_back(Value::integer(i));
    if (__builtin_add_overflow(i, step, &i)) break;  // past INT64_MAX/MIN: past stop too
  }
  return Value::list(std::move(out));
}

Value builtin_dict(const CallArgs& args) {
  ValueDict d;
  for (const auto& [k, v] : args.named) d.set(k, v);
  return Value::dict(std::move(d));
}

}  // namespace

Template::Template(std::string_view source, std::string name)
    : name_(std::move(name)), nodes_(std::make_shared<NodeList>(parse_template(tokenize(source, name_), name_))) {}

std::string Template::render(const ValueDict& globals) const {
  Scope builtins(nullptr);
  builtins.set("namespace", Value::function("namespace", builtin_namespace));
  builtins.set("range", Value::function("range", builtin_range));
  builtins.set("dict", Value::function("dict", builtin_dict));
  Scope given(&builtins);
  for (const auto& [k, v] : globals.items) given.set(k, v);
  Scope top(&given);
  std::string out;
  Interpreter(name_).exec(*nodes_, top, out);
  return out;
}

}  // namespace loom::jinja

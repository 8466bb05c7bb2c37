// The parsed template: expression and statement trees the interpreter walks.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/template/jinja/value.hpp"

namespace loom::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    kLiteral,   // literal
    kName,      // name
    kList,      // args: items
    kTuple,     // args: items (evaluates to a tuple)
    kDict,      // args: key, value, key, value, ...
    kGetAttr,   // args[0].name
    kGetItem,   // args[0][args[1]]
    kSlice,     // args[0][args[1]:args[2]:args[3]], absent parts null
    kCall,      // args[0](args[1..], kwargs)
    kFilter,    // args[0] | name(args[1..], kwargs)
    kTest,      // args[0] is [not] name(args[1..])
    kUnary,     // name (op) args[0]
    kBinary,    // args[0] name (op) args[1]
    kCondition  // args[0] if args[1] else args[2] (args[2] null: undefined)
  };
  Kind kind = Kind::kLiteral;
  int line = 0;
  Value literal;
  std::string name;
  bool negated = false;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
};

struct Node;
using NodePtr = std::unique_ptr<Node>;
using NodeList = std::vector<NodePtr>;

struct MacroParam {
  std::string name;
  ExprPtr default_value;  // null: required
};

struct Node {
  enum class Kind {
    kText,      // text
    kOutput,    // {{ expr }}
    kIf,        // branches (a null condition is the else)
    kFor,       // for targets in expr [if condition]: body [else else_body]
    kSet,       // set targets = expr, or set targets[0].attr = expr, or set targets[0] (body)
    kMacro,     // macro name(params): body
    kBreak,
    kContinue
  };
  Kind kind = Kind::kText;
  int line = 0;
  std::string text;
  ExprPtr expr;
  ExprPtr condition;
  std::vector<std::string> targets;
  std::string attr;  // kSet: the namespace attribute, when set
  std::vector<std::pair<ExprPtr, NodeList>> branches;
  NodeList body;
  NodeList else_body;
  std::vector<MacroParam> params;
};

}  // namespace loom::jinja

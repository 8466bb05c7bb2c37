#include "core/template/jinja/parser.hpp"

#include <initializer_list>

#include "core/common/error.hpp"

namespace loom::jinja {
namespace {

class Parser {
 public:
  Parser(const std::vector<Token>& tokens, const std::string& name) : toks_(tokens), name_(name) {}

  NodeList run() {
    NodeList nodes = parse_body({});
    if (peek().kind != TokenKind::kEnd) fail("unexpected '" + peek_tag() + "'");
    return nodes;
  }

 private:
  const Token& peek(size_t ahead = 0) const { return toks_[std::min(pos_ + ahead, toks_.size() - 1)]; }
  const Token& next() { return toks_[pos_ < toks_.size() - 1 ? pos_++ : pos_]; }
  bool is_op(const char* op, size_t ahead = 0) const {
    return peek(ahead).kind == TokenKind::kOperator && peek(ahead).text == op;
  }
  bool is_name(const char* n, size_t ahead = 0) const {
    return peek(ahead).kind == TokenKind::kName && peek(ahead).text == n;
  }
  bool skip_op(const char* op) {
    if (!is_op(op)) return false;
    ++pos_;
    return true;
  }
  bool skip_name(const char* n) {
    if (!is_name(n)) return false;
    ++pos_;
    return true;
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw Error(name_ + ":" + std::to_string(peek().line) + ": " + what);
  }
  static std::string describe(const Token& t) {
    switch (t.kind) {
      case TokenKind::kText: return "template text";
      case TokenKind::kExprBegin: return "'{{'";
      case TokenKind::kExprEnd: return "'}}'";
      case TokenKind::kStmtBegin: return "'{%'";
      case TokenKind::kStmtEnd: return "'%}'";
      case TokenKind::kEnd: return "end of template";
      case TokenKind::kString: return "string";
      default: return "'" + t.text + "'";
    }
  }
  std::string peek_tag() const {
    return peek().kind == TokenKind::kStmtBegin && peek(1).kind == TokenKind::kName ? peek(1).text : describe(peek());
  }
  void expect_op(const char* op) {
    if (!skip_op(op)) fail(std::string("expected '") + op + "', got " + describe(peek()));
  }
  std::string expect_name() {
    if (peek().kind != TokenKind::kName) fail("expected a name, got " + describe(peek()));
    return next().text;
  }
  void expect_stmt_end() {
    if (peek().kind != TokenKind::kStmtEnd) fail("expected '%}', got " + describe(peek()));
    ++pos_;
  }

  // Statements until one of `ends` (its tag name is left for the caller: "{%" consumed, the name
  // not); at the top level (ends empty) until the end of the template.
  NodeList parse_body(std::initializer_list<const char*> ends) {
    NodeList out;
    for (;;) {
      const Token& t = peek();
      if (t.kind == TokenKind::kEnd) {
        if (ends.size() != 0) fail(std::string("unexpected end of template, expected '") + *ends.begin() + "'");
        return out;
      }
      if (t.kind == TokenKind::kText) {
        auto node = std::make_unique<Node>();
        node->kind = Node::Kind::kText;
        node->line = t.line;
        node->text = t.text;
        out.push_back(std::move(node));
        ++pos_;
      } else if (t.kind == TokenKind::kExprBegin) {
        ++pos_;
        auto node = std::make_unique<Node>();
        node->kind = Node::Kind::kOutput;
        node->line = t.line;
        node->expr = parse_tuple(true);
        if (peek().kind != TokenKind::kExprEnd) fail("expected '}}', got " + describe(peek()));
        ++pos_;
        out.push_back(std::move(node));
      } else if (t.kind == TokenKind::kStmtBegin) {
        if (peek(1).kind != TokenKind::kName) fail("expected a tag name after '{%'");
        const std::string tag = peek(1).text;
        for (const char* e : ends) {
          if (tag == e) {
            ++pos_;  // "{%"
            return out;
          }
        }
        pos_ += 2;
        out.push_back(parse_statement(tag, t.line));
      } else {
        fail("unexpected " + describe(t));
      }
    }
  }

  NodePtr parse_statement(const std::string& tag, int line) {
    auto node = std::make_unique<Node>();
    node->line = line;
    if (tag == "if") {
      node->kind = Node::Kind::kIf;
      ExprPtr cond = parse_tuple(true);
      for (;;) {
        expect_stmt_end();
        NodeList body = parse_body({"elif", "else", "endif"});
        node->branches.emplace_back(std::move(cond), std::move(body));
        const std::string t = next().text;
        if (t == "elif") {
          cond = parse_tuple(true);
        } else if (t == "else") {
          expect_stmt_end();
          node->branches.emplace_back(nullptr, parse_body({"endif"}));
          ++pos_;
          break;
        } else {
          break;
        }
      }
      expect_stmt_end();
    } else if (tag == "for") {
      node->kind = Node::Kind::kFor;
      node->targets.push_back(expect_name());
      while (skip_op(",")) node->targets.push_back(expect_name());
      if (!skip_name("in")) fail("expected 'in' in for loop, got " + describe(peek()));
      node->expr = parse_tuple(false);
      if (skip_name("if")) node->condition = parse_expression(true);
      skip_name("recursive");
      expect_stmt_end();
      node->body = parse_body({"else", "endfor"});
      if (next().text == "else") {
        expect_stmt_end();
        node->else_body = parse_body({"endfor"});
        ++pos_;
      }
      expect_stmt_end();
    } else if (tag == "set") {
      node->kind = Node::Kind::kSet;
      node->targets.push_back(expect_name());
      if (skip_op(".")) {
        node->attr = expect_name();
      } else {
        while (skip_op(",")) node->targets.push_back(expect_name());
      }
      if (skip_op("=")) {
        node->expr = parse_tuple(true);
        expect_stmt_end();
      } else {
        if (node->targets.size() != 1 || !node->attr.empty()) fail("expected '=' in set");
        expect_stmt_end();
        node->body = parse_body({"endset"});
        ++pos_;
        expect_stmt_end();
      }
    } else if (tag == "macro") {
      node->kind = Node::Kind::kMacro;
      node->text = expect_name();
      expect_op("(");
      while (!skip_op(")")) {
        MacroParam p;
        p.name = expect_name();
        if (skip_op("=")) p.default_value = parse_expression(true);
        node->params.push_back(std::move(p));
        if (!is_op(")")) expect_op(",");
      }
      expect_stmt_end();
      node->body = parse_body({"endmacro"});
      ++pos_;
      expect_stmt_end();
    } else if (tag == "break" || tag == "continue") {
      node->kind = tag == "break" ? Node::Kind::kBreak : Node::Kind::kContinue;
      expect_stmt_end();
    } else {
      --pos_;
      fail("unknown or unsupported tag '" + tag + "'");
    }
    return node;
  }

  ExprPtr make(Expr::Kind kind, int line) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = line;
    return e;
  }

  // A comma-separated list without brackets is a tuple: `{{ a, b }}`, `set x = a, b`.
  ExprPtr parse_tuple(bool with_condition) {
    const int line = peek().line;
    ExprPtr first = parse_expression(with_condition);
    if (!is_op(",")) return first;
    auto tuple = make(Expr::Kind::kTuple, line);
    tuple->args.push_back(std::move(first));
    while (skip_op(",")) {
      if (peek().kind == TokenKind::kStmtEnd || peek().kind == TokenKind::kExprEnd || is_op(")")) break;
      tuple->args.push_back(parse_expression(with_condition));
    }
    return tuple;
  }

  ExprPtr parse_expression(bool with_condition) {
    ExprPtr e = parse_or();
    if (!with_condition) return e;
    while (is_name("if")) {
      const int line = next().line;
      auto cond = make(Expr::Kind::kCondition, line);
      cond->args.push_back(std::move(e));
      cond->args.push_back(parse_or());
      cond->args.push_back(skip_name("else") ? parse_expression(true) : nullptr);
      e = std::move(cond);
    }
    return e;
  }

  ExprPtr binary(const std::string& op, ExprPtr lhs, ExprPtr rhs, int line) {
    auto e = make(Expr::Kind::kBinary, line);
    e->name = op;
    e->args.push_back(std::move(lhs));
    e->args.push_back(std::move(rhs));
    return e;
  }

  ExprPtr parse_or() {
    ExprPtr e = parse_and();
    while (is_name("or")) {
      const int line = next().line;
      e = binary("or", std::move(e), parse_and(), line);
    }
    return e;
  }
  ExprPtr parse_and() {
    ExprPtr e = parse_not();
    while (is_name("and")) {
      const int line = next().line;
      e = binary("and", std::move(e), parse_not(), line);
    }
    return e;
  }
  ExprPtr parse_not() {
    if (is_name("not")) {
      auto e = make(Expr::Kind::kUnary, next().line);
      e->name = "not";
      e->args.push_back(parse_not());
      return e;
    }
    return parse_compare();
  }
  ExprPtr parse_compare() {
    ExprPtr e = parse_math1();
    for (;;) {
      const int line = peek().line;
      std::string op;
      if (peek().kind == TokenKind::kOperator &&
          (is_op("==") || is_op("!=") || is_op("<") || is_op(">") || is_op("<=") || is_op(">="))) {
        op = next().text;
      } else if (is_name("in")) {
        ++pos_;
        op = "in";
      } else if (is_name("not") && is_name("in", 1)) {
        pos_ += 2;
        op = "not in";
      } else {
        return e;
      }
      e = binary(op, std::move(e), parse_math1(), line);
    }
  }
  ExprPtr parse_math1() {
    ExprPtr e = parse_concat();
    while (is_op("+") || is_op("-")) {
      const Token& t = next();
      e = binary(t.text, std::move(e), parse_concat(), t.line);
    }
    return e;
  }
  ExprPtr parse_concat() {
    ExprPtr e = parse_math2();
    while (is_op("~")) {
      const int line = next().line;
      e = binary("~", std::move(e), parse_math2(), line);
    }
    return e;
  }
  ExprPtr parse_math2() {
    ExprPtr e = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const Token& t = next();
      e = binary(t.text, std::move(e), parse_pow(), t.line);
    }
    return e;
  }
  ExprPtr parse_pow() {
    ExprPtr e = parse_unary(true);
    while (is_op("**")) {
      const int line = next().line;
      e = binary("**", std::move(e), parse_unary(true), line);
    }
    return e;
  }
  ExprPtr parse_unary(bool with_filter) {
    ExprPtr e;
    if (is_op("-") || is_op("+")) {
      const Token& t = next();
      e = make(Expr::Kind::kUnary, t.line);
      e->name = t.text;
      e->args.push_back(parse_unary(false));
    } else {
      e = parse_postfix(parse_primary());
    }
    return with_filter ? parse_filters(std::move(e)) : std::move(e);
  }

  ExprPtr parse_primary() {
    const Token& t = peek();
    const int line = t.line;
    if (t.kind == TokenKind::kName) {
      ++pos_;
      if (t.text == "true" || t.text == "True") return literal(Value::boolean(true), line);
      if (t.text == "false" || t.text == "False") return literal(Value::boolean(false), line);
      if (t.text == "none" || t.text == "None") return literal(Value::none(), line);
      auto e = make(Expr::Kind::kName, line);
      e->name = t.text;
      return e;
    }
    if (t.kind == TokenKind::kString) {
      std::string s;
      while (peek().kind == TokenKind::kString) s += next().text;  // adjacent literals join
      return literal(Value::string(std::move(s)), line);
    }
    if (t.kind == TokenKind::kInteger) return literal(Value::integer(next().integer), line);
    if (t.kind == TokenKind::kFloat) return literal(Value::number(next().number), line);
    if (skip_op("(")) {
      if (skip_op(")")) return make(Expr::Kind::kTuple, line);
      ExprPtr e = parse_tuple(true);
      expect_op(")");
      return e;
    }
    if (skip_op("[")) {
      auto e = make(Expr::Kind::kList, line);
      while (!skip_op("]")) {
        e->args.push_back(parse_expression(true));
        if (!is_op("]")) expect_op(",");
      }
      return e;
    }
    if (skip_op("{")) {
      auto e = make(Expr::Kind::kDict, line);
      while (!skip_op("}")) {
        e->args.push_back(parse_expression(true));
        expect_op(":");
        e->args.push_back(parse_expression(true));
        if (!is_op("}")) expect_op(",");
      }
      return e;
    }
    fail("unexpected " + describe(t) + " in expression");
  }

  ExprPtr literal(Value v, int line) {
    auto e = make(Expr::Kind::kLiteral, line);
    e->literal = std::move(v);
    return e;
  }

  ExprPtr parse_postfix(ExprPtr e) {
    for (;;) {
      const int line = peek().line;
      if (skip_op(".")) {
        auto g = make(Expr::Kind::kGetAttr, line);
        if (peek().kind == TokenKind::kInteger) g->name = next().text;
        else g->name = expect_name();
        g->args.push_back(std::move(e));
        e = std::move(g);
      } else if (skip_op("[")) {
        e = parse_subscript(std::move(e), line);
      } else if (is_op("(")) {
        e = parse_call(std::move(e), line);
      } else {
        return e;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr obj, int line) {
    ExprPtr parts[3];
    bool slice = false;
    for (int i = 0; i < 3; ++i) {
      if (!is_op(":") && !is_op("]")) parts[i] = parse_expression(true);
      if (i < 2 && skip_op(":")) {
        slice = true;
        continue;
      }
      break;
    }
    expect_op("]");
    auto e = make(slice ? Expr::Kind::kSlice : Expr::Kind::kGetItem, line);
    e->args.push_back(std::move(obj));
    if (!slice && !parts[0]) fail("empty subscript");
    for (int i = 0; i < (slice ? 3 : 1); ++i) e->args.push_back(std::move(parts[i]));
    return e;
  }

  // "(" args ")" into e->args (after whatever is already there) and e->kwargs.
  void parse_args(Expr& e) {
    expect_op("(");
    while (!skip_op(")")) {
      if (peek().kind == TokenKind::kName && is_op("=", 1)) {
        std::string key = next().text;
        ++pos_;
        e.kwargs.emplace_back(std::move(key), parse_expression(true));
      } else {
        e.args.push_back(parse_expression(true));
      }
      if (!is_op(")")) expect_op(",");
    }
  }

  ExprPtr parse_call(ExprPtr callee, int line) {
    auto e = make(Expr::Kind::kCall, line);
    e->args.push_back(std::move(callee));
    parse_args(*e);
    return e;
  }

  ExprPtr parse_filters(ExprPtr e) {
    for (;;) {
      const int line = peek().line;
      if (skip_op("|")) {
        auto f = make(Expr::Kind::kFilter, line);
        f->name = expect_name();
        f->args.push_back(std::move(e));
        if (is_op("(")) parse_args(*f);
        e = std::move(f);
      } else if (is_name("is")) {
        ++pos_;
        auto t = make(Expr::Kind::kTest, line);
        t->negated = skip_name("not");
        t->name = expect_name();
        t->args.push_back(std::move(e));
        const TokenKind k = peek().kind;
        if (is_op("(")) {
          parse_args(*t);
        } else if ((k == TokenKind::kName || k == TokenKind::kString || k == TokenKind::kInteger ||
                    k == TokenKind::kFloat || is_op("[") || is_op("{")) &&
                   !is_name("else") && !is_name("or") && !is_name("and") && !is_name("if")) {
          t->args.push_back(parse_postfix(parse_primary()));
        }
        e = std::move(t);
      } else if (is_op("(")) {
        e = parse_call(std::move(e), line);
      } else {
        return e;
      }
    }
  }

  const std::vector<Token>& toks_;
  const std::string& name_;
  size_t pos_ = 0;
};

}  // namespace

NodeList parse_template(const std::vector<Token>& tokens, const std::string& name) {
  return Parser(tokens, name).run();
}

}  // namespace loom::jinja

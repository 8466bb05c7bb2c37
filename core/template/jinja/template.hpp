// A parsed Jinja template (the subset of jinja2 that chat templates use, see parser.hpp), rendered
// with jinja2's semantics under Hugging Face's settings: trim_blocks, lstrip_blocks, loopcontrols,
// default Undefined (prints as "", is falsy; attribute access on it raises).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "core/common/error.hpp"
#include "core/template/jinja/ast.hpp"
#include "core/template/jinja/value.hpp"

namespace loom::jinja {

// What raise_exception(msg) throws from inside a template: carries msg unchanged.
class TemplateException : public Error {
 public:
  explicit TemplateException(std::string message) : Error(std::move(message)) {}
};

class Template {
 public:
  // Throws loom::Error "<name>:<line>: <problem>" when the source does not parse.
  Template(std::string_view source, std::string name);

  // Renders with `globals` as the top-level variables (functions such as raise_exception are
  // passed in by the caller as Value::function). Throws TemplateException for raise_exception and
  // loom::Error "<name>:<line>: <problem>" for anything else that fails.
  std::string render(const ValueDict& globals) const;

  const std::string& name() const { return name_; }

 private:
  std::string name_;
  std::shared_ptr<const NodeList> nodes_;
};

}  // namespace loom::jinja

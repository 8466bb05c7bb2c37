// Tokens -> statement tree. Supports the tags chat templates use: if/elif/else, for (tuple
// targets, `if` filter, else), set (name, namespace attribute, block form), macro, break and
// continue (jinja2.ext.loopcontrols), and the full expression grammar with jinja2's precedence.
#pragma once

#include <string>
#include <vector>

#include "core/template/jinja/ast.hpp"
#include "core/template/jinja/lexer.hpp"

namespace loom::jinja {

// Throws loom::Error "<name>:<line>: ..." naming what was expected and found.
NodeList parse_template(const std::vector<Token>& tokens, const std::string& name);

}  // namespace loom::jinja

// GBNF, the grammar text llama.cpp's `grammar` field takes, parsed into the grammar IR:
//   root ::= item ("," item)*      # a comment
//   item ::= [a-z]+ | "\"" [^"]* "\"" | ( "x" | "y" ){2,3} | "z"?
// Rules (names of letters, digits, '-' and '_'), alternatives '|', groups, repetition * + ?
// {m} {m,} {m,n}, string literals and character classes (ranges, '^' negation) with the escapes
// \n \r \t \\ \" \[ \] \- \xHH \uHHHH \UHHHHHHHH, '.' (any character), '#' comments. A rule ends
// at the end of its line unless a group is open or the line ends in '|'; after '::=' it may
// start on the next line. The start rule is `root`.
#pragma once

#include <string_view>

#include "core/grammar/grammar.hpp"

namespace loom {

// Throws loom::Error "line L, column C: what is wrong" on bad text, and names the rule for an
// undefined or left-recursive one.
Grammar parse_gbnf(std::string_view text);

}  // namespace loom

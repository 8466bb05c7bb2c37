// The compilers to GBNF (JSON Schema, json_object, regex, choice): documents valid under the
// source accepted, invalid ones rejected, refusals named.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/grammar/gbnf_text.hpp"
#include "core/grammar/json_schema_grammar.hpp"
#include "core/grammar/regex_grammar.hpp"
#include "tests/unit/grammar_support.hpp"

namespace loom::test {
namespace {

using OJson = nlohmann::ordered_json;

std::shared_ptr<const Grammar> schema(const char* text) { return gbnf(json_schema_grammar(OJson::parse(text))); }

std::string schema_error(const char* text) {
  return error_of([&] { json_schema_grammar(OJson::parse(text)); });
}

TEST(GrammarJsonSchema, ObjectWithRequiredOptionalAndBounds) {
  const auto g = schema(R"({"type": "object", "properties": {
      "name": {"type": "string", "maxLength": 4},
      "age": {"type": "integer", "minimum": 0, "maximum": 120},
      "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 2},
      "ok": {"type": "boolean"}},
    "required": ["name", "age"], "additionalProperties": false})");
  EXPECT_TRUE(full_match(g, R"({"name":"Bo","age":42})"));
  EXPECT_TRUE(full_match(g, R"({"name":"","age":120,"tags":["a","b"],"ok":true})"));
  EXPECT_TRUE(full_match(g, "{ \"name\": \"\\u00e9\\n\",\n  \"age\": 0, \"ok\": false }"));
  EXPECT_TRUE(full_match(g, R"({"name":"Bo","age":7,"tags":[]})"));
  EXPECT_FALSE(full_match(g, R"({"name":"Bo"})"));                 // age is required
  EXPECT_FALSE(full_match(g, R"({"name":"Bo","age":121})"));       // above maximum
  EXPECT_FALSE(full_match(g, R"({"name":"Bo","age":-1})"));        // below minimum
  EXPECT_FALSE(full_match(g, R"({"name":"Bo","age":042})"));       // not JSON
  EXPECT_FALSE(full_match(g, R"({"name":"Bobby","age":1})"));      // maxLength
  EXPECT_FALSE(full_match(g, R"({"name":"Bo","age":1,"x":1})"));   // additionalProperties
  EXPECT_FALSE(full_match(g, R"({"name":"Bo","age":1,"tags":["c"]})"));
  EXPECT_FALSE(full_match(g, R"({"name":"Bo","age":1,"tags":["a","a","a"]})"));
  EXPECT_FALSE(full_match(g, R"({"name":"Bo","age":1,})"));
  EXPECT_FALSE(full_match(g, R"({"age":1,"name":"Bo"})"));  // properties are written in schema order
}

TEST(GrammarJsonSchema, AllOptionalAndAdditionalProperties) {
  const auto g = schema(R"({"properties": {"a": {"type": "integer"}, "b": {"type": "null"}}, "additionalProperties": {"type": "boolean"}})");
  EXPECT_TRUE(full_match(g, "{}"));
  EXPECT_TRUE(full_match(g, R"({"b":null})"));
  EXPECT_TRUE(full_match(g, R"({"a":-5,"b":null,"zz":true})"));
  EXPECT_TRUE(full_match(g, R"({"zz":true,"y":false})"));
  EXPECT_FALSE(full_match(g, R"({"zz":1})"));
  EXPECT_FALSE(full_match(g, R"({"b":null,"a":1})"));
}

TEST(GrammarJsonSchema, IntegerRangesAreExact) {
  const std::vector<std::pair<std::optional<int64_t>, std::optional<int64_t>>> cases = {
      {0, 9}, {5, 123}, {-37, 250}, {-250, -37}, {17, std::nullopt}, {-17, std::nullopt},
      {std::nullopt, 88}, {std::nullopt, -88}, {100, 100}, {0, 0}};
  for (const auto& [lo, hi] : cases) {
    OJson s = {{"type", "integer"}};
    if (lo) s["minimum"] = *lo;
    if (hi) s["maximum"] = *hi;
    const auto g = gbnf(json_schema_grammar(s));
    for (int v = -400; v <= 400; ++v) {
      const bool in = (!lo || v >= *lo) && (!hi || v <= *hi);
      ASSERT_EQ(full_match(g, std::to_string(v)), in) << s.dump() << " v=" << v;
    }
    EXPECT_FALSE(full_match(g, "-0"));
    EXPECT_FALSE(full_match(g, "01"));
  }
  const auto ex = schema(R"({"type": "integer", "exclusiveMinimum": 3, "exclusiveMaximum": 6})");
  EXPECT_FALSE(full_match(ex, "3"));
  EXPECT_TRUE(full_match(ex, "4"));
  EXPECT_TRUE(full_match(ex, "5"));
  EXPECT_FALSE(full_match(ex, "6"));
}

// Every decimal text -?I(.F)? with I up to 30 and F up to three digits (trailing zeros too) is
// matched exactly when its value is within the bounds, against values compared in thousandths.
TEST(GrammarJsonSchema, NumberRangesAreExactOnTheDecimalText) {
  struct Case {
    const char* schema;
    std::optional<int64_t> lo, hi;  // in thousandths
    bool lo_open = false, hi_open = false;
  };
  const Case cases[] = {
      {R"({"type": "number", "minimum": 0.25, "maximum": 3.5})", 250, 3500},
      {R"({"type": "number", "exclusiveMinimum": 0.25, "exclusiveMaximum": 3.5})", 250, 3500, true, true},
      {R"({"type": "number", "minimum": -2.75, "maximum": -0.5})", -2750, -500},
      {R"({"type": "number", "minimum": -1.5, "maximum": 2.05})", -1500, 2050},
      {R"({"type": "number", "minimum": 0})", 0, std::nullopt},
      {R"({"type": "number", "exclusiveMinimum": 0})", 0, std::nullopt, true},
      {R"({"type": "number", "maximum": -0.001})", std::nullopt, -1},
      {R"({"type": "number", "exclusiveMaximum": 10})", std::nullopt, 10000, false, true},
      {R"({"type": "number", "minimum": 1, "maximum": 1})", 1000, 1000},
      {R"({"type": "number", "exclusiveMinimum": 0, "maximum": 0.05})", 0, 50, true},
      {R"({"type": "number", "minimum": -0.125, "exclusiveMaximum": 0})", -125, 0, false, true},
      {R"({"type": "number", "minimum": 12.5, "exclusiveMinimum": 12.5, "maximum": 27.125, "exclusiveMaximum": 30})", 12500,
       27125, true},
  };
  for (const Case& c : cases) {
    const auto g = schema(c.schema);
    for (int neg = 0; neg < 2; ++neg) {
      for (int i = 0; i <= 30; ++i) {
        for (int len = 0; len <= 3; ++len) {
          const int count = len == 0 ? 1 : (len == 1 ? 10 : len == 2 ? 100 : 1000);
          for (int f = 0; f < count; ++f) {
            std::string frac = len ? std::to_string(f) : "";
            frac.insert(0, static_cast<size_t>(len) - frac.size(), '0');
            const int64_t thousandths = (i * 1000 + (len ? f * (len == 1 ? 100 : len == 2 ? 10 : 1) : 0)) * (neg ? -1 : 1);
            if (neg && thousandths == 0) continue;  // -0: the grammar writes zero unsigned
            const std::string text = (neg ? "-" : "") + std::to_string(i) + (len ? "." + frac : "");
            const bool in = (!c.lo || (c.lo_open ? thousandths > *c.lo : thousandths >= *c.lo)) &&
                            (!c.hi || (c.hi_open ? thousandths < *c.hi : thousandths <= *c.hi));
            ASSERT_EQ(full_match(g, text), in) << c.schema << " " << text;
          }
        }
      }
    }
    EXPECT_FALSE(full_match(g, "1e0")) << c.schema;  // bounded numbers have no exponent
  }
  // Fractions longer than the bound's, and bounds written with exponents.
  const auto tight = schema(R"({"type": "number", "minimum": 0.1234567, "maximum": 1.5e1})");
  EXPECT_FALSE(full_match(tight, "0.1234566999"));
  EXPECT_TRUE(full_match(tight, "0.1234567"));
  EXPECT_TRUE(full_match(tight, "0.12345670001"));
  EXPECT_TRUE(full_match(tight, "15"));
  EXPECT_TRUE(full_match(tight, "15.000"));
  EXPECT_FALSE(full_match(tight, "15.0000001"));
}

TEST(GrammarJsonSchema, PrefixItemsAreTuples) {
  const auto closed = schema(R"({"type": "array", "prefixItems": [{"type": "integer"}, {"enum": ["a", "b"]}],
                                 "items": false, "minItems": 1})");
  EXPECT_TRUE(full_match(closed, "[1]"));
  EXPECT_TRUE(full_match(closed, R"([1, "a"])"));
  EXPECT_FALSE(full_match(closed, "[]"));
  EXPECT_FALSE(full_match(closed, R"([1, "c"])"));
  EXPECT_FALSE(full_match(closed, R"([1, "a", 2])"));
  EXPECT_FALSE(full_match(closed, R"(["a"])"));
  const auto open = schema(R"({"prefixItems": [{"type": "integer"}, {"enum": ["a", "b"]}], "items": {"type": "boolean"},
                               "maxItems": 3})");
  EXPECT_TRUE(full_match(open, "[]"));
  EXPECT_TRUE(full_match(open, R"([1, "b", true])"));
  EXPECT_FALSE(full_match(open, R"([1, "b", true, false])"));
  EXPECT_FALSE(full_match(open, R"([1, "b", 3])"));
  const auto any_rest = schema(R"({"prefixItems": [{"const": 0}], "minItems": 3})");
  EXPECT_FALSE(full_match(any_rest, "[0, 1]"));
  EXPECT_TRUE(full_match(any_rest, R"([0, 1, {"x": null}])"));
  EXPECT_FALSE(full_match(any_rest, "[1, 1, 1]"));
  EXPECT_EQ(schema_error(R"({"prefixItems": [{}], "items": false, "minItems": 2})"),
            "minItems: is above the number of items the schema allows");
}

TEST(GrammarJsonSchema, RefsDefsAnyOfConstAndFormats) {
  const auto tree = schema(R"({"$ref": "#/$defs/node", "$defs": {"node": {"type": "object",
      "properties": {"v": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
      "required": ["v"], "additionalProperties": false}}})");
  EXPECT_TRUE(full_match(tree, R"({"v":1,"kids":[{"v":2},{"v":3,"kids":[{"v":4}]}]})"));
  EXPECT_FALSE(full_match(tree, R"({"v":1,"kids":[{"w":2}]})"));
  const auto any = schema(R"({"anyOf": [{"type": "string"}, {"type": "null"}, {"const": {"k": [1]}}]})");
  EXPECT_TRUE(full_match(any, "\"x\""));
  EXPECT_TRUE(full_match(any, "null"));
  EXPECT_TRUE(full_match(any, R"({"k":[1]})"));
  EXPECT_FALSE(full_match(any, "1"));
  const auto types = schema(R"({"type": ["integer", "boolean"]})");
  EXPECT_TRUE(full_match(types, "12"));
  EXPECT_TRUE(full_match(types, "true"));
  EXPECT_FALSE(full_match(types, "1.5"));
  const auto date = schema(R"({"type": "string", "format": "date-time"})");
  EXPECT_TRUE(full_match(date, "\"2024-02-29T23:59:60Z\"") == false);  // seconds go to 59
  EXPECT_TRUE(full_match(date, "\"2024-02-29T23:59:59.5+01:00\""));
  EXPECT_FALSE(full_match(date, "\"2024-13-01T00:00:00Z\""));
  const auto uuid = schema(R"({"type": "string", "format": "uuid"})");
  EXPECT_TRUE(full_match(uuid, "\"123e4567-e89b-12d3-a456-426614174000\""));
  EXPECT_FALSE(full_match(uuid, "\"123e4567-e89b-12d3-a456-42661417400\""));
  const auto email = schema(R"({"type": "string", "format": "email"})");
  EXPECT_TRUE(full_match(email, "\"a.b@example.com\""));
  EXPECT_FALSE(full_match(email, "\"a.b@example\""));
  const auto num = schema(R"({"type": "number"})");
  EXPECT_TRUE(full_match(num, "-0.5e+10"));
  EXPECT_FALSE(full_match(num, ".5"));
}

TEST(GrammarJsonSchema, PatternsAndLengths) {
  const auto anchored = schema(R"({"type": "string", "pattern": "^[a-z]{2}\\d$"})");
  EXPECT_TRUE(full_match(anchored, "\"ab1\""));
  EXPECT_FALSE(full_match(anchored, "\"ab\""));
  EXPECT_FALSE(full_match(anchored, "\"xab1\""));
  const auto search = schema(R"({"type": "string", "pattern": "q\"u"})");
  EXPECT_TRUE(full_match(search, "\"xxq\\\"uyy\""));
  EXPECT_FALSE(full_match(search, "\"xxquyy\""));
  const auto len = schema(R"({"type": "string", "minLength": 2, "maxLength": 3})");
  EXPECT_FALSE(full_match(len, "\"a\""));
  EXPECT_TRUE(full_match(len, "\"a\\\"\""));
  EXPECT_TRUE(full_match(len, "\"\xC3\xA9\xC3\xA9\xC3\xA9\""));  // characters, not bytes
  EXPECT_FALSE(full_match(len, "\"abcd\""));
}

// allOf merges its members (and the keywords beside it) into one schema; keywords beside
// anyOf/oneOf/$ref apply to every alternative.
TEST(GrammarJsonSchema, AllOfMergesItsMembers) {
  const auto both = schema(R"({"$defs": {"named": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 3}},
      "required": ["name"]}},
    "allOf": [{"$ref": "#/$defs/named"},
              {"properties": {"age": {"type": "integer", "minimum": 0}, "name": {"minLength": 2}}, "required": ["age"]}],
    "properties": {"age": {"maximum": 9}}})");
  EXPECT_TRUE(full_match(both, R"({"name":"Bo","age":9})"));
  EXPECT_FALSE(full_match(both, R"({"name":"Bo"})"));            // age: required by the second member
  EXPECT_FALSE(full_match(both, R"({"age":3})"));                // name: required by the first
  EXPECT_FALSE(full_match(both, R"({"name":"B","age":3})"));     // minLength of the second, on the first's name
  EXPECT_FALSE(full_match(both, R"({"name":"Bobo","age":3})"));  // maxLength of the first
  EXPECT_FALSE(full_match(both, R"({"name":"Bo","age":10})"));   // maximum beside the allOf
  EXPECT_FALSE(full_match(both, R"({"name":"Bo","age":-1})"));
  // A closed member admits only its own properties; the other member's extra one is dropped.
  const auto closed = schema(R"({"allOf": [
      {"properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "additionalProperties": false},
      {"properties": {"b": {"minimum": 5}, "c": {"type": "string"}}}]})");
  EXPECT_TRUE(full_match(closed, R"({"a":1,"b":5})"));
  EXPECT_FALSE(full_match(closed, R"({"b":4})"));
  EXPECT_FALSE(full_match(closed, R"({"a":1,"c":"x"})"));
  EXPECT_FALSE(full_match(closed, R"({"a":1,"z":2})"));
  // Types intersect (number and integer: integer), enums intersect, bounds tighten.
  const auto types = schema(R"({"allOf": [{"type": ["number", "string"]}, {"type": "integer", "maximum": 20}, {"minimum": 10}]})");
  EXPECT_TRUE(full_match(types, "15"));
  EXPECT_FALSE(full_match(types, "15.5"));
  EXPECT_FALSE(full_match(types, "\"x\""));
  EXPECT_FALSE(full_match(types, "9"));
  EXPECT_FALSE(full_match(types, "21"));
  const auto enums = schema(R"({"allOf": [{"enum": ["a", "b", "c"]}, {"enum": ["c", "b", "d"]}]})");
  EXPECT_TRUE(full_match(enums, "\"b\""));
  EXPECT_TRUE(full_match(enums, "\"c\""));
  EXPECT_FALSE(full_match(enums, "\"a\""));
  EXPECT_FALSE(full_match(enums, "\"d\""));
  // An anyOf inside allOf, and keywords beside an anyOf, are distributed over its alternatives.
  const auto distributed = schema(R"({"type": "object", "properties": {"k": {"type": "integer"}}, "required": ["k"],
      "additionalProperties": false,
      "anyOf": [{"properties": {"k": {"maximum": 1}}}, {"properties": {"k": {"minimum": 100}}}]})");
  EXPECT_TRUE(full_match(distributed, R"({"k":1})"));
  EXPECT_TRUE(full_match(distributed, R"({"k":100})"));
  EXPECT_FALSE(full_match(distributed, R"({"k":50})"));
  EXPECT_FALSE(full_match(distributed, R"({})"));
  const auto nested = schema(R"({"allOf": [{"type": "string"}, {"anyOf": [{"maxLength": 1}, {"pattern": "^z+$"}]}]})");
  EXPECT_TRUE(full_match(nested, "\"a\""));
  EXPECT_TRUE(full_match(nested, "\"zzz\""));
  EXPECT_FALSE(full_match(nested, "\"ab\""));
  EXPECT_FALSE(full_match(nested, "1"));
  // Keywords beside a $ref apply too.
  const auto ref = schema(R"({"$defs": {"n": {"type": "integer"}}, "$ref": "#/$defs/n", "minimum": 3})");
  EXPECT_TRUE(full_match(ref, "3"));
  EXPECT_FALSE(full_match(ref, "2"));
}

TEST(GrammarJsonSchema, AllOfThatCannotBeMergedIsRefusedNamingThePath) {
  EXPECT_EQ(schema_error(R"({"allOf": [{"type": "string"}, {"type": "integer"}]})"),
            "allOf[1].type: no type satisfies every allOf member");
  EXPECT_EQ(schema_error(R"({"allOf": [{"enum": [1, 2]}, {"enum": [3]}]})"),
            "allOf[1].enum: no value is in every allOf member's enum");
  EXPECT_EQ(schema_error(R"({"allOf": [{"type": "string", "pattern": "a"}, {"pattern": "b"}]})"),
            "allOf[1].pattern: two different values cannot be combined (allOf)");
  EXPECT_EQ(schema_error(R"({"allOf": [{"properties": {"a": {}}, "additionalProperties": false},
                                        {"properties": {"b": {}}, "required": ["b"]}]})"),
            "allOf[1].required: 'b' is required by one allOf member and excluded by another's additionalProperties: false");
  EXPECT_EQ(schema_error(R"({"allOf": []})"), "allOf: must be a non-empty array");
  EXPECT_EQ(schema_error(R"({"allOf": [true, false]})"), "schema: the schema matches no value");
  // A reference cycle through allOf ends with an error, not a stack overflow.
  const std::string cycle = schema_error(R"({"$defs": {"x": {"allOf": [{"$ref": "#/$defs/x"}]}}, "$ref": "#/$defs/x", "type": "string"})");
  EXPECT_EQ(cycle.substr(0, 18), "allOf[0].allOf[0].") << cycle;
  EXPECT_EQ(cycle.substr(cycle.size() - 55), ": allOf/anyOf/$ref nest too deeply (a reference cycle?)") << cycle;
}

TEST(GrammarJsonSchema, JsonObject) {
  const auto g = gbnf(json_object_grammar());
  EXPECT_TRUE(full_match(g, R"({"a": [1, 2.5, {"b": null}], "c": "d\u0041"})"));
  EXPECT_TRUE(full_match(g, "{}"));
  EXPECT_FALSE(full_match(g, "[1]"));
  EXPECT_FALSE(full_match(g, R"({"a": tru})"));
  EXPECT_FALSE(full_match(g, R"({"a" 1})"));
}

TEST(GrammarJsonSchema, RefusalsNameTheKeyword) {
  EXPECT_EQ(schema_error(R"({"type": "string", "foo": 1})"), "schema: unsupported JSON Schema keyword 'foo'");
  EXPECT_EQ(schema_error(R"({"properties": {"a": {"type": "array", "uniqueItems": true}}})"),
            "properties.a: unsupported JSON Schema keyword 'uniqueItems'");
  EXPECT_EQ(schema_error(R"({"type": "number", "multipleOf": 0.5})"),
            "schema: unsupported JSON Schema keyword 'multipleOf'");
  EXPECT_EQ(schema_error(R"({"type": "number", "minimum": 1e-30})"),
            "minimum: the bound 1e-30 has more than 18 integer or fraction digits");
  EXPECT_EQ(schema_error(R"({"type": "number", "minimum": 2.5, "exclusiveMaximum": 2.5})"),
            "schema: the number bounds leave no value");
  EXPECT_EQ(schema_error(R"({"$ref": "#/$defs/missing"})"), "$ref: '#/$defs/missing' does not point into the schema");
  EXPECT_EQ(schema_error(R"({"$ref": "http://x/y.json"})"),
            "$ref: only references inside the schema ('#...') are supported, got 'http://x/y.json'");
  EXPECT_EQ(schema_error(R"({"type": "string", "format": "ipv4"})"), "format: unsupported string format 'ipv4'");
  EXPECT_EQ(schema_error(R"({"type": "widget"})"), "type: unknown type 'widget'");
  EXPECT_EQ(schema_error(R"({"type": "string", "pattern": "(a)\\1"})"),
            "pattern: regex offset 3: backreference '\\1' is not supported");
  EXPECT_EQ(schema_error(R"({"required": ["x"], "properties": {}})"), "required: 'x' is required but not in properties");
  EXPECT_EQ(schema_error("false"), "schema: the schema 'false' matches no value");
  EXPECT_EQ(schema_error(R"({"not": {}})"), "schema: unsupported JSON Schema keyword 'not'");
}

TEST(GrammarRegex, FullMatchSemantics) {
  auto re = [](const char* r) { return gbnf(regex_grammar(r)); };
  EXPECT_TRUE(full_match(re("a|bc"), "bc"));
  EXPECT_FALSE(full_match(re("a|bc"), "abc"));
  EXPECT_TRUE(full_match(re("[a-c]+x?"), "abcax"));
  EXPECT_FALSE(full_match(re("[a-c]+x?"), "x"));
  EXPECT_TRUE(full_match(re("\\d{3}-\\d{2,}"), "123-4567"));
  EXPECT_FALSE(full_match(re("\\d{3}-\\d{2,}"), "123-4"));
  EXPECT_TRUE(full_match(re("(ab)*c"), "ababc"));
  EXPECT_TRUE(full_match(re("(?:ab)+?c"), "abc"));
  EXPECT_TRUE(full_match(re("(?P<n>x)(?<m>y)"), "xy"));
  EXPECT_TRUE(full_match(re("^a.c$"), "a\xC3\xA9" "c"));
  EXPECT_FALSE(full_match(re("a.c"), "a\nc"));
  EXPECT_TRUE(full_match(re("[^a-z\\d]\\s\\W"), "A\t!"));
  EXPECT_FALSE(full_match(re("[^a-z\\d]"), "5"));
  EXPECT_TRUE(full_match(re("\\.\\*\\x41\\u00e9[\\]-]{2}"), ".*A\xC3\xA9]-"));
  EXPECT_TRUE(full_match(re("a{,2}"), "a{,2}"));  // not a quantifier: literal, as in Python
  EXPECT_TRUE(full_match(re("(|x)y"), "y"));
}

TEST(GrammarRegex, RefusalsNameTheConstruct) {
  auto err = [](const char* r) { return error_of([&] { regex_grammar(r); }); };
  EXPECT_EQ(err("(a)\\1"), "regex offset 3: backreference '\\1' is not supported");
  EXPECT_EQ(err("(?=a)b"), "regex offset 0: lookahead '(?=' is not supported");
  EXPECT_EQ(err("(?<!a)b"), "regex offset 0: lookbehind '(?<!' is not supported");
  EXPECT_EQ(err("a\\bc"), "regex offset 1: word boundary '\\b' is not supported");
  EXPECT_EQ(err("a^b"), "regex offset 1: '^' is only supported at the start of the regex");
  EXPECT_EQ(err("a$b"), "regex offset 1: '$' is only supported at the end of the regex");
  EXPECT_EQ(err("(?i)a"), "regex offset 0: inline flags or group extensions '(?i' are not supported");
  EXPECT_EQ(err("(ab"), "regex offset 0: unbalanced '('");
  EXPECT_EQ(err("ab)"), "regex offset 2: unbalanced ')'");
  // Found by fuzz_grammar: bounds were passed to GBNF unchecked, so the compiled grammar did not parse.
  EXPECT_EQ(err("(ab|cd){4,3}x?"), "regex offset 7: min repeat greater than max repeat in '{4,3}'");
  EXPECT_EQ(err("a{10001}"), "regex offset 1: repetition count above 10000");
  EXPECT_EQ(err("a{2,99999999999999999999}"), "regex offset 1: repetition count above 10000");
  EXPECT_NO_THROW(gbnf(regex_grammar("a{3,3}b{0,}c{10000}")));
  // Also found by fuzz_grammar: a group that matches only "" under a quantifier.
  EXPECT_TRUE(full_match(gbnf(regex_grammar("a()?(|)*b(()){2}")), "ab"));
  EXPECT_TRUE(full_match(gbnf(regex_grammar("(\\(|\\))?x")), "(x"));
  EXPECT_EQ(err("*a"), "regex offset 0: nothing to repeat");
  EXPECT_EQ(err("a**"), "regex offset 0: nothing to repeat");
  EXPECT_EQ(err("a++"), "regex offset 2: possessive quantifiers are not supported");
  EXPECT_EQ(err("[b-a]"), "regex offset 0: character range is out of order");
  EXPECT_EQ(err("[ab"), "regex offset 0: unterminated character class");
}

// Found by fuzz_grammar: unbounded repetition of an atom that also matches "" was written as
// GBNF x*, which is left recursive, so the request got a 400 for a regex Python accepts.
TEST(GrammarRegex, NullableAtomsRepeatWithoutLeftRecursion) {
  auto re = [](const char* r) { return gbnf(regex_grammar(r)); };
  const auto star = re("(|cd)*");
  EXPECT_TRUE(full_match(star, ""));
  EXPECT_TRUE(full_match(star, "cdcdcd"));
  EXPECT_FALSE(full_match(star, "cdc"));
  const auto plus = re("(|cd)+");
  EXPECT_TRUE(full_match(plus, ""));
  EXPECT_TRUE(full_match(plus, "cd"));
  EXPECT_FALSE(full_match(plus, "dc"));
  const auto at_least_two = re("(|cd){2,}");
  EXPECT_TRUE(full_match(at_least_two, ""));
  EXPECT_TRUE(full_match(at_least_two, "cdcdcdcd"));
  EXPECT_FALSE(full_match(at_least_two, "c"));
  // (c?d?)* is any string of c and d: each item of the concatenation alone is repeated too.
  const auto cd = re("(c?d?)*");
  for (const char* s : {"", "c", "d", "dc", "ccdddc", "dcdcdc"}) EXPECT_TRUE(full_match(cd, s)) << s;
  EXPECT_FALSE(full_match(cd, "cx"));
  const auto abc = re("a(b|)*c");
  EXPECT_TRUE(full_match(abc, "ac"));
  EXPECT_TRUE(full_match(abc, "abbbc"));
  EXPECT_FALSE(full_match(abc, "abcb"));
  // Nested and mixed: (a*b?)+ is (a|b)*; ((x?)*y?){3,} is (x|y)*; (()|a?){0,} is a*.
  const auto ab = re("(a*b?)+z");
  for (const char* s : {"z", "az", "bz", "babbaz"}) EXPECT_TRUE(full_match(ab, s)) << s;
  EXPECT_FALSE(full_match(ab, "zz"));
  const auto xy = re("((x?)*y?){3,}");
  for (const char* s : {"", "yx", "xxyyx"}) EXPECT_TRUE(full_match(xy, s)) << s;
  const auto a = re("(()|a?){0,}");
  EXPECT_TRUE(full_match(a, "aaa"));
  EXPECT_FALSE(full_match(a, "b"));
  // A bound of zero repeats nothing: (a?){0}b* is b*, and (a?){0}* as a whole matches only "".
  EXPECT_TRUE(full_match(re("((a?){0})*b"), "b"));
  EXPECT_FALSE(full_match(re("((a?){0})*b"), "ab"));
  // The same inside a JSON Schema pattern (search semantics, in a JSON string).
  EXPECT_TRUE(full_match(schema(R"({"type": "string", "pattern": "^(|\\d)*$"})"), "\"123\""));
  EXPECT_FALSE(full_match(schema(R"({"type": "string", "pattern": "^(|\\d)*$"})"), "\"12a\""));
}

// Found by fuzz_grammar: an F6 lead byte decoded to a code point past U+10FFFF, which the regex
// compiler wrote as a class the GBNF parser then refused. Malformed UTF-8 is refused where read.
TEST(GrammarRegex, MalformedUtf8IsRefusedWhereRead) {
  auto err = [](const std::string& r) { return error_of([&] { regex_grammar(r); }); };
  EXPECT_EQ(err("a[\xF6\x91\x8A\x9B]"), "regex offset 2: invalid UTF-8");  // past U+10FFFF
  EXPECT_EQ(err("ab\xC0\xAF"), "regex offset 2: invalid UTF-8");  // overlong '/'
  EXPECT_EQ(err("\xED\xA0\x80"), "regex offset 0: invalid UTF-8");  // a surrogate
  EXPECT_EQ(error_of([] { gbnf("root ::= \"\xF4\x90\x80\x80\""); }), "line 1, column 11: invalid UTF-8 in the grammar text");
  // Also found by fuzz_grammar: a \u escape of a lone surrogate became bytes no UTF-8 holds. A
  // pair is the character it encodes, as in JSON and ECMAScript.
  EXPECT_EQ(err("ab\\udddd"), "regex offset 2: a lone surrogate escape is not a character");
  EXPECT_EQ(err("[\\ud83dx]"), "regex offset 1: a lone surrogate escape is not a character");
  EXPECT_EQ(err("\\ud83d\\u0041"), "regex offset 0: a lone surrogate escape is not a character");
  EXPECT_TRUE(full_match(gbnf(regex_grammar("\\ud83d\\ude00+")), "\xF0\x9F\x98\x80\xF0\x9F\x98\x80"));
  EXPECT_TRUE(full_match(gbnf(regex_grammar("[\\ud83d\\ude00a]")), "\xF0\x9F\x98\x80"));
  // The largest code point and the first of each length still read.
  EXPECT_TRUE(full_match(gbnf(regex_grammar("\xF4\x8F\xBF\xBF\xC2\x80\xE0\xA0\x80")),
                         "\xF4\x8F\xBF\xBF\xC2\x80\xE0\xA0\x80"));
}

TEST(GrammarChoice, ExactlyOneOfTheStrings) {
  const auto g = gbnf(choice_grammar({"yes", "no", "maybe \"so\"", "\xC3\xA9"}));
  EXPECT_TRUE(full_match(g, "yes"));
  EXPECT_TRUE(full_match(g, "maybe \"so\""));
  EXPECT_TRUE(full_match(g, "\xC3\xA9"));
  EXPECT_FALSE(full_match(g, "ye"));
  EXPECT_FALSE(full_match(g, "yesno"));
  EXPECT_EQ(error_of([] { choice_grammar({}); }), "the choice list is empty");
}

}  // namespace
}  // namespace loom::test

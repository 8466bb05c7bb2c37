// The Jinja interpreter construct by construct, with the exact text jinja2 gives under Hugging
// Face's settings (trim_blocks, lstrip_blocks), and its errors.
#include <gtest/gtest.h>

#include "core/template/chat_template.hpp"
#include "core/template/jinja/template.hpp"

namespace loom::jinja {
namespace {

std::string render(const std::string& source, const std::string& vars_json = "{}") {
  ValueDict globals;
  const auto vars = nlohmann::ordered_json::parse(vars_json);
  for (auto it = vars.begin(); it != vars.end(); ++it) globals.set(it.key(), Value::from_json(it.value()));
  return Template(source, "t").render(globals);
}

struct Case {
  const char* source;
  const char* vars;
  const char* expected;
};

TEST(Jinja, Constructs) {
  const Case cases[] = {
      {"a{# note #}b", "{}", "ab"},
      {"{{ 1 + 2 * 3 }}|{{ 7 // 2 }}|{{ -7 // 2 }}|{{ 7 % 3 }}|{{ 1 / 2 }}|{{ 2 ** 3 }}", "{}", "7|3|-4|1|0.5|8"},
      {"{{ 'a' ~ 1 ~ none }}|{{ 'x' * 3 }}", "{}", "a1None|xxx"},
      {"{{ x }}|{{ x is defined }}|{{ y is defined }}", "{\"x\": 1}", "1|True|False"},
      {"{{ undefined_thing }}|{{ not missing }}", "{}", "|True"},
      {"{{ [1, 'a', none, true] }}|{{ {'k': 'v', 'a': 2} }}", "{}", "[1, 'a', None, True]|{'k': 'v', 'a': 2}"},
      {"{{ 1.0 }} {{ 0.1 + 0.2 }} {{ 1e20 }} {{ 2.5e-05 }}", "{}", "1.0 0.30000000000000004 1e+20 2.5e-05"},
      {"{{ xs[0] }}{{ xs[-1] }}{{ xs[1:] }}{{ xs[::-1] }}{{ xs[:-1] }}{{ 'héllo'[1:3] }}", "{\"xs\": [1, 2, 3]}",
       "13[2, 3][3, 2, 1][1, 2]él"},
      {"{{ m.role }}{{ m['content'] }}{{ m.missing }}", "{\"m\": {\"role\": \"u\", \"content\": \"c\"}}", "uc"},
      {"{{ 'b' in 'abc' }}{{ 2 not in [1, 2] }}{{ 'k' in {'k': 1} }}", "{}", "TrueFalseTrue"},
      {"{{ 'y' if c else 'n' }}{{ 'y' if not c else 'n' }}{{ 'z' if c }}", "{\"c\": false}", "ny"},
      {"{{ a and b }}|{{ a or b }}|{{ 1 < 2 <= 2 }}|{{ 1 == 1.0 }}", "{\"a\": 0, \"b\": \"x\"}", "0|x|True|True"},
      {"{% if a %}A{% elif b %}B{% else %}C{% endif %}", "{\"a\": false, \"b\": 1}", "B"},
      {"{% for x in xs %}{{ loop.index0 }}{{ loop.index }}{{ loop.first }}{{ loop.last }}{{ loop.length }};{% endfor %}",
       "{\"xs\": [5, 6]}", "01TrueFalse2;12FalseTrue2;"},
      {"{% for x in xs if x > 1 %}{{ x }}{{ loop.index }}{% else %}none{% endfor %}", "{\"xs\": [1, 2, 3]}", "2132"},
      {"{% for x in [] %}x{% else %}empty{% endfor %}", "{}", "empty"},
      {"{% for k, v in d | items %}{{ k }}={{ v }},{% endfor %}{% for k, v in d.items() %}{{ k }}{% endfor %}",
       "{\"d\": {\"b\": 1, \"a\": 2}}", "b=1,a=2,ba"},
      {"{% for x in xs %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 4 %}{% break %}{% endif %}{{ x }}{% endfor %}",
       "{\"xs\": [1, 2, 3, 4, 5]}", "13"},
      {"{% set x = 1 %}{% for i in [1] %}{% set x = 2 %}{{ x }}{% endfor %}{{ x }}", "{}", "21"},
      {"{% set ns = namespace(n=0) %}{% for i in [1, 2, 3] %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}", "{}", "6"},
      {"{% set ns = namespace() %}{% set ns.v = 'a' %}{{ ns.v }}", "{}", "a"},
      {"{% set a, b = [1, 2] %}{{ b }}{{ a }}", "{}", "21"},
      {"{{ d | items | list }}{{ (1,) }}{{ (1, 'a') }}", "{\"d\": {\"b\": 1, \"a\": 2}}", "[('b', 1), ('a', 2)](1,)(1, 'a')"},
      {"{% set block %}in {{ 1 }}{% endset %}[{{ block }}]", "{}", "[in 1]"},
      {"{% macro greet(name, p='!') %}hi {{ name }}{{ p }}{% endmacro %}{{ greet('a') }} {{ greet('b', p='?') }}", "{}",
       "hi a! hi b?"},
      // whitespace control: trim_blocks, lstrip_blocks, '-' and '+'
      {"  {% if true %}\n  x\n  {% endif %}\n", "{}", "  x\n"},
      {"a  {%- if true -%}  \n b {%- endif %}", "{}", "ab"},
      {"a\n  {%+ if true %}b{% endif %}", "{}", "a\n  b"},
      {"{{ 'a' }}\n{{- ' b' -}}\n  c", "{}", "a bc"},
      {"x {# c #}\ny", "{}", "x y"},
      {"line\n", "{}", "line"},
      // filters
      {"[{{ '  a b \n' | trim }}]{{ 'ab' | upper }}{{ 'AB' | lower }}{{ 'hello world' | title }}", "{}", "[a b]ABabHello World"},
      {"{{ xs | length }}{{ 'héé' | length }}{{ xs | first }}{{ xs | last }}{{ xs | join('-') }}", "{\"xs\": [1, 2, 3]}",
       "33131-2-3"},
      {"{{ u | default('d') }}{{ '' | default('e', true) }}{{ 0 | default(5) }}", "{}", "de0"},
      {"{{ 'aXbX' | replace('X', '-') }}{{ '12' | int + 1 }}{{ 'x' | int }}{{ 3 | string ~ 'a' }}", "{}", "a-b-130" "3a"},
      {"{{ ms | selectattr('role', 'equalto', 'user') | map(attribute='c') | list }}|"
       "{{ ms | rejectattr('role', 'equalto', 'user') | list | length }}|{{ ['a', 'b'] | reject('equalto', 'a') | list }}",
       "{\"ms\": [{\"role\": \"user\", \"c\": 1}, {\"role\": \"bot\", \"c\": 2}, {\"role\": \"user\", \"c\": 3}]}",
       "[1, 3]|1|['b']"},
      {"{{ d | tojson }}|{{ [1, 'é<>&\\'', none, true, 1.5] | tojson }}", "{\"d\": {\"z\": 1, \"a\": [\"x\\ny\"]}}",
       "{\"z\": 1, \"a\": [\"x\\ny\"]}|[1, \"é<>&'\", null, true, 1.5]"},
      {"{{ d | tojson(indent=2) }}", "{\"d\": {\"a\": [1, 2], \"b\": {}}}", "{\n  \"a\": [\n    1,\n    2\n  ],\n  \"b\": {}\n}"},
      // tests
      {"{{ s is string }}{{ 1 is number }}{{ d is mapping }}{{ xs is iterable }}{{ n is none }}{{ f is false }}"
       "{{ 3 is odd }}{{ 4 is divisibleby 2 }}{{ 'a' is not string }}",
       "{\"s\": \"x\", \"d\": {}, \"xs\": [], \"n\": null, \"f\": false}", "TrueTrueTrueTrueTrueTrueTrueTrueFalse"},
      // string methods
      {"[{{ '\\n x \\n'.strip() }}][{{ 'xxaxx'.lstrip('x') }}][{{ 'xxaxx'.rstrip('x') }}]", "{}", "[x][axx][xxa]"},
      {"{{ 'abc'.startswith('ab') }}{{ 'abc'.endswith('bc') }}{{ 'a<b>c'.split('<b>') }}{{ ' a  b '.split() }}", "{}",
       "TrueTrue['a', 'c']['a', 'b']"},
      {"{{ 'x</think>y'.split('</think>')[-1] }}{{ 'aaa'.replace('a', 'b', 2) }}{{ '{} and {}'.format(1, 'x') }}", "{}",
       "ybba1 and x"},
      {"{{ d.get('a') }}{{ d.get('z', 'dflt') }}{{ d.keys() | list }}", "{\"d\": {\"a\": 1}}", "1dflt['a']"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(render(c.source, c.vars), c.expected) << c.source;
  }
}

TEST(Jinja, ParseErrorsNameTheLine) {
  const char* const bad[] = {"{% if x %}", "a\n{{ x ", "{% for x %}{% endfor %}", "{% frobnicate %}",
                             "\n\n{{ (1 }}", "{{ 'abc }}", "{# never closed"};
  const int lines[] = {1, 2, 1, 1, 3, 1, 1};
  for (size_t i = 0; i < std::size(bad); ++i) {
    try {
      Template t(bad[i], "tmpl");
      ADD_FAILURE() << "parsed: " << bad[i];
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).rfind("tmpl:" + std::to_string(lines[i]) + ":", 0), 0u) << e.what();
    }
  }
}

TEST(Jinja, RuntimeErrors) {
  EXPECT_THROW(render("{{ missing.attr }}"), Error);          // attribute of Undefined
  EXPECT_THROW(render("{{ 'a' + 1 }}"), Error);               // str + int
  EXPECT_THROW(render("{{ x | nosuchfilter }}"), Error);
  EXPECT_THROW(render("{% set x = 1 %}{% set x.a = 2 %}"), Error);  // not a namespace
  try {
    render("line1\n{{ 1 // 0 }}");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("t:2:", 0), 0u) << e.what();
  }
}

// Template integers are int64: what Python would compute exactly either fits, or is an error
// (never a wrapped value, undefined behaviour, a trap, or a loop as long as the exponent).
TEST(Jinja, IntegersNeverOverflow) {
  const Case fits[] = {
      {"{{ 2 ** 62 }}|{{ (-2) ** 63 }}|{{ (-1) ** 4444444444444 }}|{{ 0 ** 4444444444444 }}", "{}",
       "4611686018427387904|-9223372036854775808|1|0"},
      {"{{ 9223372036854775806 + 1 }}|{{ -9223372036854775807 - 1 }}|{{ 3037000499 * 3037000499 }}", "{}",
       "9223372036854775807|-9223372036854775808|9223372030926249001"},
      {"{{ (-9223372036854775807 - 1) % -1 }}|{{ (-9223372036854775807 - 1) is divisibleby(-1) }}", "{}", "0|True"},
      {"{{ -4444444444444444444 % 4444444444444444445 }}|{{ 7 % -2 }}|{{ -7 % 2 }}|{{ -7 // -2 }}|{{ 7 // -2 }}", "{}",
       "1|-1|1|3|-4"},
      {"{{ 9223372036854775807 % -2 }}|{{ 9223372036854775807 // -2 }}", "{}", "-1|-4611686018427387904"},
      {"{{ range(9223372036854775806, 9223372036854775807, 10) | list }}", "{}", "[9223372036854775806]"},
      {"{{ [1, 2, 3][1:9223372036854775807:9223372036854775807] }}|{{ '' * 4444444444444 }}|", "{}", "[2]||"},
  };
  for (const Case& c : fits) EXPECT_EQ(render(c.source, c.vars), c.expected) << c.source;
  const char* overflow[] = {
      "{{ 444444444 ** 4444444444444 }}", "{{ 2 ** 63 }}", "{{ 9223372036854775807 + 1 }}",
      "{{ -9223372036854775807 - 2 }}", "{{ 4294967296 * 4294967296 }}", "{{ -(-9223372036854775807 - 1) }}",
      "{{ (-9223372036854775807 - 1) // -1 }}", "{{ [9223372036854775807, 1] | sum }}",
      "{{ (-9223372036854775807 - 1) | abs }}", "{{ 'ab' * 1000000000000 }}", "{{ [1] * 2000000 }}",
      "{{ 'x' | indent(100000000000) }}", "{{ 'x' | indent(-1) }}",
  };
  for (const char* source : overflow) EXPECT_THROW(render(source), Error) << source;
}

TEST(ChatTemplate, RaiseExceptionCarriesTheMessage) {
  const ChatTemplate t("{{ raise_exception('No ' + messages[0].role) }}", "<s>", "</s>");
  try {
    t.render(nlohmann::ordered_json::parse(R"([{"role": "tool", "content": "x"}])"), true);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "No tool");
  }
}

TEST(ChatTemplate, VariablesAndKwargs) {
  ChatTemplate t("{{ bos_token }}{% for m in messages %}{{ m.role }}:{{ m.content }};{% endfor %}"
                 "{{ add_generation_prompt }}{{ tools }}{{ enable_thinking }}{{ eos_token }}{{ strftime_now('%Y-%m-%d') }}",
                 "<s>", "</s>");
  t.set_clock([] { return std::time_t(86400 * 365 + 43200); });  // 1971-01-01 12:00 UTC: 1971 in every time zone
  const std::string out = t.render(nlohmann::ordered_json::parse(R"([{"role": "user", "content": "hi"}])"), false,
                                   nlohmann::ordered_json::parse(R"({"enable_thinking": false})"));
  EXPECT_EQ(out.substr(0, out.size() - 10), "<s>user:hi;FalseNoneFalse</s>");
  EXPECT_EQ(out.substr(out.size() - 10, 4), "1971");
}

TEST(ChatTemplate, FindsTheTemplateInTokenizerConfig) {
  const auto a = loom::find_chat_template_in_tokenizer_config(
      R"({"chat_template": "{{ x }}", "bos_token": "<s>", "eos_token": {"content": "</s>", "lstrip": false}})");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->source, "{{ x }}");
  EXPECT_EQ(a->bos_token, "<s>");
  EXPECT_EQ(a->eos_token, "</s>");
  const auto b = loom::find_chat_template_in_tokenizer_config(
      R"({"chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D"}]})");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->source, "D");
  EXPECT_FALSE(loom::find_chat_template_in_tokenizer_config(R"({"bos_token": "<s>"})"));
  EXPECT_THROW(loom::find_chat_template_in_tokenizer_config(R"({"chat_template": [{"name": "x", "template": "T"}]})"), Error);
}

}  // namespace
}  // namespace loom::jinja

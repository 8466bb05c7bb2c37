#!/usr/bin/env python3
"""Expected pre-tokenizer splits for every `tokenizer.ggml.pre` name llama.cpp knows, made the
way llama.cpp makes them, for tests/unit/test_tokenizer_pre_tokenizers.cpp.

    tools/tokenizer/pre_tokenizer_splits.py LLAMA_CPP_DIR OUT.json

LLAMA_CPP_DIR is a llama.cpp tree (e.g. llama-cpp-python's sdist, vendor/llama.cpp). The names,
their flags (ignore_merges, add_bos) and each family's expressions are read out of its
src/llama-vocab.cpp, not out of Loom, and the texts are split by a model of llama.cpp's
unicode_regex_split() written here in Python, independent of Loom's PCRE2 expressions:
  - an expression with \\p{..} classes runs (Python `re`, ASCII mode, like std::regex) on the
    "collapsed" text: ASCII kept, other characters replaced by one byte for their class
    (0xD1 number, 0xD2 letter, 0xD3 punctuation, 0xD4 mark, 0xD5 symbol, 0x0B whitespace, 0xD0
    other), the classes rewritten to those bytes plus their ASCII members;
  - an expression without them runs on the text with non-ASCII whitespace replaced by 0x0B;
  - ECMAScript's $ is the end of the piece (\\Z here), empty matches cut;
  - llama.cpp's hand-coded splitters without an equivalent expression (Kimi K2's, the
    AFMoE/Tiny Aya digit groups) are modelled after its unicode.cpp; those with one (GPT-2,
    Llama 3, Qwen2, Qwen3.5, newline runs) run as their expressions.
Character classes come from Python's unicodedata (Unicode 14 on Python 3.11); the texts keep to
characters whose class is the same in every recent Unicode version.
"""
import json
import re
import sys
import unicodedata

TEXTS = [
    "I'm sure you'LL see: they've 3 cats, don't THEY'RE? it's",
    "1234567 89 1000000000000 x42y 3.14159 \u00bd\u00b2 ab  1234 \uff11\uff12\uff13\uff14",
    "\u4f60\u597d\u4e16\u754c, \u3053\u3093\u306b\u3061\u306f\uff01\ud55c\uad6d\uc5b4 "
    "\ud14d\uc2a4\ud2b8 \U0001f999\U0001f999 \u2728 \u0928\u092e\u0938\u094d\u0924\u0947",
    "a   b\t\t c \n\n  d\r\n\r\n   e \u00a0 f\u3000g   ",
    "HelloWorld \u00c9COLE \u00e9cole getHTTPResponse... (x+y)=z; $100 <sentinel:12> "
    "IMGIMGABZ \u00ab\u00a1Hola!\u00bb \u0645\u0631\u062d\u0628\u0627\u060c \u0939\u093e\u0901\u0964",
]

# llama.cpp's unicode_set_whitespace.
WHITESPACE = {0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B),
              0x2028, 0x2029, 0x202F, 0x205F, 0x3000}
CLASS_BYTE = {"N": 0xD1, "L": 0xD2, "P": 0xD3, "M": 0xD4, "S": 0xD5}
# The ASCII members llama.cpp adds to each collapsed class (k_ucat_map), as regex text.
CLASS_ASCII = {"N": "0-9", "L": "A-Za-z", "P": r"!-#%-*,-/:-;?-@\[-\]_\{\}", "M": "",
               "S": r"\$\+<->^`\|\~"}
UCATS = {r"\p{N}": "N", r"\p{L}": "L", r"\p{P}": "P", r"\p{M}": "M", r"\p{S}": "S",
         r"\p{Lu}": "L", r"\p{Ll}": "L", r"\p{Lt}": "L", r"\p{Lm}": "L", r"\p{Lo}": "L"}


def cls(cp):
    return unicodedata.category(chr(cp))[0]


def is_ws(cp):
    return cp in WHITESPACE


def collapse_text(cps):
    out = []
    for cp in cps:
        if cp < 128:
            out.append(chr(cp))
        elif is_ws(cp):
            out.append("\x0b")
        else:
            out.append(chr(CLASS_BYTE.get(cls(cp), 0xD0)))
    return "".join(out)


def collapse_regex(expr):
    """llama.cpp's rewrite of \\p{..} into the collapsed bytes, outside or inside [...]."""
    out, inside, i = [], False, 0
    while i < len(expr):
        c = expr[i]
        if c == "[" and (i == 0 or expr[i - 1] != "\\"):
            out.append("[")
            inside = True
        elif inside and c == "]" and expr[i - 1] != "\\":
            out.append("]")
            inside = False
        elif expr.startswith("\\p{", i) and expr.find("}", i + 3) != -1:
            end = expr.find("}", i + 3)
            name = expr[i:end + 1]
            if name in UCATS and end <= i + 10:
                k = UCATS[name]
                body = chr(CLASS_BYTE[k]) + CLASS_ASCII[k]
                out.append(body if inside else "[" + body + "]")
                i = end + 1
                continue
            out.append(c)
        else:
            out.append(c)
        i += 1
    return "".join(out)


def python_regex(expr):
    # ECMAScript $ (no multiline) matches only at the end; Python's also before a final \n.
    expr = re.sub(r"(?<!\\)\$$", r"\\Z", expr)
    return re.compile(expr, re.ASCII)


def split_stl(text, regex, pieces):
    """Isolated split of each piece [b, e) of text; empty matches cut (zero-length pieces)."""
    out = []
    for b, e in pieces:
        sub = text[b:e]
        done = 0
        for m in regex.finditer(sub):
            if m.start() > done:
                out.append((b + done, b + m.start()))
            out.append((b + m.start(), b + m.end()))
            done = m.end()
        if done < len(sub):
            out.append((b + done, e))
    return [p for p in out if p[1] > p[0]]


def is_han(cp):
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF or
            0x2A700 <= cp <= 0x2EBEF or 0xF900 <= cp <= 0xFAFF or 0x2F800 <= cp <= 0x2FA1F)


def split_kimi(cps, pieces):
    """Model of unicode_regex_split_custom_kimi_k2."""
    out = []
    for b, e in pieces:
        def cpt(p):
            return cps[p] if b <= p < e else None

        def letter(p):
            return cpt(p) is not None and cls(cpt(p)) == "L"

        def number(p):
            return cpt(p) is not None and cls(cpt(p)) == "N"

        def ws(p):
            return cpt(p) is not None and is_ws(cpt(p))

        def flagged(p):  # llama.cpp's flags.as_uint() != 0: an assigned codepoint
            return cpt(p) is not None and (unicodedata.category(chr(cpt(p))) != "Cn" or ws(p))

        prev = b

        def add(end):
            nonlocal prev
            if end > prev:
                out.append((prev, end))
            prev = end

        pos = b
        while pos < e:
            c = cpt(pos)
            if is_han(c):
                while cpt(pos) is not None and is_han(cpt(pos)):
                    pos += 1
                add(pos)
                continue
            lead_ok = not (c in (13, 10) or letter(pos) or number(pos))
            if (letter(pos) and not is_han(c)) or (lead_ok and letter(pos + 1) and
                                                   not is_han(cpt(pos + 1))):
                if lead_ok:
                    pos += 1
                while letter(pos) and not is_han(cpt(pos)):
                    pos += 1
                if cpt(pos) == ord("'") and pos + 1 < e:
                    n1 = chr(cpt(pos + 1)).lower()
                    if n1 in "stmd":
                        pos += 2
                    elif pos + 2 < e:
                        n2 = chr(cpt(pos + 2)).lower()
                        if n1 + n2 in ("re", "ve", "ll"):
                            pos += 3
                add(pos)
                continue
            if number(pos):
                ini = pos
                while number(pos):
                    pos += 1
                    if pos - ini >= 3:
                        add(pos)
                        ini = pos
                add(pos)
                continue
            q = pos + 1 if c == 32 else pos
            if flagged(q) and not (ws(q) or letter(q) or number(q)):
                pos = q
                while flagged(pos) and not (ws(pos) or letter(pos) or number(pos)):
                    pos += 1
                while cpt(pos) in (13, 10):
                    pos += 1
                add(pos)
                continue
            n, last_nl = 0, 0
            while ws(pos + n):
                if cpt(pos + n) in (13, 10):
                    last_nl = pos + n + 1
                n += 1
            if last_nl:
                pos = last_nl
            elif n > 1 and cpt(pos + n) is not None:
                pos += n - 1
            elif n > 0:
                pos += n
            else:
                pos += 1
            add(pos)
    return out


def split_digit_groups(cps, pieces):
    """Model of unicode_regex_split_custom_afmoe (also used for Tiny Aya)."""
    out = []
    for b, e in pieces:
        prev, pos = b, b
        while pos < e:
            if cls(cps[pos]) == "N":
                start = pos
                while pos < e and cls(cps[pos]) == "N":
                    pos += 1
                count = pos - start
                cur = start
                if count % 3:
                    cur += count % 3
                    out.append((prev, cur))
                    prev = cur
                while cur < pos:
                    cur += 3
                    out.append((prev, cur))
                    prev = cur
                continue
            pos += 1
        if prev < e:
            out.append((prev, e))
    return [p for p in out if p[1] > p[0]]


HAND_CODED = {r"\p{Han}+": split_kimi, r"\p{AFMoE_digits}": split_digit_groups,
              r"\d{1,3}(?=(?:\d{3})*\b)": split_digit_groups}


def regex_split(text, exprs):
    cps = [ord(c) for c in text]
    collapsed = collapse_text(cps)
    plain = "".join("\x0b" if ord(c) > 0x7F and is_ws(ord(c)) else c for c in text)
    pieces = [(0, len(cps))]
    for expr in exprs:
        if expr in HAND_CODED:
            pieces = HAND_CODED[expr](cps, pieces)
        elif any(u in expr for u in UCATS):
            pieces = split_stl(collapsed, python_regex(collapse_regex(expr)), pieces)
        else:
            pieces = split_stl(plain, python_regex(expr), pieces)
    return [text[b:e] for b, e in pieces]


def cxx_strings(block):
    """The string literals of a C++ block, comments skipped, escapes undone."""
    out = []
    for line in block.split("\n"):
        line = line.strip()
        if not line.startswith('"'):
            continue
        m = re.match(r'"((?:[^"\\]|\\.)*)"', line)
        s = m.group(1)
        s = re.sub(r'\\(.)', lambda x: {"n": "\n", "r": "\r", "t": "\t"}.get(x.group(1),
                                                                          x.group(1)), s)
        out.append(s)
    return out


def read_llama_cpp(src):
    # Families: `case LLAMA_VOCAB_PRE_TYPE_X:` lines, then regex_exprs = { ... };
    ctor = src[src.index("struct llm_tokenizer_bpe : llm_tokenizer {"):]
    ctor = ctor[:ctor.index("std::vector<std::string> regex_exprs;")]
    families, byte_level, pending = {}, {}, []
    for chunk in re.split(r"(case LLAMA_VOCAB_PRE_TYPE_\w+:|default:|break;)", ctor):
        m = re.match(r"case LLAMA_VOCAB_PRE_TYPE_(\w+):", chunk)
        if m:
            pending.append(m.group(1))
        elif chunk == "default:":
            pending.append("DEFAULT")
        elif chunk == "break;":
            pending = []
        elif "regex_exprs = {" in chunk:
            body = chunk[chunk.index("regex_exprs = {"):]
            exprs = cxx_strings(body[:body.index("};")])
            for t in pending:
                families[t] = exprs
                byte_level[t] = "byte_encode = false" not in chunk
    # Names: the if/else-if chain of load(), first match wins.
    load = src[src.index("if (type == LLAMA_VOCAB_TYPE_BPE) {"):]
    load = load[:load.index("} else if (type == LLAMA_VOCAB_TYPE_SPM)")]
    names = {}
    for branch in re.split(r"\} else if \(", load)[1:]:
        cond, _, body = branch.partition(") {")
        t = re.search(r"pre_type = LLAMA_VOCAB_PRE_TYPE_(\w+);", body).group(1)
        for name in re.findall(r'tokenizer_pre == "([^"]+)"', cond):
            if name not in names:
                names[name] = {"family": t, "ignore_merges": "ignore_merges = true" in body,
                               "add_bos": "add_bos = true" in body}
    return families, byte_level, names


def main(llama_cpp, out_path):
    src = open(llama_cpp + "/src/llama-vocab.cpp", encoding="utf-8").read()
    families, byte_level, names = read_llama_cpp(src)
    result = {"texts": TEXTS, "names": {}}
    for name, info in names.items():
        t = info["family"]
        entry = dict(info, byte_level=byte_level[t])
        entry["splits"] = [regex_split(text, families[t]) for text in TEXTS]
        result["names"][name] = entry
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(result, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"{out_path}: {len(names)} names, {len(families)} families")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

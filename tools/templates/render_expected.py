#!/usr/bin/env python3
"""Renders every chat template in tests/data/chat_templates/ for every conversation in
conversations.json with Python jinja2, the way Hugging Face transformers' apply_chat_template
does (trim_blocks, lstrip_blocks, loopcontrols, raise_exception, strftime_now, transformers'
tojson, tools=None and documents=None, bos_token/eos_token from the template's entry in
tokens.json), and writes expected/<template>__<conversation>.txt. A render that raises writes
expected/<template>__<conversation>.error holding the message instead ("!" in front when Python itself raised rather than raise_exception).

strftime_now formats a fixed time (2024-07-26 12:00:00) so the files do not depend on the date;
the C++ test fixes Loom's clock to the same moment.

Usage: python3 tools/templates/render_expected.py   (needs Debian python3-jinja2)
"""
import datetime
import json
import pathlib

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "chat_templates"
FIXED_NOW = datetime.datetime(2024, 7, 26, 12, 0, 0)



def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    # transformers' replacement for jinja2's HTML-safe tojson
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def strftime_now(fmt):
    return FIXED_NOW.strftime(fmt)


def main():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    tokens = json.loads((DATA / "tokens.json").read_text(encoding="utf-8"))
    conversations = json.loads((DATA / "conversations.json").read_text(encoding="utf-8"))
    out_dir = DATA / "expected"
    out_dir.mkdir(exist_ok=True)
    for old in out_dir.iterdir():
        old.unlink()
    renders = errors = 0
    for path in sorted(DATA.glob("*.jinja")):
        name = path.stem
        bos, eos = tokens[name]["bos_token"], tokens[name]["eos_token"]
        template = env.from_string(path.read_text(encoding="utf-8"))
        for conv in conversations:
            stem = f"{name}__{conv['name']}"
            try:
                variables = dict(messages=conv["messages"], tools=None, documents=None,
                                 add_generation_prompt=conv["add_generation_prompt"],
                                 bos_token=bos, eos_token=eos)
                variables.update(conv.get("kwargs", {}))
                text = template.render(**variables)
                (out_dir / (stem + ".txt")).write_bytes(text.encode("utf-8"))
                renders += 1
            except jinja2.exceptions.TemplateError as e:
                (out_dir / (stem + ".error")).write_bytes(str(e).encode("utf-8"))
                errors += 1
            except (TypeError, ValueError) as e:
                # Python raising on its own (e.g. str + dict): recorded with a "!" in front;
                # Loom must raise too, but its wording need not match.
                (out_dir / (stem + ".error")).write_bytes(("!" + type(e).__name__ + ": " + str(e)).encode("utf-8"))
                errors += 1
    print(f"jinja2 {jinja2.__version__}: {renders} renders, {errors} expected errors")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The openai Python SDK against a live loom-server on the demo model (Hermes tool-call syntax):
a tool-call round trip (call -> tool message -> answer), streamed tool calls assembled by the
SDK, chat.completions.parse with a pydantic model, and JSON-schema outputs validated with
jsonschema. Exits 77 (skipped) when the SDK, pydantic or jsonschema is not installed
(tools/clients/setup-clients.sh installs them)."""
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

try:
    import jsonschema
    import openai
    import pydantic
    from typing import Literal
except ImportError as e:  # pragma: no cover - the skip path
    print(f"skipped: {e} (run tools/clients/setup-clients.sh)")
    sys.exit(77)

SERVER, DATA = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])  # the config resolves paths from its own folder

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "strict": True,
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "maxLength": 8}, "unit": {"enum": ["c", "f"]}},
        "required": ["city", "unit"], "additionalProperties": False}}}


class Kid(pydantic.BaseModel):
    name: str = pydantic.Field(max_length=6)
    age: int = pydantic.Field(ge=1, le=99)
    mood: Literal["happy", "sad"]


class Alarm(pydantic.BaseModel):
    """Set an alarm."""
    hour: int = pydantic.Field(ge=0, le=23)
    label: str = pydantic.Field(max_length=5)


def start_server(tmp):
    config = os.path.join(tmp, "loom.toml")
    with open(config, "w") as f:
        f.write(f'[model]\npath = "{DATA}/stories260K.gguf"\nname = "stories260K"\ntool_parser = "hermes"\n'
                '[server]\nhost = "127.0.0.1"\nport = 0\n[runtime]\nthreads = 2\n[logging]\nlevel = "info"\n'
                '[scheduler]\nplugin = "continuous"\n[cache]\nplugin = "paged"\nkv_memory = "16MiB"\n')
    proc = subprocess.Popen([SERVER, "--config", config], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    port = []
    lines = []

    def read():
        for line in proc.stdout:
            lines.append(line)
            m = re.search(r"serving '.*' on http://[^:]+:(\d+)", line)
            if m and not port:
                port.append(int(m.group(1)))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    deadline = time.time() + 60
    while not port and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    if not port:
        proc.kill()
        reader.join(timeout=5)
        sys.exit("loom-server did not start:\n" + "".join(lines))
    return proc, port[0]


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def tool_round_trip(client, model):
    messages = [{"role": "user", "content": "What is the weather in Paris?"}]
    for seed in range(5):
        r = client.chat.completions.create(model=model, messages=messages, tools=[WEATHER], tool_choice="required",
                                           parallel_tool_calls=False, temperature=1.0, seed=seed, max_tokens=120)
        choice = r.choices[0]
        check(choice.finish_reason == "tool_calls", f"finish_reason {choice.finish_reason}")
        calls = choice.message.tool_calls
        check(calls is not None and len(calls) == 1, f"tool_calls {calls}")
        args = json.loads(calls[0].function.arguments)
        jsonschema.validate(args, WEATHER["function"]["parameters"])
    history = messages + [choice.message.model_dump(exclude_none=True),
                          {"role": "tool", "tool_call_id": calls[0].id, "content": "18 degrees and sunny"}]
    answer = client.chat.completions.create(model=model, messages=history, tools=[WEATHER], tool_choice="none",
                                            max_tokens=24)
    check(isinstance(answer.choices[0].message.content, str) and answer.choices[0].message.content,
          "no answer after the tool message")
    check(answer.choices[0].message.tool_calls is None, "tool_choice none returned calls")


def streamed_tool_calls(client, model):
    tool = openai.pydantic_function_tool(Alarm)
    for seed in range(3):
        with client.chat.completions.stream(
                model=model, messages=[{"role": "user", "content": "Wake me at seven."}], tools=[tool],
                tool_choice={"type": "function", "function": {"name": "Alarm"}}, temperature=1.0, seed=seed,
                max_tokens=120) as stream:
            final = stream.get_final_completion()
        calls = final.choices[0].message.tool_calls
        check(calls is not None and len(calls) == 1, f"streamed tool_calls {calls}")
        parsed = calls[0].function.parsed_arguments
        check(isinstance(parsed, Alarm), f"parsed_arguments {parsed!r}")
        check(0 <= parsed.hour <= 23 and len(parsed.label) <= 5, f"arguments {parsed!r}")


def parse_with_pydantic(client, model):
    for seed in range(5):
        r = client.chat.completions.parse(model=model, messages=[{"role": "user", "content": "Describe a child."}],
                                          response_format=Kid, temperature=1.0, seed=seed, max_tokens=120)
        kid = r.choices[0].message.parsed
        check(isinstance(kid, Kid), f"parsed {kid!r}: {r.choices[0].message.content!r}")


def json_schema_outputs(client, model):
    schema = {"type": "object", "properties": {
        "title": {"type": "string", "maxLength": 10},
        "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}, "maxItems": 3},
        "score": {"type": "integer", "minimum": -5, "maximum": 5}},
        "required": ["title", "score"], "additionalProperties": False}
    r = client.completions.create(model=model, prompt="Once upon a time", max_tokens=120, temperature=1.0, n=8,
                                  seed=3, extra_body={"response_format": {"type": "json_schema", "json_schema": {
                                      "name": "story", "schema": schema, "strict": True}}})
    for c in r.choices:
        jsonschema.validate(json.loads(c.text), schema)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        proc, port = start_server(tmp)
        try:
            client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="unused", max_retries=0,
                                   timeout=300)
            model = client.models.list().data[0].id
            failed = 0
            for test in (tool_round_trip, streamed_tool_calls, parse_with_pydantic, json_schema_outputs):
                try:
                    test(client, model)
                    print(f"ok   {test.__name__}")
                except Exception as e:  # report every test, then fail
                    failed += 1
                    print(f"FAIL {test.__name__}: {type(e).__name__}: {e}")
            sys.exit(1 if failed else 0)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
            proc.stdout.close()


if __name__ == "__main__":
    main()

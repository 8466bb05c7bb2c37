#!/usr/bin/env python3
"""A fuzz campaign against a running-or-started loom-server, over the wire.

Sends N malformed, random and boundary requests over every route (the JSON POST routes, the GET
routes, unknown paths and methods) and as raw HTTP (bad request lines, bad headers, wrong
lengths, pipelining, half-close), from several connections at once, and checks what issue 19
asks: no response >= 500 (a 503 only where overload or drain is configured), no crash (the
process is alive and /health is 200 at the end), no hang (every request answered, or its
connection closed by the server, within --timeout). The requests come from a seeded generator,
so a run is reproducible; failures are printed with the request that caused them.

  tools/fuzz/campaign.py --server build/bin/loom-server --port 18300 --requests 16000 -- \
      --config configs/default.toml
Everything after "--" goes to loom-server (its --port and --host are added). Exit status 0 when
every check held.
"""
import argparse
import collections
import json
import random
import re
import socket
import subprocess
import sys
import threading
import time

JSON_ROUTES = ["/v1/chat/completions", "/v1/completions", "/v1/embeddings", "/tokenize",
               "/detokenize", "/apply-template"]
GET_ROUTES = ["/v1/models", "/health", "/metrics", "/v1/models/stories260K", "/v1/models/x"]
BOUNDARY_NUMBERS = [0, -1, 1, 2, 255, 256, 65535, 2**31 - 1, 2**31, -2**31, 2**32, 2**53 + 1,
                    2**63 - 1, 2**63, 2**64, -2**63, 0.5, -0.0, 1e-300, 1e-45, 1e308, -1e308,
                    3.4e38, 1e39, 1.7976931348623157e308]
RAW_NUMBERS = ["1e999", "-1e999", "NaN", "Infinity", "-Infinity", "0x10", "01", "1.", ".5",
               "1e", "--1", "1_000", "123456789012345678901234567890"]
STRINGS = ["", " ", "a", "Once upon a time", "\u00e9\u65e5\u672c\U0001F642", "<|im_start|>", "<s>",
           "</s>", "<|endoftext|>", "{{ raise_exception('x') }}", "{% for x in y %}", "\\", "\"",
           "\n" * 50, "x" * 5000, "\u0000", "\ud800", "null", "true", "[]", "{}"]
FIELDS = ["model", "prompt", "messages", "max_tokens", "max_completion_tokens", "temperature",
          "top_p", "top_k", "min_p", "n", "best_of", "stop", "stream", "stream_options", "seed",
          "logprobs", "top_logprobs", "echo", "logit_bias", "presence_penalty",
          "frequency_penalty", "repetition_penalty", "user", "tools", "tool_choice",
          "parallel_tool_calls", "response_format", "guided_json", "guided_regex",
          "guided_choice", "guided_grammar", "chat_template_kwargs", "add_generation_prompt",
          "input", "encoding_format", "dimensions", "tokens", "add_special_tokens",
          "prompt_logprobs", "ignore_eos", "min_tokens", "skip_special_tokens", "priority",
          "suffix", "unknown_field", "", "\u00e9"]


def rand_scalar(rng):
    k = rng.randrange(5)
    if k == 0:
        return rng.choice(BOUNDARY_NUMBERS)
    if k == 1:
        return rng.choice(STRINGS)
    if k == 2:
        return rng.choice([None, True, False])
    if k == 3:
        return rng.randint(-5, 40)
    return rng.random() * rng.choice([1, 2, 100])


def rand_value(rng, depth=0):
    k = rng.randrange(8 if depth < 3 else 4)
    if k < 4:
        return rand_scalar(rng)
    if k < 6:
        return [rand_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {rng.choice(FIELDS): rand_value(rng, depth + 1) for _ in range(rng.randrange(4))}


def message(rng):
    role = rng.choice(["user", "system", "assistant", "tool", "developer", "bogus", "", None, 7])
    m = {"role": role, "content": rng.choice([rng.choice(STRINGS), None,
                                               [{"type": "text", "text": rng.choice(STRINGS)}],
                                               [{"type": "image_url", "image_url": {"url": "x"}}],
                                               rand_value(rng)])}
    if role == "assistant" and rng.random() < 0.4:
        m["tool_calls"] = [{"id": "c1", "type": "function",
                            "function": {"name": rng.choice(["f", "", 3]),
                                         "arguments": rng.choice(["{}", "{", "[1]", "null", 5])}}]
    if role == "tool" and rng.random() < 0.7:
        m["tool_call_id"] = rng.choice(["c1", "", 0])
    return m


def valid_body(rng, route):
    small = rng.choice([1, 2, 4, 8])
    if route == "/v1/completions":
        return {"prompt": rng.choice(["Once upon a time", "The cat", [1, 2, 3], ["a", "b"]]),
                "max_tokens": small, "temperature": rng.choice([0, 0.7, 1.0])}
    if route in ("/v1/chat/completions", "/apply-template"):
        b = {"messages": [{"role": "user", "content": "Hello there"}], "max_tokens": small}
        if rng.random() < 0.3:
            b["tools"] = [{"type": "function", "function": {
                "name": "get_weather", "parameters": {"type": "object", "properties": {
                    "city": {"type": "string"}}, "required": ["city"]}}}]
            b["tool_choice"] = rng.choice(["auto", "required", "none",
                                           {"type": "function", "function": {"name": "get_weather"}}])
        return b
    if route == "/v1/embeddings":
        return {"input": rng.choice(["hello", ["a", "b"], [1, 2, 3]])}
    if route == "/tokenize":
        return rng.choice([{"prompt": "Once upon a time"},
                           {"messages": [{"role": "user", "content": "hi"}]}])
    return {"tokens": [1, 2, 3, 4]}


def mutate(rng, body):
    """One to four changes: a field set to a random or boundary value, removed, nested, grown."""
    for _ in range(rng.randint(1, 4)):
        k = rng.randrange(7)
        if k == 0 and body:
            body.pop(rng.choice(list(body)))
        elif k == 1:
            body[rng.choice(FIELDS)] = rand_value(rng)
        elif k == 2:
            body[rng.choice(FIELDS)] = rng.choice(BOUNDARY_NUMBERS)
        elif k == 3:
            body["messages"] = [message(rng) for _ in range(rng.randrange(5))]
        elif k == 4:
            body[rng.choice(["stream", "echo", "logprobs"])] = rng.choice([True, False, 1, "yes"])
        elif k == 5:
            body["response_format"] = rng.choice([
                {"type": "json_object"}, {"type": "text"}, {"type": "json_schema"},
                {"type": "json_schema", "json_schema": {"name": "s", "schema": rand_value(rng)}},
                {"type": "json_schema", "json_schema": {"name": "s", "schema": {
                    "type": "object", "properties": {"a": {"type": "integer",
                                                           "minimum": rng.choice(BOUNDARY_NUMBERS)}}}}},
                rand_value(rng)])
        else:
            body["max_tokens"] = rng.choice([1, 2, 4, 0, -1, 2**31 - 1, 1e308, "4", None])
    return body


def json_text(rng, route):
    """Mostly a mutated valid body; else structural damage the JSON parser or limits must catch."""
    k = rng.randrange(20)
    body = mutate(rng, valid_body(rng, route)) if 2 <= k < 13 else valid_body(rng, route)
    text = json.dumps(body, ensure_ascii=rng.random() < 0.5)
    if k == 13:  # a raw number no double holds, in a random field
        field = rng.choice(["max_tokens", "temperature", "top_p", "seed", "n", "prompt"])
        text = text[:-1] + (", " if len(text) > 2 else "") + f'"{field}": {rng.choice(RAW_NUMBERS)}' + "}"
    elif k == 14:  # nested past the depth limit somewhere a template would walk it
        d = rng.choice([65, 200, 20000])
        key = rng.choice(["tools", "chat_template_kwargs", "messages", "prompt", "response_format"])
        text = text[:-1] + (", " if len(text) > 2 else "") + f'"{key}": ' + "[" * d + "]" * d + "}"
    elif k == 15:  # truncated
        text = text[:rng.randrange(len(text) + 1)]
    elif k == 16:  # random bytes spliced in
        b = bytearray(text.encode())
        for _ in range(rng.randint(1, 8)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        return bytes(b)
    elif k == 17:  # many elements
        text = '{"prompt": [' + ",".join(["1"] * rng.choice([1000, 300000])) + '], "max_tokens": 1}'
    elif k == 18:  # duplicate keys, odd whitespace, a BOM
        text = "\ufeff" + text.replace("{", "{ \"max_tokens\": 1, ", 1) if rng.random() < 0.5 else text + text
    else:  # not JSON at all
        text = rng.choice(["", "null", "[]", "1", "\"x\"", "{", "}", "{\"a\":}", "\x00" * 10,
                           "prompt=hi", "<xml/>"])
    return text.encode("utf-8", "surrogatepass")


def http_request(method, path, body=b"", headers=None, version="1.1"):
    h = {"Host": "localhost", "Connection": "close"}
    if body or method == "POST":
        h["Content-Type"] = "application/json"
        h["Content-Length"] = str(len(body))
    h.update(headers or {})
    head = f"{method} {path} HTTP/{version}\r\n" + "".join(
        f"{k}: {v}\r\n" for k, v in h.items() if v is not None) + "\r\n"
    return head.encode("latin-1", "replace") + body


def raw_case(rng):
    """Raw HTTP damage: (bytes, half_close)."""
    path = rng.choice(JSON_ROUTES + GET_ROUTES)
    body = json.dumps(valid_body(rng, rng.choice(JSON_ROUTES))).encode()
    k = rng.randrange(14)
    if k == 0:
        return rng.choice([b"GARBAGE\r\n\r\n", b"\r\n\r\n", b"GET\r\n\r\n", b"GET / HTTP/9.9\r\n\r\n",
                           b"GET /health HTTP/1.1\n\n", bytes(rng.randrange(256) for _ in range(200)),
                           b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n"]), False
    if k == 1:  # a header far over any limit
        return http_request("GET", "/health", headers={"X-Big": "a" * rng.choice([9000, 70000])}), False
    if k == 2:  # Content-Length larger than the body, then half-close
        return http_request("POST", path, body, {"Content-Length": str(len(body) + 10)}), True
    if k == 3:  # Content-Length smaller than the body (the rest is a bad second request)
        return http_request("POST", path, body, {"Content-Length": str(max(0, len(body) - 3)),
                                                 "Connection": None}), True
    if k == 4:  # chunked, sometimes broken
        chunks = f"{len(body):x}\r\n".encode() + body + b"\r\n" + rng.choice([b"0\r\n\r\n", b"zz\r\n", b""])
        return http_request("POST", path, b"", {"Transfer-Encoding": "chunked",
                                                "Content-Length": None}) + chunks, True
    if k == 5:  # pipelined requests in one write
        reqs = b"".join(http_request(rng.choice(["GET", "POST"]), rng.choice(JSON_ROUTES + GET_ROUTES),
                                     body if rng.random() < 0.5 else b"",
                                     {"Connection": None}) for _ in range(rng.randint(2, 4)))
        return reqs + http_request("GET", "/health"), True
    if k == 6:  # a wrong or missing Content-Type, or none at all
        ct = rng.choice(["text/plain", "", "application/x-www-form-urlencoded", "application/json; charset=utf-8",
                         "APPLICATION/JSON", "multipart/form-data; boundary=x", None])
        return http_request("POST", path, body, {"Content-Type": ct}), False
    if k == 7:  # odd methods and paths
        m = rng.choice(["PUT", "DELETE", "PATCH", "OPTIONS", "HEAD", "TRACE", "CONNECT", "BREW", "get"])
        p = rng.choice([path, "/", "*", "/v1", "/v1/", "//health", "/health?x=1", "/v1/models/" + "a" * 3000,
                        "/../../etc/passwd", "/%00", "/v1/completions#x", "http://x/health"])
        return http_request(m, p, body if rng.random() < 0.3 else b""), False
    if k == 8:  # HTTP/1.0, with and without keep-alive
        return http_request("POST" if path in JSON_ROUTES else "GET", path,
                            body if path in JSON_ROUTES else b"", {"Connection": rng.choice([None, "keep-alive"])},
                            version="1.0"), True
    if k == 9:  # Authorization and CORS noise
        return http_request("POST", path, body, {"Authorization": rng.choice(["Bearer x", "Basic eA==", "", "Bearer " + "k" * 5000]),
                                                 "Origin": "http://evil.example"}), False
    if k == 10:  # Expect: 100-continue
        return http_request("POST", path, body, {"Expect": rng.choice(["100-continue", "bogus"])}), False
    if k == 11:  # a body larger than max_body_bytes is announced
        return http_request("POST", path, b"", {"Content-Length": str(rng.choice([9 << 20, 2**62, 2**64 + 1]))}), True
    if k == 12:  # header injection attempts and duplicates
        return (http_request("POST", path, body)[:-len(body) - 2] +
                b"Content-Length: 0\r\nX: a\rb\r\nX: \x00\r\n\r\n" + body), False
    return http_request("POST", path, body, {"Connection": "keep-alive"}), True  # keep-alive then half-close


def make_case(rng, model_name):
    k = rng.randrange(10)
    if k < 6:
        route = rng.choice(JSON_ROUTES)
        return ("json " + route, http_request("POST", route, json_text(rng, route)), False)
    if k < 7:
        path = rng.choice(GET_ROUTES + ["/v1/models/" + model_name, "/v1/models/" + rng.choice(STRINGS).encode(
            "ascii", "replace").decode().replace(" ", "%20")[:100]])
        return ("get " + path.split("?")[0][:40], http_request(rng.choice(["GET", "HEAD"]), path), False)
    data, half = raw_case(rng)
    return ("raw", data, half)


def read_response(sock, deadline):
    """Reads until the server closes; returns (bytes, timed_out). Requests send Connection: close,
    raw ones may not; the server's own timeouts then end the connection."""
    chunks = []
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return b"".join(chunks), True
        sock.settimeout(left)
        try:
            b = sock.recv(65536)
        except socket.timeout:
            return b"".join(chunks), True
        except OSError:  # reset by the server: a refusal, not a hang
            return b"".join(chunks), False
        if not b:
            return b"".join(chunks), False
        chunks.append(b)
        data = b"".join(chunks)
        # Stop at a complete single response for keep-alive answers we do not need to wait out.
        if data.startswith(b"HTTP/") and data.endswith(b"0\r\n\r\n"):
            return data, False


def statuses(data):
    out = []
    i = 0
    while True:
        j = data.find(b"HTTP/1.", i)
        if j < 0:
            return out
        try:
            out.append(int(data[j + 9:j + 12]))
        except ValueError:
            pass
        i = j + 12


def run_case(port, case, timeout):
    name, data, half = case
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        try:
            sock.sendall(data)
            if half:
                sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # the server may refuse mid-send (body too large): read what it said
        resp, timed_out = read_response(sock, time.monotonic() + timeout)
    finally:
        sock.close()
    return name, statuses(resp), timed_out, len(resp)


def health(port, timeout=5.0):
    try:
        _, sts, _, _ = run_case(port, ("health", http_request("GET", "/health"), False), timeout)
        return sts[:1] == [200]
    except OSError:
        return False


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--server", help="loom-server binary to start (else --port must be serving)")
    ap.add_argument("--port", type=int, required=True, help="0 with --server: any free port")
    ap.add_argument("--requests", type=int, default=16000)
    ap.add_argument("--seed", type=int, default=19)
    ap.add_argument("--connections", type=int, default=8, help="clients at once")
    ap.add_argument("--timeout", type=float, default=90.0, help="seconds a request may take (over the server's own header/body timeouts)")
    ap.add_argument("--allow-503", action="store_true", help="the server is configured to shed load")
    ap.add_argument("--model-name", default="stories260K")
    ap.add_argument("--log", help="file for the server's output (default: discarded)")
    ap.add_argument("server_args", nargs="*")
    args = ap.parse_args()

    proc = None
    if args.server:
        proc = subprocess.Popen([args.server, *args.server_args, "--host", "127.0.0.1",
                                 "--port", str(args.port)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        served = threading.Event()
        port_box = [args.port]

        def pump():  # the server's output to --log; with --port 0 its "serving ... on http://h:p" line says where
            log = open(args.log, "wb") if args.log else None
            for line in proc.stdout:
                if log:
                    log.write(line)
                    log.flush()
                m = re.search(rb"serving .* on http://[^:\s]+:(\d+)", line)
                if m and not served.is_set():
                    port_box[0] = int(m.group(1))
                    served.set()
            served.set()

        threading.Thread(target=pump, daemon=True).start()
        if args.port == 0 and not served.wait(180) or port_box[0] == 0:
            print(f"campaign: the server did not say where it serves (exit {proc.poll()})", file=sys.stderr)
            return 2
        args.port = port_box[0]
        start = time.monotonic()
        while not health(args.port, 2.0):
            if proc.poll() is not None or time.monotonic() - start > 180:
                print(f"campaign: the server did not come up (exit {proc.poll()})", file=sys.stderr)
                return 2
            time.sleep(0.2)

    rng = random.Random(args.seed)
    cases = [make_case(rng, args.model_name) for _ in range(args.requests)]
    lock = threading.Lock()
    by_status = collections.Counter()
    by_kind = collections.Counter()
    failures = []
    hangs = []
    unanswered = []  # closed without a status line: a refusal at the transport, listed, not failed
    next_index = [0]
    t0 = time.monotonic()

    def worker():
        while True:
            with lock:
                i = next_index[0]
                next_index[0] += 1
            if i >= len(cases):
                return
            try:
                name, sts, timed_out, _ = run_case(args.port, cases[i], args.timeout)
            except OSError as e:  # could not even connect: the server is gone or refusing
                name, sts, timed_out = cases[i][0], [], False
                with lock:
                    failures.append((i, f"connect failed: {e}"))
                continue
            with lock:
                by_kind[name.split(" ")[0]] += 1
                for s in sts or ["none"]:
                    by_status[s] += 1
                bad = [s for s in sts if s >= 500 and not (s == 503 and args.allow_503)]
                if bad:
                    failures.append((i, f"{name}: status {bad}"))
                if timed_out:
                    hangs.append((i, name))
                elif not sts:
                    unanswered.append((i, name))

    threads = [threading.Thread(target=worker) for _ in range(args.connections)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - t0

    alive = proc is None or proc.poll() is None
    healthy = health(args.port)
    print(f"campaign: {len(cases)} requests (seed {args.seed}, {args.connections} connections) in {elapsed:.1f} s")
    print("campaign: by kind " + ", ".join(f"{k}={v}" for k, v in sorted(by_kind.items())))
    print("campaign: statuses " + ", ".join(f"{k}={v}" for k, v in sorted(by_status.items(), key=str)))
    n5xx = sum(v for k, v in by_status.items() if isinstance(k, int) and k >= 500)
    print(f"campaign: >=500: {n5xx}, failures: {len(failures)}, hangs: {len(hangs)}, "
          f"server alive: {alive}, /health ok at the end: {healthy}")
    for i, what in failures[:20]:
        print(f"  failure #{i}: {what}: {cases[i][1][:300]!r}")
    for i, what in unanswered[:8]:
        print(f"  closed without an answer #{i}: {what}: {cases[i][1][:200]!r}")
    for i, what in hangs[:20]:
        print(f"  hang #{i}: {what}: {cases[i][1][:300]!r}")
    if proc is not None:
        proc.terminate()
        try:
            code = proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = "killed after 60 s"
        print(f"campaign: server exit after SIGTERM: {code}")
    return 0 if not failures and not hangs and alive and healthy else 1


if __name__ == "__main__":
    sys.exit(main())

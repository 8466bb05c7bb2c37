"""The request classes of the soak: each one sends one request of its kind and checks the reply.

A class function takes (port, rng, timeout) and returns an Outcome. Well-formed classes must be
answered 200 with a reply that parses and is complete (every choice finished, a stream ends with
[DONE] and carries no error event); malformed ones must be answered 4xx. Anything else is a
failure, described in Outcome.failure.
"""
import json
import socket
import time

from wire import Exchange, Hang, Truncated, call, request_bytes, sse_events

PROMPTS = ["Once upon a time", "The little dog", "Lily wanted to play", "One day, a boy named Tom",
           "The sun was shining and"]
MAX_TOKENS = [8, 16, 32, 64]


class Outcome:
    def __init__(self, label, latency=None, failure=None, well_formed=True):
        self.label = label          # a status ("200", "400"), or what the client did ("aborted")
        self.latency = latency      # seconds to the complete reply, for the p99 windows
        self.failure = failure      # None, or what went wrong
        self.well_formed = well_formed


def completion_body(rng, stream, n=1, logprobs=False):
    b = {"prompt": rng.choice(PROMPTS), "max_tokens": rng.choice(MAX_TOKENS),
         "temperature": rng.choice([0, 0.8]), "stream": stream}
    if n > 1:
        b["n"] = n
    if logprobs:
        b["logprobs"] = 2
    return b


def chat_body(rng, stream, n=1, logprobs=False):
    b = {"messages": [{"role": "user", "content": rng.choice(PROMPTS)}],
         "max_tokens": rng.choice(MAX_TOKENS), "temperature": rng.choice([0, 0.8]), "stream": stream}
    if n > 1:
        b["n"] = n
    if logprobs:
        b["logprobs"] = True
        b["top_logprobs"] = 3
    return b


def check_whole(route, body, reply):
    """None when a non-streamed reply is complete and of the shape asked for, else why not."""
    try:
        doc = json.loads(reply)
    except ValueError:
        return f"reply is not JSON: {reply[:120]!r}"
    choices = doc.get("choices")
    want = body.get("n", 1)
    if not isinstance(choices, list) or len(choices) != want:
        return f"{want} choices asked, reply has {choices if not isinstance(choices, list) else len(choices)}"
    for c in choices:
        if c.get("finish_reason") not in ("stop", "length"):
            return f"choice finish_reason {c.get('finish_reason')!r}"
        text = c.get("text") if route == "/v1/completions" else (c.get("message") or {}).get("content")
        if not isinstance(text, str):
            return f"choice text {text!r}"
        if body.get("logprobs") and not c.get("logprobs"):
            return "logprobs asked, none in the reply"
    if not isinstance(doc.get("usage"), dict):
        return "no usage"
    return None


def check_stream(body, payloads):
    """None when a stream's events all parse, none is an error, every choice finished and [DONE]
    came last, else why not."""
    if not payloads or payloads[-1] != "[DONE]":
        return "stream does not end with [DONE]"
    finished = set()
    for p in payloads[:-1]:
        try:
            doc = json.loads(p)
        except ValueError:
            return f"event is not JSON: {p[:120]!r}"
        if "error" in doc:
            return f"error event: {p[:200]}"
        for c in doc.get("choices", []):
            if c.get("finish_reason") is not None:
                finished.add(c.get("index"))
    want = body.get("n", 1)
    if len(finished) != want:
        return f"{want} choices asked, {len(finished)} finished"
    return None


def post_whole(port, route, body, timeout):
    t0 = time.monotonic()
    try:
        status, reply = call(port, "POST", route, body, timeout)
    except (OSError, Truncated, Hang) as e:
        return Outcome(type(e).__name__, failure=f"{route}: {e}")
    latency = time.monotonic() - t0
    if status != 200:
        return Outcome(str(status), failure=f"{route}: status {status}: {reply[:200]!r}")
    return Outcome("200", latency, check_whole(route, body, reply))


def post_stream(port, route, body, timeout, recv_size=65536, pause=0.0):
    """A streamed request read to its end, recv_size bytes at a time with a pause between reads."""
    t0 = time.monotonic()
    ex = None
    try:
        ex = Exchange(port, timeout)
        ex.recv_size = recv_size
        ex.send(request_bytes("POST", route, json.dumps(body).encode()))
        status, _ = ex.read_head()
        if status != 200:
            reply = b"".join(ex.body_pieces())
            return Outcome(str(status), failure=f"{route} stream: status {status}: {reply[:200]!r}")

        def paced():
            for piece in ex.body_pieces():
                yield piece
                if pause:
                    time.sleep(pause)

        payloads = list(sse_events(paced()))
    except (OSError, Truncated, Hang, ValueError) as e:
        return Outcome(type(e).__name__, failure=f"{route} stream: {e}")
    finally:
        if ex:
            ex.close()
    return Outcome("200", time.monotonic() - t0, check_stream(body, payloads))


def completion(port, rng, timeout):
    return post_whole(port, "/v1/completions", completion_body(rng, False), timeout)


def completion_stream(port, rng, timeout):
    return post_stream(port, "/v1/completions", completion_body(rng, True), timeout)


def chat(port, rng, timeout):
    return post_whole(port, "/v1/chat/completions", chat_body(rng, False), timeout)


def chat_stream(port, rng, timeout):
    return post_stream(port, "/v1/chat/completions", chat_body(rng, True), timeout)


def n_logprobs(port, rng, timeout):
    """n > 1 with logprobs, on either route, streamed or not."""
    route = rng.choice(["/v1/completions", "/v1/chat/completions"])
    stream = rng.random() < 0.5
    make = completion_body if route == "/v1/completions" else chat_body
    body = make(rng, stream, n=rng.choice([2, 3, 4]), logprobs=True)
    return (post_stream if stream else post_whole)(port, route, body, timeout)


def slow_reader(port, rng, timeout):
    """Reads a stream 64 bytes at a time with a pause: it must still get all of it."""
    route = rng.choice(["/v1/completions", "/v1/chat/completions"])
    body = (completion_body if route == "/v1/completions" else chat_body)(rng, True)
    out = post_stream(port, route, body, timeout, recv_size=64, pause=0.01)
    out.latency = None  # paced by the client: not a server latency
    return out


def open_stream(port, rng, timeout, max_tokens):
    ex = Exchange(port, timeout)
    body = completion_body(rng, True)
    body["max_tokens"] = max_tokens
    ex.send(request_bytes("POST", "/v1/completions", json.dumps(body).encode()))
    status, _ = ex.read_head()
    return ex, status


def hold_stream(port, rng, timeout, what, label, act):
    """Opens a long stream, does act(exchange) to it instead of reading it out, and goes away."""
    try:
        ex, status = open_stream(port, rng, timeout, 400)
        try:
            if status != 200:
                return Outcome(str(status), failure=f"{what}: status {status}")
            act(ex)
        finally:
            ex.close()
    except (OSError, Truncated, Hang) as e:
        return Outcome(type(e).__name__, failure=f"{what}: {e}")
    return Outcome(label)


def abort(port, rng, timeout):
    """Reads the first event or so, then closes with linger 0: a reset, as a killed client's."""
    def act(ex):
        next(ex.body_pieces(), None)
        ex.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    return hold_stream(port, rng, timeout, "abort", "aborted", act)


def stalled_reader(port, rng, timeout):
    """Never reads the stream for a few seconds, then goes away."""
    return hold_stream(port, rng, timeout, "stalled reader", "stalled",
                       lambda ex: time.sleep(rng.uniform(1.0, 4.0)))


def probe(port, rng, timeout):
    path = rng.choice(["/health", "/metrics", "/v1/models"])
    try:
        status, _ = call(port, "GET", path, timeout=timeout)
    except (OSError, Truncated, Hang) as e:
        return Outcome(type(e).__name__, failure=f"GET {path}: {e}")
    return Outcome(str(status), failure=None if status == 200 else f"GET {path}: status {status}")


def malformed_case(rng):
    """(what, route, body bytes) of a request the server must refuse with a 4xx."""
    route = rng.choice(["/v1/completions", "/v1/chat/completions"])
    good = json.dumps(completion_body(rng, False) if route == "/v1/completions" else chat_body(rng, False))
    k = rng.randrange(10)
    if k == 0:
        return "truncated JSON", route, good[:rng.randrange(1, len(good) - 1)].encode()
    if k == 1:
        return "not an object", route, rng.choice([b"[1, 2]", b"null", b"\"x\"", b"", b"{,}"])
    if k == 2:
        field, value = rng.choice([("max_tokens", "ten"), ("temperature", "hot"), ("n", "2"),
                                   ("stream", "yes"), ("stop", 5), ("logprobs", "x")])
        doc = json.loads(good)
        doc[field] = value
        return f"wrong type: {field}", route, json.dumps(doc).encode()
    if k == 3:
        doc = json.loads(good)
        if route == "/v1/completions":
            doc["prompt"] = {"text": "x"}
        else:
            doc["messages"] = rng.choice(["hi", [{"role": "user"}], [{"content": "x"}], []])
        return "wrong shape of the input", route, json.dumps(doc).encode()
    if k == 4:
        doc = json.loads(good)
        doc["model"] = "no-such-model"
        return "unknown model", route, json.dumps(doc).encode()
    if k == 5:
        doc = json.loads(good)
        doc["n"] = 17
        return "n over max_n", route, json.dumps(doc).encode()
    if k == 6:
        doc = json.loads(good)
        doc["max_tokens"] = rng.choice([-1, 0, 2**31, 1e308])
        return "max_tokens out of range", route, json.dumps(doc).encode()
    if k == 7:
        return "prompt over the context", "/v1/completions", json.dumps(
            {"prompt": "once upon a time " * 2000, "max_tokens": 4}).encode()
    if k == 8:
        return "nested past max_json_depth", route, (good[:-1] + ', "x": ' + "[" * 100 + "]" * 100 + "}").encode()
    # Rare: a body past max_body_bytes (8 MiB by default) is sent whole.
    if rng.random() < 0.1:
        return "body over max_body_bytes", "/v1/completions", json.dumps(
            {"prompt": "a" * (9 << 20), "max_tokens": 1}).encode()
    doc = json.loads(good)
    doc["logprobs"] = 50
    doc["top_logprobs"] = 50
    return "logprobs over max_logprobs", route, json.dumps(doc).encode()


def malformed(port, rng, timeout):
    what, route, data = malformed_case(rng)
    ex = None
    try:
        ex = Exchange(port, timeout)
        try:
            ex.send(request_bytes("POST", route, data))
        except OSError:
            pass  # refused mid-send (a body too large): read what the server said
        status, _ = ex.read_head()
        reply = b"".join(ex.body_pieces())
    except (OSError, Truncated, Hang) as e:
        return Outcome(type(e).__name__, failure=f"malformed ({what}): {e}", well_formed=False)
    finally:
        if ex:
            ex.close()
    bad = None if 400 <= status < 500 else f"malformed ({what}): status {status}: {reply[:200]!r}"
    return Outcome(str(status), failure=bad, well_formed=False)


# class name -> (function, weight in the mix)
CLASSES = {
    "completion": (completion, 6),
    "completion_stream": (completion_stream, 6),
    "chat": (chat, 5),
    "chat_stream": (chat_stream, 5),
    "n_logprobs": (n_logprobs, 3),
    "abort": (abort, 3),
    "slow_reader": (slow_reader, 2),
    "stalled_reader": (stalled_reader, 1),
    "malformed": (malformed, 4),
    "probe": (probe, 1),
}
LATENCY_CLASSES = {"completion", "completion_stream", "chat", "chat_stream", "n_logprobs"}

"""What the soak and the chaos run share: a loom-server process they start and watch, and an
HTTP/1.1 client over a raw socket, so a test can stop reading, read slowly or close mid-reply,
and can tell a reply that ended cleanly from one cut short. Python 3 standard library only.
"""
import json
import re
import socket
import subprocess
import threading
import time


class Truncated(Exception):
    """The server closed (or reset) the connection before the reply was complete."""

    def __init__(self, what, received):
        super().__init__(f"{what} after {received} bytes of reply")
        self.received = received


class Hang(Exception):
    """No byte from the server within the client's timeout."""


def request_bytes(method, path, body=b"", headers=None):
    h = {"Host": "localhost", "Connection": "close"}
    if body or method == "POST":
        h["Content-Type"] = "application/json"
        h["Content-Length"] = str(len(body))
    h.update(headers or {})
    head = f"{method} {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in h.items()) + "\r\n"
    return head.encode("latin-1") + body


class Exchange:
    """One request on its own connection; the reply is read piece by piece as the caller wants."""

    def __init__(self, port, timeout):
        self.timeout = timeout
        self.received = 0
        self.recv_size = 65536  # smaller: a client that reads slowly
        self._buf = b""
        self._eof = False
        try:
            self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        except socket.timeout as e:
            raise Hang("connect timed out") from e

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def send(self, data):
        self.sock.sendall(data)

    def _fill(self):
        if self._eof:
            return False
        try:
            b = self.sock.recv(self.recv_size)
        except socket.timeout as e:
            raise Hang(f"no reply byte within {self.timeout} s") from e
        except ConnectionResetError:
            b = b""
        if not b:
            self._eof = True
            return False
        self.received += len(b)
        self._buf += b
        return True

    def _until(self, sep):
        while sep not in self._buf:
            if not self._fill():
                raise Truncated(f"closed before {sep!r}", self.received)
        i = self._buf.index(sep)
        out, self._buf = self._buf[:i], self._buf[i + len(sep):]
        return out

    def _take(self, n):
        while len(self._buf) < n:
            if not self._fill():
                raise Truncated(f"closed {n - len(self._buf)} bytes short", self.received)
        out, self._buf = self._buf[:n], self._buf[n:]
        return out

    def read_head(self):
        """Returns (status, {lowercased name: value})."""
        head = self._until(b"\r\n\r\n").decode("latin-1")
        lines = head.split("\r\n")
        m = re.match(r"HTTP/1\.[01] (\d{3})", lines[0])
        if not m:
            raise Truncated(f"not a status line: {lines[0][:80]!r}", self.received)
        headers = {}
        for line in lines[1:]:
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
        self.headers = headers
        return int(m.group(1)), headers

    def body_pieces(self):
        """Yields the body as it arrives (chunked, Content-Length or to the close)."""
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            while True:
                size = int(self._until(b"\r\n").split(b";")[0].strip() or b"x", 16)
                if size == 0:
                    self._until(b"\r\n")
                    return
                piece = self._take(size)
                self._take(2)
                yield piece
        elif "content-length" in self.headers:
            n = int(self.headers["content-length"])
            if n:
                yield self._take(n)
        else:
            while self._fill() or self._buf:
                piece, self._buf = self._buf, b""
                yield piece


def call(port, method, path, body=None, timeout=60.0, headers=None):
    """A whole request: returns (status, body bytes). Raises OSError, Truncated or Hang."""
    data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
    ex = Exchange(port, timeout)
    try:
        ex.send(request_bytes(method, path, data or b"", headers))
        status, _ = ex.read_head()
        return status, b"".join(ex.body_pieces())
    finally:
        ex.close()


def sse_events(pieces):
    """Yields each `data:` payload (str) of an event stream given as byte pieces."""
    buf = b""
    for piece in pieces:
        buf += piece
        while b"\n\n" in buf:
            event, buf = buf.split(b"\n\n", 1)
            for line in event.split(b"\n"):
                if line.startswith(b"data: "):
                    yield line[6:].decode("utf-8")
                elif line and not line.startswith(b":"):
                    raise ValueError(f"not an SSE line: {line[:80]!r}")
    if buf.strip():
        raise ValueError(f"stream ends inside an event: {buf[:80]!r}")


def health(port, timeout=5.0):
    try:
        return call(port, "GET", "/health", timeout=timeout)[0] == 200
    except (OSError, Truncated, Hang):
        return False


def metrics(port, timeout=10.0):
    """The /metrics gauges and counters without labels other than the model's: {name: value}."""
    status, body = call(port, "GET", "/metrics", timeout=timeout)
    if status != 200:
        raise RuntimeError(f"/metrics answered {status}")
    out = {}
    for line in body.decode().splitlines():
        m = re.match(r"^[a-z]+:([a-z_]+)(?:\{model_name=\"[^\"]*\"\})? (\S+)$", line)
        if m:
            out[m.group(1)] = float(m.group(2))
    return out


def rss_kib(pid):
    """VmRSS of a process in KiB, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


class Server:
    """loom-server started as a child; its output goes to a log file (or is dropped)."""

    def __init__(self, binary, args, port=0, log=None, start_timeout=180.0):
        self.log_path = log
        self.proc = subprocess.Popen([binary, *args, "--host", "127.0.0.1", "--port", str(port)],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.port = port
        served = threading.Event()

        def pump():  # with --port 0 the "serving ... on http://h:p" line says where it listens
            sink = open(log, "ab") if log else None
            for line in self.proc.stdout:
                if sink:
                    sink.write(line)
                    sink.flush()
                m = re.search(rb"serving .* on http://[^:\s]+:(\d+)", line)
                if m and not served.is_set():
                    self.port = int(m.group(1))
                    served.set()
            served.set()
            if sink:
                sink.close()

        threading.Thread(target=pump, daemon=True).start()
        deadline = time.monotonic() + start_timeout
        if port == 0 and (not served.wait(start_timeout) or self.port == 0):
            raise RuntimeError(f"the server did not say where it serves (exit {self.proc.poll()})")
        while not health(self.port, 2.0):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the server did not come up (exit {self.proc.poll()})")
            time.sleep(0.1)

    @property
    def pid(self):
        return self.proc.pid

    def alive(self):
        return self.proc.poll() is None

    def stop(self, timeout=60.0):
        """SIGTERM, then SIGKILL past the timeout; returns the exit status (or a sentence)."""
        if self.proc.poll() is not None:
            return self.proc.returncode
        self.proc.terminate()
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return f"killed after {timeout:.0f} s"

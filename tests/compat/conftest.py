"""Fixtures for the Hindsight compatibility suite.

The Go test in this folder (compat_test.go) starts a real `memstream serve`
and runs this suite with Hindsight's own published client against it. The
environment tells where:

  MEMSTREAM_URL         base URL of the server
  MEMSTREAM_ADMIN_KEY   a bearer key with admin scope on every bank
  MEMSTREAM_BANK_KEY    a key with write scope on bank "scoped-bank" only
  COMPAT_RESULTS        where to write the per-method results (JSON)

Every test names the client method(s) it covers with @covers. At the end
of the session the results file lists each non-deprecated client method,
its route and whether it worked, which is what docs/COMPATIBILITY.md shows.
"""

import asyncio
import inspect
import json
import os
import re
import time
import uuid

import pytest

import hindsight_client_api.api as generated
from hindsight_client import Hindsight

_COVERED: dict[str, list[str]] = {}  # nodeid -> methods
_OUTCOMES: dict[str, tuple[str, str]] = {}  # nodeid -> (outcome, reason)


def covers(*methods: str):
    """Marks a test as the check of the named client methods ("MemoryApi.recall_memories")."""

    def mark(fn):
        fn._covers = methods
        return fn

    return mark


def client_methods() -> dict[str, dict]:
    """Every method of the generated client: its route, and whether it is deprecated.

    Read from the installed client itself, so the suite measures the client as
    published rather than a list kept by hand.
    """
    out = {}
    for cname in dir(generated):
        cls = getattr(generated, cname)
        if not inspect.isclass(cls) or not cname.endswith("Api"):
            continue
        for name, fn in inspect.getmembers(cls, inspect.isfunction):
            if name.startswith("_") or name.endswith(("_with_http_info", "_without_preload_content")):
                continue
            ser = getattr(cls, f"_{name}_serialize", None)
            route = ""
            if ser is not None:
                m = re.search(r"method='(\w+)',\s*resource_path='([^']+)'", inspect.getsource(ser))
                if m:
                    route = f"{m.group(1)} {m.group(2)}"
            out[f"{cname}.{name}"] = {"route": route, "deprecated": "warnings.warn" in inspect.getsource(fn)}
    return out


def pytest_collection_modifyitems(items):
    for item in items:
        fn = getattr(item, "function", None)
        if fn is not None and hasattr(fn, "_covers"):
            _COVERED[item.nodeid] = list(fn._covers)


def pytest_runtest_logreport(report):
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        reason = ""
        outcome = report.outcome
        if hasattr(report, "wasxfail"):
            outcome, reason = ("xfailed" if report.skipped else "xpassed"), report.wasxfail
        elif report.failed:
            reason = str(report.longrepr).strip().splitlines()[-1][:200] if report.longrepr else ""
        _OUTCOMES[report.nodeid] = (outcome, reason)


def pytest_sessionfinish(session, exitstatus):
    path = os.environ.get("COMPAT_RESULTS")
    if not path:
        return
    methods = client_methods()
    results = {}
    for nodeid, names in _COVERED.items():
        outcome, reason = _OUTCOMES.get(nodeid, ("not run", ""))
        for name in names:
            prev = results.get(name)
            # A method checked by several tests works only if all of them pass.
            if prev is None or prev["outcome"] == "passed":
                results[name] = {"outcome": outcome, "reason": reason, "test": nodeid.split("::")[-1]}
    with open(path, "w") as f:
        json.dump({"methods": methods, "results": results}, f, indent=1, sort_keys=True)


# --- fixtures -------------------------------------------------------------


@pytest.fixture(scope="session")
def loop():
    lp = asyncio.new_event_loop()
    asyncio.set_event_loop(lp)
    yield lp
    lp.close()


@pytest.fixture(scope="session")
def url() -> str:
    return os.environ["MEMSTREAM_URL"]


@pytest.fixture(scope="session")
def admin_key() -> str:
    return os.environ["MEMSTREAM_ADMIN_KEY"]


@pytest.fixture(scope="session")
def client(url, admin_key, loop):
    c = Hindsight(base_url=url, api_key=admin_key, timeout=60)
    yield c
    loop.run_until_complete(c.aclose())


@pytest.fixture(scope="session")
def run(loop):
    """run(coro) runs one coroutine of the generated (async) client."""
    return loop.run_until_complete


def fresh_bank(prefix: str = "b") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


@pytest.fixture(scope="session")
def seeded(client, run):
    """A bank with a few memories persisted through the client's own retain."""
    bank = fresh_bank("seeded")
    client.create_bank(bank, name="Seeded bank", mission="Remember what Alice says.")
    resp = client.retain_batch(
        bank,
        [
            {"content": "Alice moved to Lisbon in March 2024 and works at Acme as a data engineer.",
             "context": "profile", "tags": ["user:alice"], "timestamp": "2024-03-02T10:00:00Z",
             "metadata": {"source": "chat"}, "document_id": "doc-alice"},
            {"content": "Alice prefers green tea over coffee, especially in the morning.",
             "tags": ["user:alice"], "timestamp": "2024-03-05T08:00:00", "document_id": "doc-alice"},
            {"content": "Bob fixed the outage ticket INC-48213 on the payments cluster with Alice.",
             "tags": ["team:ops"], "document_id": "doc-bob"},
        ],
    )
    assert resp.success and resp.items_count == 3
    return bank


def wait_until(predicate, timeout=30.0, interval=0.2):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    return last


class _Sink:
    """A local HTTP server that records webhook deliveries (body, signature)."""

    def __init__(self):
        import http.server
        import threading

        sink = self
        self.received: list[tuple[bytes, str]] = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                sink.received.append((body, self.headers.get("X-Hindsight-Signature", "")))
                self.send_response(200)
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args):
                pass

        self._srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._srv.server_address[1]}/hook"
        self._t = threading.Thread(target=self._srv.serve_forever, daemon=True)
        self._t.start()

    @staticmethod
    def verify(body: bytes, signature: str, secret: str) -> bool:
        import hashlib
        import hmac

        want = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
        return hmac.compare_digest(want, signature)

    def close(self):
        self._srv.shutdown()
        self._srv.server_close()


@pytest.fixture
def webhook_sink():
    s = _Sink()
    yield s
    s.close()

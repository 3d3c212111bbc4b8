"""Shared test setup and helpers: agent.py is imported from the repository root; property tests try 50 examples.

PROPERTY_EXAMPLES=N (or its older name PARSER_EXAMPLES=N) runs every property test that does not fix
its own count with N examples, for a deeper local run: PROPERTY_EXAMPLES=2500 python -m pytest -q

The helpers a test file imports (``from conftest import call, final, make_tools``):
- ``call(name, **arguments)`` and ``final(answer)``: the text of a model reply, to script MockLLM or a server;
- ``replay_file(tmp_path, *replies)``: the same replies as a trace file for ``--replay``;
- ``make_tools(ran)``: the registry most loop tests use (echo, add, fail, delete);
- ``offline_env()``: the environment without OPENAI_* variables, for running agent.py as a program.
The fixtures: ``serve`` starts scripted local HTTP servers (tests/_http_servers.py);
``no_model_configured`` removes OPENAI_MODEL, OPENAI_BASE_URL and OPENAI_API_KEY for one test.
"""
import json
import os
import signal
import sys
import tempfile

import pytest
from hypothesis import settings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
# About a hundred tests run agent.py as a program. With PYTHONDONTWRITEBYTECODE set (as on the machines
# this suite runs on) each of them compiled its 8,000 lines again; bytecode kept outside the repository,
# in the temp directory, is compiled once (where it cannot be written, Python compiles as before).
# It changes nothing a test sees.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
os.environ.setdefault("PYTHONPYCACHEPREFIX", os.path.join(tempfile.gettempdir(), "agentpy-pycache"))
# The Ctrl-C tests send SIGINT to this process and to the programs they start. A run started in the
# background of a shell script (`nohup ... &`) inherits SIGINT ignored, and four of them then failed
# for that alone (2026-12-07); Python's own handler makes the run what it is at a terminal.
signal.signal(signal.SIGINT, signal.default_int_handler)

from _http_servers import ScriptedServer  # noqa: E402  (beside this file; agent.py only once ROOT is on the path)
from agent import ToolRegistry  # noqa: E402

DEEP = int(os.environ.get("PROPERTY_EXAMPLES") or os.environ.get("PARSER_EXAMPLES") or 0)
# No deadline: the suite runs beside other work, and a slow example is not a wrong one
settings.register_profile("suite", max_examples=DEEP or 50, deadline=None)
settings.load_profile("suite")


# -- scripted replies ------------------------------------------------------------------

def call(name, thought="t", **arguments):
    """A model reply that calls the tool name with arguments."""
    return json.dumps({"type": "tool_call", "thought": thought, "name": name, "arguments": arguments})


def final(answer, thought="done"):
    """A model reply that gives the final answer."""
    return json.dumps({"type": "final", "thought": thought, "answer": answer})


def replay_file(tmp_path, *replies, finish_reasons=None):
    """A trace file (JSON lines, one step each) that --replay reads the replies back from; its path."""
    path = tmp_path / "replies.jsonl"
    reasons = finish_reasons or [None] * len(replies)
    path.write_text("".join(json.dumps({"event": "step", "index": i + 1, "raw": raw, "finish_reason": reason}) + "\n"
                            for i, (raw, reason) in enumerate(zip(replies, reasons))))
    return str(path)


# -- tools -----------------------------------------------------------------------------

def make_tools(ran=None):
    """echo, add, fail (always raises) and delete (asks first); each call that runs is appended to ran."""
    ran = [] if ran is None else ran
    registry = ToolRegistry()

    @registry.register
    def echo(text: str) -> str:
        """Echo text back."""
        ran.append(("echo", text))
        return text

    @registry.register
    def add(a: int, b: int) -> int:
        """Add two integers."""
        ran.append(("add", a, b))
        return a + b

    @registry.register
    def fail() -> str:
        """Always fails."""
        raise RuntimeError("disk on fire")

    @registry.register(confirm=True)
    def delete(path: str) -> str:
        """Delete a file (asks first)."""
        ran.append(("delete", path))
        return f"deleted {path}"

    return registry


# -- the environment -------------------------------------------------------------------

def offline_env():
    """os.environ without the OPENAI_* variables: agent.py run as a program uses its offline demo model."""
    return {key: value for key, value in os.environ.items() if not key.startswith("OPENAI_")}


@pytest.fixture
def no_model_configured(monkeypatch):
    """No model, base URL or key in the environment for this test."""
    for name in ("OPENAI_MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def serve():
    """Start scripted local HTTP servers (tests/_http_servers.py) for one test; they are closed after it."""
    servers = []

    def start(*scripts, host="127.0.0.1"):
        server = ScriptedServer(scripts, host)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()


@pytest.fixture
def clock(monkeypatch):
    """The agent loop's clock, standing still until a test moves it (``clock[0] += seconds``)."""
    import agent

    now = [1000.0]
    monkeypatch.setattr(agent, "_now", lambda: now[0])
    return now

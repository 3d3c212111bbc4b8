"""Shared test setup: agent.py is imported from the repository root; property tests try 100 examples each.

PROPERTY_EXAMPLES=N (or its older name PARSER_EXAMPLES=N) runs every property test that does not fix
its own count with N examples, for a deeper local run: PROPERTY_EXAMPLES=2500 python -m pytest -q
"""
import os
import sys

import pytest
from hypothesis import settings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

DEEP = int(os.environ.get("PROPERTY_EXAMPLES") or os.environ.get("PARSER_EXAMPLES") or 0)
# No deadline: the suite runs beside other work, and a slow example is not a wrong one
settings.register_profile("suite", max_examples=DEEP or 100, deadline=None)
settings.load_profile("suite")


@pytest.fixture
def serve():
    """Start scripted local HTTP servers (tests/_http_servers.py) for one test; they are closed after it."""
    from _http_servers import ScriptedServer

    servers = []

    def start(*scripts):
        server = ScriptedServer(scripts)
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

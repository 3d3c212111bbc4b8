"""MCP: the cost of one call over the server's own time, prompt sizes before and after trimming, startup.

    python bench/mcp.py [--git PYTHON]      (PYTHON: an interpreter with mcp-server-git installed)

Needs the test tools (tests/requirements.txt: the mcp SDK, mcp-server-time). "Raw" is the same
tools/call written by hand on the same kind of connection (a JSON line on a pipe; one POST with
http.client): the server's own time, transport included. agent.py's cost is the difference.
"""
import json
import os
import subprocess
import sys
import time

from _common import ROOT, machine, median, table

sys.path.insert(0, os.path.join(ROOT, "tests"))

import agent  # noqa: E402
from test_mcp import SDK_SERVER, _http_sdk_server  # noqa: E402

CALLS = 300
CALL = {"jsonrpc": "2.0", "id": 0, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "hi"}}}
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}


def timed(func, n=CALLS):
    times = []
    for _ in range(n):
        started = time.perf_counter()
        func()
        times.append(time.perf_counter() - started)
    return median(times) * 1e6


def raw_stdio():
    process = subprocess.Popen(SDK_SERVER, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    message = dict(CALL, params=dict(CALL["params"], _meta=META))

    def once():
        process.stdin.write(json.dumps(message).encode() + b"\n")
        process.stdin.flush()
        while b'"result"' not in process.stdout.readline():
            pass

    once()   # the first call waits for the SDK's import
    figure = timed(once)
    process.stdin.close()
    process.wait()
    return figure


def raw_http(url):
    import http.client
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    body = json.dumps(dict(CALL, params=dict(CALL["params"], _meta=META))).encode()
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
               "Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "echo"}

    def once():
        connection = http.client.HTTPConnection(parts.hostname, parts.port)   # a new connection, as agent.py's
        connection.request("POST", parts.path, body, headers)
        connection.getresponse().read()
        connection.close()

    return timed(once)


def call_costs():
    rows = []
    with agent.ToolRegistry() as registry:
        registry.add_mcp(SDK_SERVER)
        rows.append(("stdio", timed(lambda: registry.call("echo", {"text": "hi"})), raw_stdio()))
    process, url = _http_sdk_server()
    try:
        with agent.ToolRegistry() as registry:
            registry.add_mcp(url)
            rows.append(("HTTP", timed(lambda: registry.call("echo", {"text": "hi"})), raw_http(url)))
    finally:
        process.terminate()
        process.wait()
    return [(name, f"{ours:,.0f}", f"{raw:,.0f}", f"{ours - raw:,.0f}") for name, ours, raw in rows]


def prompt_sizes(label, command):
    """Characters of the tool listing in the prompt: the full descriptions and schemas, then as trimmed."""
    with agent.ToolRegistry() as registry:
        registry.add_mcp(command, timeout=60)
        session = registry._servers[0]
        specs = session.list_tools()
        before = sum(len(f"- {s['name']}: {s.get('description', '')} "
                         f"{json.dumps(s.get('inputSchema'), ensure_ascii=False, separators=(',', ':'))}") + 1
                     for s in specs)
        after = len(agent._render_prompt("{tools}", registry)) + 1
    return (label, len(specs), f"{before:,}", f"{after:,}", f"{100 * (before - after) / before:.0f}%")


def startup(command, n=5):
    times = []
    for _ in range(n):
        started = time.perf_counter()
        with agent.ToolRegistry() as registry:
            registry.add_mcp(command, timeout=60)
            times.append(time.perf_counter() - started)
    return f"{median(times):.2f}"


def main():
    print(machine())
    print(f"\nOne call of a tool that echoes its text: median of {CALLS} calls, microseconds")
    table(["transport", "agent.py", "raw (server's own)", "agent.py's cost"], call_costs())
    print("\nThe tool listing of the system prompt, characters")
    rows = [prompt_sizes("mcp-server-time", [sys.executable, "-m", "mcp_server_time"])]
    if "--git" in sys.argv:
        python = sys.argv[sys.argv.index("--git") + 1]
        rows.append(prompt_sizes("mcp-server-git", [python, "-m", "mcp_server_git", "--repository", ROOT]))
    table(["server", "tools", "before", "after", "saved"], rows)
    print("\nStartup of a registry with one server (start, handshake, tools/list): median of 5, seconds")
    table(["server", "seconds"], [
        ("scripted (plain Python)", startup([sys.executable, os.path.join(ROOT, "tests", "mcp_scripted_server.py")])),
        ("mcp-server-time", startup([sys.executable, "-m", "mcp_server_time"]))])


if __name__ == "__main__":
    main()

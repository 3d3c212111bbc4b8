"""MCP: ToolRegistry.add_mcp over stdio and Streamable HTTP, both protocol eras, hostile servers, the CLI.

Real servers from PyPI (mcp-server-time, and tests/mcp_sdk_server.py on the official SDK) start in parallel
when a test first asks for them, once per run (session fixture `real`); the scripted servers
(tests/mcp_scripted_server.py, plain Python) start in milliseconds, one per test that breaks them.
"""
import atexit
import json
import logging
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import call, final

import agent
from agent import ToolError, ToolRegistry, main

HERE = Path(__file__).parent
SCRIPTED = [sys.executable, str(HERE / "mcp_scripted_server.py")]
SDK_SERVER = [sys.executable, str(HERE / "mcp_sdk_server.py")]
HAS_SDK = all(__import__("importlib").util.find_spec(name) for name in ("mcp", "mcp_server_time"))
needs_sdk = pytest.mark.skipif(not HAS_SDK, reason="the mcp SDK and mcp-server-time (tests/requirements.txt)")


def scripted(*args, timeout=2.0, call_timeout=None, **options):
    """A registry with the scripted server. call_timeout: the calls' limit after an open with the
    longer timeout, so a short limit under test does not also fail the handshake on a busy machine."""
    registry, caller = ToolRegistry(), agent._mcp_caller
    if call_timeout is not None:
        agent._mcp_caller = lambda session, remote, _: caller(session, remote, call_timeout)
    try:
        registry.add_mcp(SCRIPTED + list(args or ["old"]), timeout=timeout, **options)
    finally:
        agent._mcp_caller = caller
    if call_timeout is not None:
        registry._servers[-1].seconds = call_timeout   # the session's own waits (a write, a ping)
    return registry


@pytest.fixture(scope="module")
def old():
    """One old-era scripted server for the tests that do not break it."""
    with scripted("old") as registry:
        yield registry


@pytest.fixture
def modern():
    with scripted("modern") as registry:
        yield registry


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _http_sdk_server():
    """Start the SDK server on Streamable HTTP; return (process, URL) once uvicorn says it listens."""
    port = _free_port()
    process = subprocess.Popen(SDK_SERVER + [str(port)], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL)
    for line in iter(process.stderr.readline, b""):          # bounded by the server: it exits or listens
        if b"Uvicorn running" in line:
            break
    threading.Thread(target=process.stderr.read, daemon=True).start()   # keep its log pipe drained
    return process, f"http://127.0.0.1:{port}/mcp"


def _start_real_servers():
    """Registries of the real servers, opened at once: time (stdio), sdk (stdio), http (the SDK on HTTP)."""
    registries = {name: ToolRegistry() for name in ("time", "sdk", "http")}
    with ThreadPoolExecutor(3) as pool:
        http = pool.submit(_http_sdk_server)
        opened = [pool.submit(registries["time"].add_mcp, [sys.executable, "-m", "mcp_server_time"], timeout=30),
                  pool.submit(registries["sdk"].add_mcp, SDK_SERVER, timeout=30)]
        process, url = http.result()
        atexit.register(process.kill)           # also when the other servers fail to open
        registries["http"].add_mcp(url, timeout=30)
        for future in opened:
            future.result()
    return registries, process


# Not started when this file is imported, as they were: every xdist worker imports every test file, so each
# worker started all three (five seconds of CPU in all, mostly importing the SDK) at the start of the run,
# whether it ran their tests or not. Nor in the background while this file's other tests run: those give the
# scripted servers 0.2 s to answer. The worker that runs the first of their tests waits for them (about two
# seconds, nearly all of it CPU the machine's two cores spend on them anyway).
@pytest.fixture(scope="session")
def real():
    if not HAS_SDK:
        pytest.skip("the mcp SDK and mcp-server-time (tests/requirements.txt)")
    registries, process = _start_real_servers()
    yield registries
    with ThreadPoolExecutor(3) as pool:           # each waits for its server to exit
        list(pool.map(ToolRegistry.close, registries.values()))
    process.terminate()
    process.wait(timeout=10)


# -- real servers ----------------------------------------------------------------------------------------

@needs_sdk
def test_mcp_server_time_over_stdio(real):
    registry = real["time"]
    assert {"get_current_time", "convert_time"} <= {tool.name for tool in registry}
    assert json.loads(registry.call("get_current_time", {"timezone": "Asia/Tokyo"}))["timezone"] == "Asia/Tokyo"
    assert registry.call("get_current_time", {"timezone": "Nowhere/Else"}).startswith("ERROR: 'get_current_time'")


@needs_sdk
@pytest.mark.parametrize("transport", ["sdk", "http"])
def test_sdk_server_tools_and_results(real, transport):
    registry = real[transport]
    assert registry._servers[0].version == "2026-07-28"
    assert registry.call("add", {"a": 2, "b": 40}) == "42"
    assert registry.get("add").description == "Add two integers."          # the first paragraph only
    assert registry.call("picture", {}).startswith("[image: image/png, about ")
    assert registry.call("fail", {"message": "no disk"}).startswith("ERROR: 'fail' failed:")
    assert registry.get("wipe").confirm is True                              # destructiveHint
    assert registry.call("wipe", {"path": "x"}).startswith("ERROR: the user declined")
    assert registry.call("wipe", {"path": "x"}, confirm=lambda name, arguments: True) == "wiped x"


@needs_sdk
@pytest.mark.parametrize("transport", ["sdk", "http"])
def test_one_connection_serves_concurrent_calls(real, transport):
    registry = real[transport]
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda n: registry.call("echo", {"text": f"call {n}"}), range(16)))
    assert answers == [f"call {n}" for n in range(16)]


@needs_sdk
def test_an_agent_runs_an_mcp_tool(real):
    llm = agent.MockLLM([call("add", a=2, b=40), final("42")])
    result = agent.Agent(llm, real["sdk"]).run("What is 2 + 40?")
    assert result.answer == "42" and result.steps[0].observation.startswith('[OBSERVATION] add({"a":2,"b":40}) returned: 42\n')
    assert "- add: Add two integers." in agent._render_prompt(None, real["sdk"])


# -- both eras, over stdio -------------------------------------------------------------------------------

def test_old_server_gets_the_handshake_and_pages_are_followed(old):
    assert old._servers[0].version == "2025-11-25" and old._servers[0].modern is False
    assert len(old) == 20                                  # three pages of tools/list
    assert old.call("echo", {"text": "hi"}) == "hi"


def test_modern_server_is_recognised_by_discover(modern):
    assert modern._servers[0].version == "2026-07-28" and modern._servers[0].modern is True


def test_silent_old_server_gets_initialize_after_the_probe(monkeypatch):
    monkeypatch.setattr(agent._McpStdio, "probe_seconds", 0.05)
    with scripted("silent") as registry:
        assert registry._servers[0].version == "2025-11-25"
        assert registry.call("echo", {"text": "hi"}) == "hi"


def test_slow_modern_start_is_not_taken_for_an_old_server(monkeypatch):
    monkeypatch.setattr(agent._McpStdio, "probe_seconds", 0.05)  # initialize is sent too, long before discover's answer
    with scripted("modern", env={"SCRIPTED_DELAY": "0.25"}) as registry:
        assert registry._servers[0].version == "2026-07-28"
        assert registry.call("echo", {"text": "hi"}) == "hi"


def test_a_command_string_is_split_as_a_shell_would(tmp_path):
    with ToolRegistry() as registry:
        names = registry.add_mcp(f'"{SCRIPTED[0]}" "{SCRIPTED[1]}" old', tools=["echo"])
        assert names == ["echo"] and registry.call("echo", {"text": "a; rm -rf /"}) == "a; rm -rf /"


# -- results the model can read --------------------------------------------------------------------------

def test_every_content_type_becomes_text(old):
    assert old.call("contents", {}) == "\n".join([
        "first", "last", "[image: image/png, about 300 bytes, not shown]", "[audio: audio/wav, about 3 bytes, not shown]",
        "[resource link: a.txt: file:///tmp/a.txt]", "embedded text", "[resource file:///tmp/c.bin: x/y, about 3 bytes]"])


def test_structured_content_is_json_when_there_is_no_text(old):
    assert old.call("structured", {}) == '{"temperature": 21.5}'


@pytest.mark.parametrize("tool, start", [
    ("fails", "ERROR: 'fails' failed: disk full."),
    ("refuses", "ERROR: the MCP server refused 'refuses': Unknown tool: refuses (JSON-RPC error -32602)."),
])
def test_errors_become_error_observations(old, tool, start):
    assert old.call(tool, {}).startswith(start)


def test_a_server_reported_failure_is_a_failed_step_and_its_text_is_the_same(old):
    failed = "ERROR: 'fails' failed: disk full. Check the arguments or try another approach."
    llm = agent.MockLLM([call("fails"), call("echo", text="ERROR: not really"), final("x")])
    result = agent.Agent(llm, old).run("t")
    assert result.steps[0].error == failed
    assert result.steps[0].observation == f"[OBSERVATION] {failed}\n(step 1 of 10)"
    assert result.steps[1].error is None              # a tool's own text that starts with ERROR:
    assert result.steps[1].observation == ('[OBSERVATION] echo({"text":"ERROR: not really"}) returned: '
                                            "ERROR: not really\n(step 2 of 10)")
    assert old._result("refuses", {}).failed is True
    assert old._result("echo", {"text": "ERROR: not really"}).failed is False


def test_input_required_is_a_tool_error(modern):
    assert modern.call("wants_input", {}).startswith("ERROR: 'wants_input' asked for input from a person")
    assert modern._result("wants_input", {}).failed is True


def test_a_ten_megabyte_result_is_truncated_like_a_local_tools(old):
    text = old.call("big", {}, max_chars=1000)
    assert len(text) < 1100 and "characters cut" in text


# -- hostile servers -------------------------------------------------------------------------------------

def test_non_json_stdout_lines_are_skipped_and_logged(old, caplog):
    with caplog.at_level(logging.WARNING, logger="agent"):
        assert old.call("noisy", {}) == "done"
    assert "Starting up... not JSON" in caplog.text and "'[1, 2" in caplog.text


def test_answers_are_matched_by_id(old, caplog):
    with caplog.at_level(logging.WARNING, logger="agent"):
        assert old.call("wrong_id", {}) == "right"        # not the stray id, not a boolean id, not the repeat
        assert old.call("echo", {"text": "next"}) == "next"
    assert "which no caller waits for" in caplog.text and "id True" in caplog.text


def test_a_server_that_dies_mid_call_is_an_error_quoting_its_stderr():
    with scripted() as registry:
        text = registry.call("die", {})
        assert text.startswith("ERROR: 'die' could not be called:")
        assert "exited with code 3" in text and "fatal: the tool crashed" in text
        assert registry.call("echo", {"text": "x"}).startswith("ERROR: 'echo' could not be called")


def test_a_hung_call_times_out_alone():
    with scripted(call_timeout=0.5) as registry:
        with ThreadPoolExecutor(2) as pool:
            hung = pool.submit(registry.call, "hang", {})
            assert registry.call("echo", {"text": "meanwhile"}) == "meanwhile"
            assert not hung.done()
            assert hung.result(timeout=5).startswith("ERROR: 'hang' got no answer from its MCP server within 0.5 s")
            assert registry._result("hang", {}).failed is True
        assert registry.call("echo", {"text": "after"}) == "after"


def test_a_100_mb_line_ends_the_connection_without_reading_it_whole(monkeypatch):
    monkeypatch.setattr(agent._McpSession, "MAX_MESSAGE_BYTES", 2**20)   # the cap, lowered: the test ends sooner
    with scripted() as registry:
        text = registry.call("huge_line", {})
        assert text.startswith("ERROR: 'huge_line' could not be called") and "over 1,048,576 bytes" in text


SECRET = "tok-0123456789-SECRET"


def closes_within(registry, seconds):
    """True when registry.close() returns within seconds (it runs on a thread: an old close() could hang)."""
    closer = threading.Thread(target=registry.close, daemon=True)
    closer.start()
    closer.join(seconds)
    return not closer.is_alive()


def gone(pid, seconds=2.0):
    """True once process pid has ended (a zombie counts as ended) within seconds."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                if stat.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.02)
    return False


def test_server_errors_that_quote_a_secret_are_scrubbed(caplog):
    with caplog.at_level(logging.DEBUG, logger="agent"):
        with scripted("old", env={"SERVER_TOKEN": SECRET}) as registry:
            texts = [registry.call("leak", {}), registry.call("leak_rpc", {})]
            result = agent.Agent(agent.MockLLM([call("leak_rpc"), final("x")]), registry).run("t")
    assert texts[0].startswith("ERROR: 'leak' failed: upstream said: bad token ***")
    assert texts[1].startswith("ERROR: the MCP server refused 'leak_rpc': refused Bearer ***")
    assert "SECRET" not in "".join(texts) + json.dumps(result.to_dict()) + caplog.text


def test_a_dead_servers_stderr_is_scrubbed(caplog):
    with caplog.at_level(logging.DEBUG, logger="agent"):
        with scripted("old", env={"SERVER_TOKEN": SECRET}) as registry:
            text = registry.call("die", {})
    assert "fatal: the tool crashed; 401 for url: https://api.example.com/v1?api_key=***" in text
    assert "SECRET" not in text + caplog.text


def test_a_token_in_the_command_never_shows():
    with scripted("old", "--access-token", SECRET, f"--api-key={SECRET}x", f"TOKEN={SECRET}y") as registry:
        label = registry._servers[0].label
        text = registry.call("die", {})
    assert label.startswith("python ") and label.endswith("old --access-token *** --api-key=*** TOKEN=***")
    assert "SECRET" not in text and "MCP server python" in text


@pytest.mark.parametrize("argv, shown", [
    (["npx", "mcp-remote", "https://h/sse", "--header", f"Authorization: Bearer {SECRET}"],
     "npx mcp-remote https://h/sse --header Authorization: ***"),
    (["mcp-server-postgres", f"postgresql://me:{SECRET}@db/x?sslkey={SECRET}1"],
     "mcp-server-postgres postgresql://me:***@db/x?sslkey=***"),
    (["docker", "run", "-e", f"GITHUB_PERSONAL_ACCESS_TOKEN={SECRET}", "ghcr.io/github/github-mcp-server"],
     "docker run -e GITHUB_PERSONAL_ACCESS_TOKEN=*** ghcr.io/github/github-mcp-server"),
    (["server", "--data-dir", "/home/me/projects/2026-notes", "--monkey", "12"],
     "server --data-dir /home/me/projects/2026-notes --monkey 12"),
    (["server", "-t", SECRET, "--pat", SECRET, "--bearer", SECRET, "--creds", SECRET],
     "server -t *** --pat *** --bearer *** --creds ***"),
    (["sentry-mcp", f"https://{SECRET}1@o1.ingest.sentry.io/42", "--path", "/usr/bin"],
     "sentry-mcp https://***@o1.ingest.sentry.io/42 --path /usr/bin"),
])
def test_the_label_of_a_command_hides_its_tokens(argv, shown):
    assert agent._McpStdio(argv, {}, None, {"ROOT": "/home/me/projects/2026-notes"}).label == shown


def test_a_named_server_is_named_so_in_messages():
    with scripted("old", name="clock") as registry:
        assert registry.call("clock_die", {}).startswith("ERROR: 'die' could not be called: MCP server 'clock' "
                                                          "exited with code 3")


def test_a_server_that_stops_reading_cannot_hold_a_write_or_close(monkeypatch):
    monkeypatch.setattr(agent._McpStdio, "close_seconds", 0.2, raising=False)
    registry = scripted(call_timeout=0.3)
    assert registry.call("stop_reading", {}).startswith("ERROR: 'stop_reading' got no answer")
    started = time.monotonic()
    text = registry.call("echo", {"text": "x" * 2**20})        # far more than a pipe holds
    assert text.startswith("ERROR: 'echo' could not be called: MCP server") and "stopped reading its stdin" in text
    assert time.monotonic() - started < 10.0   # held, it would wait forever: room for a busy machine
    process = registry._servers[0].transport._process
    assert closes_within(registry, 10.0) and process.returncode is not None


def test_a_ping_flood_while_reading_nothing_holds_neither_the_call_nor_close(monkeypatch):
    monkeypatch.setattr(agent._McpStdio, "close_seconds", 0.2, raising=False)
    registry = scripted(call_timeout=0.3)
    started = time.monotonic()
    assert registry.call("ping_flood", {}).startswith("ERROR: 'ping_flood' got no answer from its MCP server")
    assert time.monotonic() - started < 10.0   # held, it would wait forever: room for a busy machine
    assert closes_within(registry, 10.0)


@pytest.mark.parametrize("tool", ["spawn_child", "spawn_detached"])   # holding the server's pipes, or not
def test_close_ends_the_children_a_server_started(monkeypatch, tool):
    monkeypatch.setattr(agent._McpStdio, "close_seconds", 0.2, raising=False)
    registry = scripted()
    child = int(registry.call(tool, {}))
    assert not gone(child, 0.1)
    assert closes_within(registry, 10.0) and gone(child, 10.0)


FIVE = "echo,fails,bad_schema,refuses,delete"    # five tools, one of them with a schema no validator here enforces


def test_a_tool_whose_schema_cannot_be_enforced_is_left_out_and_the_others_register(caplog):
    with caplog.at_level(logging.WARNING, logger="agent"):
        registry = ToolRegistry()
        names = registry.add_mcp(SCRIPTED + ["old"], env={"SCRIPTED_TOOLS": FIVE}, timeout=2)
    with registry:
        assert names == ["echo", "fails", "refuses", "delete"] and len(registry) == 4
        assert list(registry.left_out) == ["bad_schema"]
        assert "cannot be enforced" in registry.left_out["bad_schema"]
        assert "$dynamicRef" in registry.left_out["bad_schema"]
        assert "1 of its 5 tools left out: 'bad_schema' (its inputSchema cannot be enforced" in caplog.text
        assert registry.call("echo", {"text": "still here"}) == "still here"


@pytest.mark.parametrize("extra, tool, why", [
    ("not_object", "not_object", 'it has no inputSchema of "type": "object"'),
    ("empty_name", "", "its name is empty"),
    ("deep_schema", "deep_schema", f"its inputSchema cannot be enforced: the schema is nested more than "
                                   f"{agent._MAX_SCHEMA_DEPTH} levels deep"),
])
def test_a_tool_that_cannot_be_one_is_left_out_saying_why(extra, tool, why):
    with scripted("old", extra) as registry:
        assert registry.left_out == {tool: why} and len(registry) == 20


def test_asking_for_a_left_out_tool_is_an_error_that_says_why():
    registry = ToolRegistry()
    with pytest.raises(ToolError, match=r"tool 'bad_schema' was left out: its inputSchema cannot be enforced: .*"
                                        r"\$dynamicRef"):
        registry.add_mcp(SCRIPTED + ["old", "bad_schema"], tools=iter(["echo", "bad_schema"]), timeout=2)
    assert len(registry) == 0 and registry._servers == []


def test_two_tools_with_one_valid_name_leave_the_second_out():
    with scripted("old", env={"SCRIPTED_TOOLS": "echo,fails"}, name="x") as registry:
        assert [tool.name for tool in registry] == ["x_echo", "x_fails"]
    session = agent._McpSession(agent._McpStdio(["true"], {}, None, {}), 1.0)
    built, left_out = agent._mcp_built(session, [{"name": "a.b", "inputSchema": {"type": "object"}},
                                                 {"name": "a_b", "inputSchema": {"type": "object"}}], None, 1.0)
    assert [tool.name for _, tool in built] == ["a_b"] and "'a_b', is that of another" in left_out["a_b"]


def test_a_server_that_fails_midway_registers_nothing_and_is_stopped():
    registry = ToolRegistry()
    started = []
    original = agent._McpStdio.start
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(agent._McpStdio, "start", lambda self: (started.append(self), original(self)))
        for name in ("fails", "x_fails"):      # echo registers; fails, and its prefixed name, are taken
            registry.register(agent.Tool(name, "taken", {"type": "object", "properties": {}}, lambda: "x"))
        with pytest.raises(ToolError, match="the tool name 'x_fails' is taken"):
            agent._add_mcp(registry, SCRIPTED + ["old"], env={"SCRIPTED_TOOLS": "echo,fails"}, timeout=2,
                           config_name="x")
    assert [tool.name for tool in registry] == ["fails", "x_fails"] and registry._servers == []
    assert started[0]._process.returncode is not None


# -- safety and options ----------------------------------------------------------------------------------

def test_the_server_gets_a_minimal_environment(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-of-ours")
    with scripted("old", env={"SERVER_TOKEN": "its-own"}) as registry:
        names = registry.call("env", {}).split()
    assert "OPENAI_API_KEY" not in names and "SERVER_TOKEN" in names and "PATH" in names


def test_a_destructive_tool_needs_confirmation(old):
    assert old.get("delete").confirm is True and old.get("echo").confirm is False
    assert old.call("delete", {}).startswith("ERROR: the user declined")
    assert old.call("delete", {}, confirm=lambda name, arguments: True) == "deleted"


def test_tools_filter_prefix_and_collisions():
    with ToolRegistry() as registry:
        assert registry.add_mcp(SCRIPTED + ["old"], tools=["echo"]) == ["echo"]
        assert registry.add_mcp(SCRIPTED + ["old"], tools=["echo"], name="second") == ["second_echo"]
        with pytest.raises(ToolError, match="the tool name 'echo' is taken; give the server a prefix"):
            registry.add_mcp(SCRIPTED + ["old"], tools=["echo"])
        with pytest.raises(ToolError, match="has no tool 'ecko'"):
            registry.add_mcp(SCRIPTED + ["old"], tools=["ecko"])
        assert [tool.name for tool in registry] == ["echo", "second_echo"]


def test_the_prompt_leaves_out_annotations_but_keeps_what_validates(old):
    assert old.get("echo").parameters == {"type": "object", "properties": {"text": {"type": "string"}},
                                          "required": ["text"]}
    assert old.get("echo").description == "Echo the text."
    assert old.call("echo", {"text": 3}).startswith("ERROR: invalid arguments for 'echo'")
    assert agent._listed({"type": "object", "title": "T", "properties": {"title": {"type": "string",
                               "title": "x"}}, "default": {"title": "kept"}}, False) == {
        "type": "object", "properties": {"title": {"type": "string"}}, "default": {"title": "kept"}}


def test_close_stops_the_server_and_later_calls_are_errors():
    with scripted() as registry:
        process = registry._servers[0].transport._process
    assert process.returncode is not None
    assert registry.call("echo", {"text": "x"}).startswith("ERROR: 'echo' could not be called")


def test_a_refused_tool_listing_is_a_tool_error_and_a_usage_error_on_the_cli(capsys):
    with pytest.raises(ToolError, match="could not list its tools: the tool index is broken"):
        scripted("nolist")
    command = " ".join(f'"{part}"' for part in SCRIPTED + ["nolist"])
    assert main(["--mcp", command, "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "task"]) == 2
    assert "could not list its tools" in capsys.readouterr().err


def test_an_answer_no_check_foresaw_is_a_tool_error_and_the_server_is_stopped(monkeypatch):
    def unforeseen(*args):
        raise TypeError(f"unhashable type, near {SECRET}")

    started = []
    original = agent._McpStdio.start
    monkeypatch.setattr(agent._McpStdio, "start", lambda self: (started.append(self), original(self)))
    monkeypatch.setattr(agent, "_mcp_built", unforeseen)
    with pytest.raises(ToolError, match=r"could not be added: TypeError: unhashable type, near \*\*\*"):
        ToolRegistry().add_mcp(SCRIPTED + ["old"], env={"SERVER_TOKEN": SECRET}, timeout=2)
    assert started[0]._process.returncode is not None


@pytest.mark.parametrize("answer, modern", [
    ({"result": {"supportedVersions": 5}}, False),                                      # not a list: not ours
    ({"result": {"supportedVersions": ["2026-07-28"]}}, True),
    ({"error": {"code": -32022, "data": {"supported": [{}, "2025-11-25"]}}}, False),    # unhashable: still read
    ({"error": {"code": -32022, "data": {"supported": [{}, "1999"]}}}, None),
])
def test_a_discover_answer_of_any_shape_is_read_without_crashing(answer, modern):
    session = agent._McpSession(agent._McpStdio(["true"], {}, None, {}), 1.0)
    if modern is None:
        with pytest.raises(agent._McpFailure, match="it speaks only protocol versions {}, 1999"):
            session._is_modern(answer)
    else:
        assert session._is_modern(answer) is modern


def test_a_missing_command_is_a_tool_error():
    with pytest.raises(ToolError, match="command 'no-such-mcp-server' not found"):
        ToolRegistry().add_mcp("no-such-mcp-server --stdio")


# -- Streamable HTTP, scripted ---------------------------------------------------------------------------

def old_http_server(exchange):
    """A 2025-11-25 Streamable HTTP server: discover is refused (400, no session), then a session id."""
    body = exchange.body or {}
    method, ident = body.get("method"), body.get("id")
    if method == "server/discover":
        exchange.head(400, "text/plain", chunked=False)
        exchange.write_raw(b"Bad Request: No valid session ID provided")
        return
    results = {"initialize": {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}},
               "tools/list": {"tools": [{"name": "echo", "inputSchema": {"type": "object", "properties": {
                   "x": {"type": "integer"}}}}]},
               "tools/call": {"content": [{"type": "text", "text": json.dumps(body.get("params"))}]}}
    if ident is None:
        exchange.head(202, "application/json", chunked=False)
        return
    reply = json.dumps({"jsonrpc": "2.0", "id": ident, "result": results[method]}).encode()
    if method == "tools/call":      # as an event stream, a notification first
        exchange.head(200, "text/event-stream", chunked=False)
        exchange.write_raw(b'data: {"jsonrpc": "2.0", "method": "notifications/progress", "params": {}}\n\n')
        exchange.write_raw(b"data: " + reply + b"\n\n")
        return
    exchange.head(200, "application/json", chunked=False, headers={"Mcp-Session-Id": "session-7"})
    exchange.write_raw(reply)


def test_old_http_server_gets_the_handshake_and_its_session_id(serve):
    server = serve(old_http_server)
    with ToolRegistry() as registry:
        registry.add_mcp(server.base_url.replace("/v1", "/mcp"), timeout=2)
        assert json.loads(registry.call("echo", {"x": 1})) == {"name": "echo", "arguments": {"x": 1}}
    methods = [request["body"] and request["body"].get("method") for request in server.requests]
    assert methods[:4] == ["server/discover", "initialize", "notifications/initialized", "tools/list"]
    later = server.requests[-2]["headers"]            # the tools/call
    assert later["Mcp-Session-Id"] == "session-7" and later["Mcp-Protocol-Version"] == "2025-06-18"
    assert server.requests[0]["headers"]["Accept"] == "application/json, text/event-stream"


def test_http_credentials_never_show_in_a_message(serve):
    token = "Bearer tok-0123456789-SECRET"

    def echoes_the_token(exchange):
        exchange.head(401, "text/plain", chunked=False)
        exchange.write_raw(f"bad credentials: {token}".encode())

    server = serve(echoes_the_token)
    with pytest.raises(ToolError) as caught:
        ToolRegistry().add_mcp(server.base_url, headers={"Authorization": token}, timeout=2)
    assert "SECRET" not in str(caught.value) and "HTTP 401" in str(caught.value)
    assert server.requests[0]["headers"]["Authorization"] == token


def http_server(on_call=None, session="session-7"):
    """A 2025-11-25 Streamable HTTP server with one tool, echo; on_call(exchange, ident) answers tools/call."""
    def script(exchange):
        body = exchange.body or {}
        method, ident = body.get("method"), body.get("id")
        if exchange.handler.command == "DELETE" or method == "server/discover" or ident is None:
            exchange.head(400 if method == "server/discover" else 202, "text/plain", chunked=False)
            return
        if method == "tools/call" and on_call is not None:
            on_call(exchange, ident)
            return
        results = {"initialize": {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}},
                   "tools/list": {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]},
                   "tools/call": {"content": [{"type": "text", "text": "echoed"}]}}
        exchange.head(200, "application/json", chunked=False, headers={"Mcp-Session-Id": session})
        exchange.write_raw(json.dumps({"jsonrpc": "2.0", "id": ident, "result": results.get(method, {})}).encode())
    return script


def test_http_texts_that_quote_the_credentials_are_scrubbed(serve):
    def quotes_the_header(exchange, ident):
        token = exchange.handler.headers["Authorization"]
        name = exchange.body["params"]["name"]
        answer = {"error": {"code": -32000, "message": f"refused {token}"}} if name == "refuse" else {
            "result": {"content": [{"type": "text", "text": f"you sent {token}"}], "isError": name == "fail"}}
        exchange.head(200, "application/json", chunked=False)
        exchange.write_raw(json.dumps({"jsonrpc": "2.0", "id": ident, **answer}).encode())

    server = serve(http_server(quotes_the_header))
    with ToolRegistry() as registry:
        registry.add_mcp(server.base_url, headers={"Authorization": f"Bearer {SECRET}"}, timeout=2)
        session = registry._servers[0]
        texts = []
        for name in ("echo", "fail", "refuse"):
            try:
                texts.append(json.dumps(session.request("tools/call", {"name": name, "arguments": {}})))
            except agent._McpFailure as exc:
                texts.append(str(exc))
        texts.append(registry.call("echo", {}))
    assert all("***" in text for text in texts) and "SECRET" not in "".join(texts)


def test_an_http_label_shows_no_path_or_query():
    url = f"http://127.0.0.1:{_free_port()}/mcp/{SECRET}?key={SECRET}"
    with pytest.raises(ToolError) as caught:
        ToolRegistry().add_mcp(url, timeout=2)
    assert "could not reach MCP server http://127.0.0.1:" in str(caught.value) and "SECRET" not in str(caught.value)


def test_a_key_in_the_url_path_is_scrubbed_when_the_server_quotes_it(serve):
    def quotes_the_path(exchange, ident):
        exchange.head(200, "application/json", chunked=False)
        exchange.write_raw(json.dumps({"jsonrpc": "2.0", "id": ident, "error": {
            "code": -32000, "message": f"no route {exchange.handler.path}"}}).encode())

    server = serve(http_server(quotes_the_path))
    with ToolRegistry() as registry:
        registry.add_mcp(server.base_url.replace("/v1", f"/{SECRET}/mcp"), timeout=2)
        text = registry.call("echo", {})
    assert text.startswith("ERROR: the MCP server refused 'echo': no route /***/mcp") and "SECRET" not in text


def test_a_bom_before_an_http_answer_is_dropped(serve):
    def bom_stream(exchange, ident):
        exchange.head(200, "text/event-stream", chunked=False)
        reply = {"jsonrpc": "2.0", "id": ident, "result": {"content": [{"type": "text", "text": "after a BOM"}]}}
        exchange.write_raw(b"\xef\xbb")                  # the BOM cut between two reads
        time.sleep(0.05)
        exchange.write_raw(b"\xbf" + b"data: " + json.dumps(reply).encode() + b"\n\n")

    def script(exchange):
        if (exchange.body or {}).get("method") == "initialize":
            exchange.head(200, "application/json", chunked=False)
            exchange.write_raw(b"\xef\xbb\xbf" + json.dumps({"jsonrpc": "2.0", "id": exchange.body["id"], "result": {
                "protocolVersion": "2025-06-18", "capabilities": {}}}).encode())
            return
        http_server(bom_stream)(exchange)

    server = serve(script)
    with ToolRegistry() as registry:
        registry.add_mcp(server.base_url, timeout=2)
        assert registry.call("echo", {}) == "after a BOM"


def test_a_server_that_answers_every_reply_with_a_ping_gets_a_bounded_chain(serve, caplog):
    def ping(exchange, number):
        exchange.head(200, "text/event-stream", chunked=False)
        exchange.write_raw(b"data: " + json.dumps({"jsonrpc": "2.0", "id": f"ping-{number}", "method": "ping"}).encode()
                           + b"\n\n")

    def call_then_answer(exchange, ident):
        ping(exchange, 0)
        reply = {"jsonrpc": "2.0", "id": ident, "result": {"content": [{"type": "text", "text": "answered"}]}}
        exchange.write_raw(b"data: " + json.dumps(reply).encode() + b"\n\n")

    def script(exchange):
        body = exchange.body or {}
        if "result" in body:                              # our reply to its ping: answered with another ping
            ping(exchange, len(server.requests))
            return
        http_server(call_then_answer)(exchange)

    server = serve(script)
    with caplog.at_level(logging.WARNING, logger="agent"), ToolRegistry() as registry:
        registry.add_mcp(server.base_url, timeout=2)
        assert registry.call("echo", {}) == "answered"
    replies = [request for request in server.requests if "result" in (request["body"] or {})]
    assert len(replies) == agent._McpSession.CHAINED_REPLIES and "kept sending requests" in caplog.text


def test_the_session_delete_cannot_hold_close(serve, monkeypatch):
    monkeypatch.setattr(agent._McpHttp, "close_seconds", 0.3, raising=False)
    script = http_server()

    def drips_on_delete(exchange):
        if exchange.handler.command != "DELETE":
            return script(exchange)
        exchange.write_raw(b"HTTP/1.1 200 OK\r\n")
        for _ in range(600):                             # a header line every 50 ms, for 30 s
            exchange.write_raw(b"X-Drip: 1\r\n")
            if exchange.closed_by_client:
                return
            time.sleep(0.05)

    server = serve(drips_on_delete)
    registry = ToolRegistry()
    registry.add_mcp(server.base_url, timeout=2)
    assert closes_within(registry, 10.0)
    assert server.requests[-1]["method"] == "DELETE"


def test_http_credentials_are_not_sent_over_plain_http_to_another_host():
    with pytest.raises(ToolError, match="not sent over plain http"):
        ToolRegistry().add_mcp("http://example.com/mcp", headers={"Authorization": "Bearer x"})


def test_an_unreachable_url_is_a_tool_error():
    with pytest.raises(ToolError, match="could not reach MCP server http://127.0.0.1:"):
        ToolRegistry().add_mcp(f"http://127.0.0.1:{_free_port()}/mcp", timeout=2)


# -- CLI -------------------------------------------------------------------------------------------------

def cli_registry(*argv):
    # a model, not --offline: the offline demo model only calls the demo tools (issue 23, item 10)
    args = agent._cli_parser().parse_args([*argv, "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "task"])
    return agent._cli_agent(args)[0].tools


def test_cli_mcp_tools_replace_the_demo_tools_and_join_tools_files():
    command = " ".join(f'"{part}"' for part in SCRIPTED)
    with cli_registry("--mcp", command, "--mcp-tools", "echo,contents") as registry:
        assert [tool.name for tool in registry] == ["echo", "contents"]


def test_cli_mcp_config_in_claude_desktops_format(tmp_path):
    config = tmp_path / "servers.json"
    config.write_text(json.dumps({"mcpServers": {
        "one": {"command": SCRIPTED[0], "args": [SCRIPTED[1], "old"], "env": {"SERVER_TOKEN": "t"}},
        "off": {"command": "no-such-server", "disabled": True}}}))
    with cli_registry("--mcp-config", str(config), "--mcp-tools", "env") as registry:
        assert "SERVER_TOKEN" in registry.call("env", {}).split()


def test_cli_config_servers_that_share_a_tool_name_prefix_the_later_one(tmp_path, capsys, serve):
    from _http_servers import chat_answer

    config = tmp_path / "servers.json"
    config.write_text(json.dumps({"mcpServers": {
        "one": {"command": SCRIPTED[0], "args": [SCRIPTED[1], "old"], "env": {"SCRIPTED_TOOLS": "echo,fails"}},
        "two": {"command": SCRIPTED[0], "args": [SCRIPTED[1], "old"], "env": {"SCRIPTED_TOOLS": "echo,contents"}}}}))
    with cli_registry("--mcp-config", str(config)) as registry:
        assert [tool.name for tool in registry] == ["echo", "fails", "two_echo", "contents"]
        assert registry.call("two_echo", {"text": "from two"}) == "from two"
    server = serve(chat_answer(final("hi")))
    assert main(["--model", "m", "--base-url", server.base_url, "--mcp-config", str(config), "task"]) == 0
    assert "MCP server 'two': tool 'echo' is registered as 'two_echo'" in capsys.readouterr().err


def test_cli_servers_without_names_that_share_a_tool_name_are_refused_with_a_true_hint(capsys):
    command = " ".join(f'"{part}"' for part in SCRIPTED)
    assert main(["--mcp", command, "--mcp", command, "--mcp-tools", "echo", "--offline", "task"]) == 2
    assert "the tool name 'echo' is taken; give the server a prefix with name=... (CLI: name the servers in " \
           "--mcp-config" in capsys.readouterr().err


def test_cli_says_which_tools_it_left_out_and_why(tmp_path, capsys, serve):
    from _http_servers import chat_answer

    config = tmp_path / "servers.json"
    config.write_text(json.dumps({"mcpServers": {
        "five": {"command": SCRIPTED[0], "args": [SCRIPTED[1], "old"], "env": {"SCRIPTED_TOOLS": FIVE}}}}))
    server = serve(chat_answer(final("hi")))
    assert main(["--model", "m", "--base-url", server.base_url, "--mcp-config", str(config), "task"]) == 0
    err = capsys.readouterr().err
    assert "agent.py: warning: MCP server 'five': 1 of its 5 tools left out: 'bad_schema' (its inputSchema " \
           "cannot be enforced: the JSON Schema keyword '$dynamicRef'" in err
    assert main(["--mcp-config", str(config), "--mcp-tools", "echo,bad_schema", "--offline", "task"]) == 2
    assert "tool 'bad_schema' was left out: its inputSchema cannot be enforced" in capsys.readouterr().err


def test_cli_an_unknown_mcp_tool_is_a_usage_error(capsys):
    command = " ".join(f'"{part}"' for part in SCRIPTED)
    assert main(["--mcp", command, "--mcp-tools", "nope", "--offline", "task"]) == 2
    assert "no MCP server has a tool 'nope'" in capsys.readouterr().err


def test_cli_help_says_how_mcp_tools_combine(capsys):
    assert main(["--help"]) == 0
    assert "Their tools join those of --tools" in " ".join(capsys.readouterr().out.split())

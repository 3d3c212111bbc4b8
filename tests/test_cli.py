"""The command line: python agent.py, flags, trace files, exit codes."""
import io
import json
import os
import re
import shlex
import subprocess
import sys
import unicodedata

import pytest
from _http_servers import chat_answer, drips, error_answer, json_answer
from conftest import ROOT, call, final, offline_env, replay_file

import agent
from agent import main

pytestmark = pytest.mark.usefixtures("no_model_configured")


def test_python_agent_py_runs_the_offline_demo_on_a_fresh_machine():
    done = subprocess.run([sys.executable, "agent.py"], cwd=ROOT, env=offline_env(), capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert "106" in done.stdout and len(done.stdout.strip().splitlines()) == 1
    progress = [line for line in done.stderr.splitlines() if line.startswith("[step ")]
    assert len(progress) == 3
    assert "clock" in progress[0] and "calculator" in progress[1] and "final answer" in progress[2]


def test_task_answers_offline(capsys):
    assert main(["What is (128*3+40)/4?"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "106\n"
    assert "offline demo model" in captured.err


def test_quiet_prints_only_the_answer(capsys):
    assert main(["--quiet", "What is 2**10 - 24?"]) == 0
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("1000\n", "")


def test_json_prints_the_whole_result(capsys):
    assert main(["--json", "--quiet", "What is 6*7?"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["answer"] == "42" and data["stop_reason"] == "final" and len(data["steps"]) == 2


def test_trace_writes_one_line_per_step_then_the_result(tmp_path, capsys):
    path = tmp_path / "trace.jsonl"
    assert main(["--quiet", "--trace", str(path)]) == 0
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [line["event"] for line in lines] == ["step", "step", "step", "result"]
    assert [line["index"] for line in lines[:3]] == [1, 2, 3]
    assert lines[-1]["stop_reason"] == "final" and "steps" not in lines[-1]


@pytest.mark.skipif(os.name != "posix", reason="file modes")
def test_a_new_trace_file_is_private(tmp_path, capsys):
    path = tmp_path / "trace.jsonl"
    assert main(["--trace", str(path), "What is 2 + 3?"]) == 0
    assert path.stat().st_mode & 0o777 == 0o600 and '"event": "result"' in path.read_text()


def test_replay_of_a_trace(tmp_path, capsys):
    path = tmp_path / "trace.jsonl"
    main(["--quiet", "--trace", str(path), "What is 3*3?"])
    capsys.readouterr()
    assert main(["--quiet", "--replay", str(path), "What is 3*3?"]) == 0
    assert capsys.readouterr().out == "9\n"


def test_stopped_without_answer_exits_1(capsys):
    assert main(["--max-steps", "1"]) == 1
    assert "stopped (max_steps)" in capsys.readouterr().err


@pytest.mark.parametrize("argv, words", [
    (["--replay", "/no/such/file.jsonl"], "No such file"),
    (["--base-url", "http://localhost:1/v1"], "no server is listening at http://localhost:1/v1"),
    (["--model", "m", "--base-url", "localhost:1"], "must start with http"),
    (["--trace", "/no/such/dir/trace.jsonl"], "No such file"),
    (["--system-prompt", "/no/such/prompt.txt"], "No such file"),
])
def test_bad_configuration_exits_2_with_one_line(capsys, argv, words):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert words in err and err.startswith("agent.py: ") and err.count("\n") == 1


@pytest.mark.parametrize("flag, words", [
    ("--max-steps", "invalid max_steps 0 (must be an integer >= 1)"),
    ("--max-seconds", "invalid max_seconds 0.0 (must be a finite number > 0)"),
    ("--max-context-chars", "invalid max_context_chars 0 (must be an integer >= 1000)"),   # the Agent's own rule
])
def test_a_number_out_of_range_is_bad_usage_naming_the_rule(capsys, flag, words):
    assert main([flag, "0"]) == 2
    assert f"agent.py: error: argument {flag}: {words}" in capsys.readouterr().err


def test_bad_usage_exits_2_and_there_is_no_key_flag(capsys):
    assert main(["--api-key", "sk-secret"]) == 2
    assert main(["--help"]) == 0
    assert "OPENAI_API_KEY" in capsys.readouterr().out


def test_endpoint_failure_exits_3_and_keeps_the_trace(tmp_path, capsys, serve):
    server = serve(chat_answer(call("clock")), error_answer(401, "Invalid key"))
    path = tmp_path / "trace.jsonl"
    assert main(["--model", "m", "--base-url", server.base_url, "--trace", str(path), "What time is it?"]) == 3
    err = capsys.readouterr().err
    assert "stopped (llm_error)" in err and "HTTP 401" in err and "check OPENAI_API_KEY" in err
    events = [json.loads(line) for line in path.read_text().splitlines()]
    assert [e["event"] for e in events] == ["step", "step", "result"]
    assert events[0]["action"]["name"] == "clock" and "HTTP 401" in events[1]["error"]



def test_a_key_in_the_base_urls_query_is_printed_nowhere(tmp_path, capsys, serve, monkeypatch):
    key = "sk-proj-ZZSECRETabc123456789"
    server = serve(chat_answer(call("clock")), error_answer(400, "model 'nope' not found"))
    monkeypatch.setenv("OPENAI_API_KEY", key)
    path = tmp_path / "trace.jsonl"
    assert main(["--model", "nope", "--base-url", f"{server.base_url}?key={key}", "--json", "-v",
                 "--trace", str(path), "What time is it?"]) == 3
    out, err = capsys.readouterr()
    assert "HTTP 400" in err and "key=***" in err
    assert not any("ZZSECRET" in text for text in (out, err, path.read_text()))


def test_json_schema_flag_sends_the_action_schema(capsys, serve):
    server = serve(chat_answer(final("hi")))
    assert main(["--quiet", "--model", "m", "--base-url", server.base_url, "--json-schema",
                 "--temperature", "0.3", "--max-tokens", "99", "Say hi"]) == 0
    body = server.requests[0]["body"]
    # the first call may only call a tool
    assert body["response_format"]["json_schema"]["schema"] == agent._tool_rung(agent._demo_tools())
    assert (body["temperature"], body["max_tokens"]) == (0.3, 99)
    assert capsys.readouterr().out == "hi\n"


def test_ctrl_c_stops_keeps_the_trace_and_exits_130(tmp_path, monkeypatch, capsys):
    plan = agent._offline_reply
    calls = []

    def interrupted(messages):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return plan(messages)

    monkeypatch.setattr(agent, "_offline_reply", interrupted)
    path = tmp_path / "trace.jsonl"
    assert main(["--quiet", "--trace", str(path)]) == 130
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [line["index"] for line in lines] == [1, 2]
    assert lines[0]["action"]["name"] == "clock" and lines[0]["observation"].startswith("[OBSERVATION] ")
    assert lines[1]["error"] == "interrupted: KeyboardInterrupt"
    assert "interrupted" in capsys.readouterr().err


def test_interactive_keeps_the_history_between_questions(monkeypatch, capsys):
    seen = []
    original = agent.Agent.run

    def spy(self, task, history=None):
        seen.append(history)
        return original(self, task, history)

    monkeypatch.setattr(agent.Agent, "run", spy)
    monkeypatch.setattr(sys, "stdin", io.StringIO("What is 2+2?\n\nWhat is 3*3?\nexit\n"))
    assert main(["-i", "--quiet"]) == 0
    assert capsys.readouterr().out == "4\n9\n"
    assert seen[0] is None and seen[1][1]["content"] == "What is 2+2?"


def test_replaying_an_interactive_trace_replays_every_turn_in_one_conversation(monkeypatch, capsys, tmp_path):
    path = str(tmp_path / "session.jsonl")
    monkeypatch.setattr(sys, "stdin", io.StringIO("What is 2+2?\nWhat is 3*3?\nexit\n"))
    assert main(["-i", "--quiet", "--trace", path]) == 0
    assert capsys.readouterr().out == "4\n9\n"
    seen = []
    original = agent.Agent.run

    def spy(self, task, history=None):
        seen.append((task, history))
        return original(self, task, history)

    monkeypatch.setattr(agent.Agent, "run", spy)
    assert main(["--quiet", "--replay", path]) == 0
    assert capsys.readouterr().out == "4\n9\n"
    assert [task for task, _ in seen] == ["What is 2+2?", "What is 3*3?"]
    assert seen[0][1] is None and seen[1][1][1]["content"] == "What is 2+2?"
    assert main(["--quiet", "--replay", path, "What is 2+2?"]) == 0   # a task given: that one alone
    assert capsys.readouterr().out == "4\n"


def test_a_replayed_turn_after_one_that_stopped_without_an_answer_gets_its_own_task(monkeypatch, capsys, tmp_path):
    script = replay_file(tmp_path, *["not json"] * 4, final("done"))
    path = str(tmp_path / "session.jsonl")
    monkeypatch.setattr(sys, "stdin", io.StringIO("First question\nSecond question\n"))
    assert main(["-i", "--quiet", "--replay", script, "--trace", path]) == 0
    assert capsys.readouterr().out == "done\n"
    seen = []
    original = agent.Agent.run
    monkeypatch.setattr(agent.Agent, "run", lambda self, task, history=None: seen.append(task) or original(self, task, history))
    main(["--quiet", "--replay", path])
    assert seen == ["First question", "Second question"]


def test_confirmation_is_declined_when_stdin_is_not_a_terminal(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO("y\n"))
    assert agent._cli_confirm("delete", {"path": "/"}) is False


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_confirmation_asks_on_a_terminal(monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", Terminal("y\nno\n"))
    assert agent._cli_confirm("delete", {"path": "/tmp/x"}) is True
    assert agent._cli_confirm("delete", {"path": "/tmp/y"}) is False
    assert 'Run delete {"path": "/tmp/x"}? [y/N]' in capsys.readouterr().err


# -- the CLI for real runs -------------------------------------------------------------------

def progress_lines(err):
    return [line for line in err.splitlines() if line.startswith("[step ")]


def test_progress_shows_what_the_model_did_never_what_was_sent_back(tmp_path, capsys):
    path = replay_file(tmp_path, "Sure! It is 42.", call("calculator", "I will multiply.", expression="6*7"),
                       final("42"))
    assert main(["--replay", path, "What is 6*7?"]) == 0
    lines = progress_lines(capsys.readouterr().err)
    assert lines[0].startswith("[step 1] unparseable reply 'Sure! It is 42.': your reply contains no JSON object")
    assert lines[1].startswith('[step 2] I will multiply. | calculator {"expression": "6*7"} → 42 (')
    assert lines[2].startswith("[step 3] done | final answer: 42 (")
    assert not any("OBSERVATION" in line or "attempts left" in line or "Reply with" in line for line in lines)


def test_a_repeated_call_shows_it_was_not_run_again_never_the_nudge(tmp_path, capsys):
    repeat = call("calculator", "Again.", expression="6*7")
    path = replay_file(tmp_path, call("calculator", "I will multiply.", expression="6*7"), repeat,
                       final("42"))
    assert main(["--replay", path, "What is 6*7?"]) == 0
    lines = progress_lines(capsys.readouterr().err)
    assert lines[0].startswith('[step 1] I will multiply. | calculator {"expression": "6*7"} → 42 (')
    assert lines[1].startswith('[step 2] Again. | calculator {"expression": "6*7"} → the call of step 1 '
                               "again: not run again (")
    assert not any("You already made" in line for line in lines)


class StreamingClient:
    """A scripted client that streams each reply through on_delta, as the real one does."""

    def __init__(self, replies):
        self.replies, self.on_delta = list(replies), None

    def chat(self, messages):
        reply = self.replies.pop(0)
        for piece in (reply[:10], reply[10:]):
            if self.on_delta is not None:
                self.on_delta(piece)
        return reply


def test_on_a_terminal_a_live_line_streams_the_reply_then_gives_way_to_the_step_line(monkeypatch):
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    monkeypatch.setenv("COLUMNS", "200")
    client = StreamingClient([final("hello there")])
    monkeypatch.setattr(agent, "_cli_model", lambda args: (client, "scripted"))
    assert main(["Say hello"]) == 0
    err = terminal.getvalue()
    live = err.index('\r\x1b[K[step 1] 2 tokens, 0 s: {"type": "final", "thought": "done", "answer": "hello there"}')
    assert err.index("\r\x1b[K[step 1] done | final answer: hello there") > live


def terminal_columns(text):
    """What a terminal draws text across: wide and fullwidth characters take two columns, combining marks none."""
    return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


@pytest.mark.parametrize("answer", ["日本語の答えです" * 10, "\U0001f600" * 60, "e\u0301" * 100],
                         ids=["cjk", "emoji", "combining"])
def test_the_live_line_counts_terminal_columns_not_characters(monkeypatch, answer):
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    monkeypatch.setenv("COLUMNS", "60")
    reply = json.dumps({"type": "final", "thought": "done", "answer": answer}, ensure_ascii=False)
    monkeypatch.setattr(agent, "_cli_model", lambda args: (StreamingClient([reply]), "scripted"))
    assert main(["Say it"]) == 0
    live = [part for part in terminal.getvalue().split("\r\x1b[K") if part.startswith("[step 1] 2 tokens")]
    assert live and all(55 <= terminal_columns(part) <= 59 for part in live)   # within its row, and filling it


class SchemaStreamingClient(StreamingClient):
    """A streaming client that takes the decoding ladder's options, as the real one does."""

    def chat(self, messages, **options):
        self.options = getattr(self, "options", []) + [options]
        return super().chat(messages)


def test_the_live_line_drops_a_tool_rung_copy_that_is_not_run(monkeypatch):
    # the copy of the calculator's example is asked again: its text must not run on into the reply
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    monkeypatch.setenv("COLUMNS", "300")
    copy = call("calculator", expression="(128*3+40)/4")
    client = SchemaStreamingClient([copy, final("merci")])
    monkeypatch.setattr(agent, "_cli_model", lambda args: (client, "scripted"))
    assert main(["Please evaluate an expression for me."]) == 0
    kinds = [{b["properties"]["type"]["const"] for b in o["response_schema"]["anyOf"]} for o in client.options]
    assert kinds == [{"tool_call"}, {"tool_call", "final"}]
    err = terminal.getvalue()
    assert '\r\x1b[K[step 1] 2 tokens, 0 s: {"type": "final", "thought": "done", "answer": "merci"}' in err
    assert "(128*3+40)/4" + final("merci")[:10] not in err


def test_the_live_line_starts_again_when_the_client_retries(monkeypatch):
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    live = agent._StatusLine(terminal=True)
    live.wait(1, "waiting for the model")
    live("broken rep")
    live(None)
    live("{")
    live.close()
    assert "\r\x1b[K[step 1] 1 tokens, 0 s: {\r\x1b[K" in terminal.getvalue()


def test_no_live_line_when_stderr_is_not_a_terminal(monkeypatch, capsys):
    client = StreamingClient([final("hi")])
    monkeypatch.setattr(agent, "_cli_model", lambda args: (client, "scripted"))
    assert main(["Say hi"]) == 0
    assert client.on_delta is None and "\r" not in capsys.readouterr().err


@pytest.mark.parametrize("flag, wanted, unwanted", [
    ("-v", "agent.py: step 1: decoding ladder: a reply could not be used: from the next call on", "model call took"),
    ("-vv", "model call took", None),
])
def test_verbose_logs_the_ladder_and_very_verbose_adds_debug(tmp_path, capsys, flag, wanted, unwanted):
    path = replay_file(tmp_path, "no JSON here", final("x"))
    assert main([flag, "--replay", path, "t"]) == 0
    err = capsys.readouterr().err
    assert wanted in err and (unwanted is None or unwanted not in err)
    assert main(["--replay", path, "t"]) == 0
    assert "decoding ladder" not in capsys.readouterr().err  # the handler is gone after the run


TOOLS_REGISTRY = '''
from agent import ToolRegistry

tools = ToolRegistry()

@tools.register
def shout(text: str) -> str:
    """Upper-case a text."""
    return text.upper()
'''

TOOLS_FUNCTIONS = '''
from os.path import join  # imported: not a tool

def shout(text: str) -> str:
    """Upper-case a text."""
    return text.upper()

def whisper(text: str) -> str:
    """Lower-case a text."""
    return text.lower()

def undocumented(text: str) -> str:
    return text

def _private(text: str) -> str:
    """Not a tool."""
    return text
'''


def test_what_a_tool_prints_goes_to_stderr_and_stdout_holds_the_answer_alone(tmp_path, capsys):
    tools = tmp_path / "noisy.py"
    tools.write_text("def shout(text: str) -> str:\n    \"\"\"Shout.\"\"\"\n    print('NOISY', text)\n"
                     "    return text.upper()\n")
    path = replay_file(tmp_path, call("shout", text="hi"), final("HI"))
    assert main(["--tools", str(tools), "--replay", path, "t"]) == 0
    out, err = capsys.readouterr()
    assert out == "HI\n" and "NOISY hi" in err


@pytest.mark.parametrize("source, names", [(TOOLS_REGISTRY, ["shout"]), (TOOLS_FUNCTIONS, ["shout", "whisper"])])
def test_tools_from_a_file(tmp_path, capsys, source, names):
    tools = tmp_path / "my_tools.py"
    tools.write_text(source)
    path = replay_file(tmp_path, call("shout", text="hi"), final("HI"))
    assert main(["--quiet", "--json", "--tools", str(tools), "--replay", path, "t"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["steps"][0]["observation"].startswith('[OBSERVATION] shout({"text":"hi"}) returned: HI')
    listed = [line.split(":")[0][2:] for line in data["messages"][0]["content"].splitlines() if line.startswith("- ")]
    assert listed == names


def test_tools_files_are_repeatable(tmp_path):
    first, second = tmp_path / "a.py", tmp_path / "b.py"
    first.write_text(TOOLS_REGISTRY)
    second.write_text('def ping() -> str:\n    """Answer pong."""\n    return "pong"\n')
    built = agent._cli_agent(agent._cli_args(["--tools", str(first), "--tools", str(second), "--replay",
                                              replay_file(tmp_path, final("x"))]))[0]
    assert sorted(tool.name for tool in built.tools) == ["ping", "shout"]


@pytest.mark.parametrize("source, words", [
    ("import no_such_module_here\n", "could not load tools from"),
    ("def f(:\n", "SyntaxError"),
    ("raise SystemExit(3)\n", "SystemExit"),
    ("x = 1\n", "defines no tools"),
])
def test_a_tools_file_that_cannot_be_used_exits_2(tmp_path, capsys, source, words):
    tools = tmp_path / "bad_tools.py"
    tools.write_text(source)
    assert main(["--tools", str(tools), "t"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("agent.py: ") and words in err and "Traceback" not in err


@pytest.mark.parametrize("second, words", [
    ('def ping() -> str:\n    """Answer pong."""\n    return "pong"\n', "duplicate tool name 'ping'"),
    ('import array\ndef pong(x: array.array) -> str:\n    """P."""\n    return ""\n', "unsupported type hint"),
])
def test_a_tool_that_cannot_be_registered_names_its_file(tmp_path, capsys, second, words):
    first, other = tmp_path / "a.py", tmp_path / "b.py"
    first.write_text('def ping() -> str:\n    """Answer pong."""\n    return "pong"\n')
    other.write_text(second)
    assert main(["--tools", str(first), "--tools", str(other), "--replay", replay_file(tmp_path, final("x")), "t"]) == 2
    err = capsys.readouterr().err
    assert f"agent.py: {other}: " in err and words in err


@pytest.mark.parametrize("reply, hint", [
    ('{"type": "final", "thought": "<why>", "answer": "<the answer>"}', "copied the instructions'"),
    ('{"type": "final", "thought": "t"', "could not write the JSON action"),
])
def test_the_hint_after_format_errors_says_whether_the_model_copied_the_prompt(tmp_path, capsys, reply, hint):
    path = replay_file(tmp_path, *[reply] * 6)
    assert main(["--replay", path, "What is 2 + 3?"]) == 1
    err = capsys.readouterr().err
    assert "stopped (format_errors)" in err and f"hint: the model {hint}" in err


def test_system_prompt_from_a_file(tmp_path, capsys):
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("Answer in JSON. Tools:\n{tools}\n")
    path = replay_file(tmp_path, final("x"))
    assert main(["--quiet", "--json", "--system-prompt", str(prompt), "--replay", path, "t"]) == 0
    system = json.loads(capsys.readouterr().out)["messages"][0]["content"]
    assert system.startswith("Answer in JSON. Tools:\n- calculator: ") and "{tools}" not in system


def test_run_options_reach_the_agent_and_the_client():
    args = agent._cli_args(["--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--timeout", "5",
                                           "--max-seconds", "30", "--max-context-chars", "4000",
                                           "--constrain", "never"])
    built = agent._cli_agent(args)[0]
    assert (built.llm.timeout, built.max_seconds, built.max_context_chars, built.constrain) == (5, 30, 4000, "never")
    assert agent._cli_agent(agent._cli_args(["--json-schema"]))[0].constrain == "always"
    assert agent._cli_agent(agent._cli_args([]))[0].constrain == "auto"


def test_help_documents_every_flag(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for flag in ("--model", "--base-url", "--temperature", "--max-tokens", "--timeout", "--max-steps",
                 "--max-seconds", "--max-context-chars", "--constrain", "--json-schema", "--tools",
                 "--system-prompt", "--allow-http-key", "--trace", "--replay", "--json", "--quiet", "--verbose",
                 "--offline", "--interactive", "--version"):
        assert flag in out


# -- a base URL with no model: GET /models ----------------------------------------------------

def models_listing(models, status=200, headers=None):
    """A script: GET /v1/models lists the model ids (with status and headers); a chat request gets the answer hi."""
    listing = json.dumps({"object": "list", "data": [{"id": m, "object": "model"} for m in models]}).encode()
    answers = {"GET": json_answer(listing, status, headers), "POST": chat_answer(final("hi"))}
    return lambda ex: answers[ex.handler.command](ex)


def routes(server):
    """What the server was asked, in order: (method, path) pairs."""
    return [(request["method"], request["path"]) for request in server.requests]


@pytest.fixture
def models_server(serve):
    """Start a server for models_listing(models, ...) (on host, 127.0.0.1 unless given)."""
    return lambda models, host="127.0.0.1", **options: serve(models_listing(models, **options), host=host)


@pytest.mark.parametrize("from_env", [False, True])
def test_a_base_url_alone_uses_the_one_model_served(models_server, monkeypatch, capsys, from_env):
    server = models_server(["smollm2-135m-instruct"])
    if from_env:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        argv = ["Say hi"]
    else:
        argv = ["--base-url", server.base_url, "Say hi"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert captured.out == "hi\n" and "model smollm2-135m-instruct at" in captured.err
    assert routes(server) == [("GET", "/v1/models"), ("POST", "/v1/chat/completions")]
    assert server.requests[1]["body"]["model"] == "smollm2-135m-instruct"


@pytest.mark.parametrize("models, words", [
    (["qwen2.5:7b", "llama3.2:3b"], "it serves qwen2.5:7b, llama3.2:3b"),
    ([], "it lists none"),
])
def test_a_base_url_serving_several_or_no_models_says_which(models_server, capsys, models, words):
    server = models_server(models)
    assert main(["--base-url", server.base_url, "t"]) == 2
    err = capsys.readouterr().err
    assert "no model named" in err and words in err and "pass --model NAME" in err
    assert routes(server) == [("GET", "/v1/models")]


def test_the_models_query_follows_no_redirect(models_server, monkeypatch, capsys):
    elsewhere = models_server(["stolen"])
    server = models_server(["x"], status=302, headers={"Location": elsewhere.base_url + "/models"})
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-SECRET-0123456789")
    assert main(["--base-url", server.base_url, "t"]) == 2
    err = capsys.readouterr().err
    assert "no model named" in err and "302" in err and "SECRET" not in err
    assert elsewhere.requests == []


def test_the_models_query_refuses_a_key_with_a_control_character_without_quoting_it(monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-abcdefgh\nijklmnop")
    assert main(["--base-url", "http://127.0.0.1:9/v1", "2+2"]) == 2
    err = capsys.readouterr().err
    assert "control character" in err and "abcdefgh" not in err and "ijklmnop" not in err


def test_the_models_query_takes_any_loopback_address_direct_with_the_client_key_rule(models_server, monkeypatch,
                                                                                       capsys):
    proxy = models_server(["from-the-proxy"])
    server = models_server(["only"], host="127.0.0.2")
    for name in ("HTTP_PROXY", "http_proxy"):
        monkeypatch.setenv(name, proxy.base_url[:-3])
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-SECRET-0123456789")
    assert main(["--base-url", server.base_url, "--max-steps", "1", "t"]) == 0
    assert proxy.requests == [] and routes(server) == [("GET", "/v1/models"), ("POST", "/v1/chat/completions")]
    assert server.requests[0]["headers"]["Authorization"] == "Bearer sk-test-SECRET-0123456789"


def test_the_models_query_has_a_deadline(capsys, serve):
    # a listing that never ends: one byte of its declared length at a time
    server = serve(drips(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n", b" ",
                         cap=2.0))
    assert main(["--base-url", server.base_url, "--timeout", "0.15", "t"]) == 2
    err = capsys.readouterr().err
    assert "no model named" in err and "within timeout=0.15" in err


@pytest.mark.parametrize("url, loopback", [
    ("http://localhost:8080/v1", True), ("http://127.0.0.2/v1", True), ("http://[::1]:1/v1", True),
    ("http://LOCALHOST/v1", True), ("http://evil.localhost/v1", False), ("http://localhost.example/v1", False),
    ("http://10.0.0.1/v1", False), ("http://lan-box/v1", False),
])
def test_only_literal_loopback_addresses_and_localhost_count_as_loopback(url, loopback):
    assert agent._is_loopback(url) is loopback


def test_an_unknown_model_gets_a_hint_naming_it(capsys, serve):
    server = serve(error_answer(404, "model 'qwen9' not found"))
    assert main(["--model", "qwen9", "--base-url", server.base_url, "t"]) == 3
    assert "agent.py: hint: unknown model 'qwen9'" in capsys.readouterr().err


def readme_commands():
    """The commands in the README's command-line block (what follows a command on its line is a comment)."""
    readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    block = readme[readme.index("## The command line"):].split("```")[1]
    return [re.split(r"\s{2,}", line)[0] for line in block.splitlines() if line.startswith("python agent.py")]


def test_the_readme_command_line_examples_run_as_written():
    commands = readme_commands()
    offline = [command for command in commands if "--base-url" not in command and "--model" not in command]
    assert len(commands) == 6 and len(offline) == 3
    for command in offline:
        done = subprocess.run([sys.executable, *shlex.split(command)[1:]], cwd=ROOT, env=offline_env(),
                              capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)
        assert done.returncode == 0, (command, done.stderr)


def test_the_readme_server_examples_run_against_a_local_server(models_server, capsys):
    commands = [command for command in readme_commands() if "--base-url" in command]
    assert len(commands) == 3
    for command in commands:
        server = models_server(["the-one-model"])
        argv = shlex.split(re.sub(r"http://[\w.:]+/v1", server.base_url, command))[2:]
        assert main(argv) == 0, command
        assert capsys.readouterr().out == "hi\n"


def test_allow_http_key_reaches_the_client(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-SECRET-0123456789")
    argv = ["--model", "m", "--base-url", "http://192.0.2.1:8080/v1"]
    assert agent._cli_agent(agent._cli_args(argv))[0].llm.allow_http_key is False
    built = agent._cli_agent(agent._cli_args(argv + ["--allow-http-key"]))[0]
    assert built.llm.allow_http_key is True


def test_the_cli_shows_and_uses_the_librarys_own_defaults(monkeypatch):
    import inspect

    monkeypatch.setattr(agent.Agent.__init__, "__kwdefaults__", {**agent.Agent.__init__.__kwdefaults__, "max_steps": 7})
    agent_defaults = inspect.signature(agent.Agent).parameters
    client_defaults = inspect.signature(agent.OpenAICompatLLM).parameters
    assert agent._cli_args([]).max_steps == agent_defaults["max_steps"].default == 7
    help_text = " ".join(agent._cli_parser().format_help().split())
    assert f"(default {client_defaults['timeout'].default})" in help_text
    assert f"(default {client_defaults['temperature'].default})" in help_text
    assert f"model calls per task (default {agent_defaults['max_steps'].default})" in help_text

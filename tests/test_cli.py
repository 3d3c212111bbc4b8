"""The command line: python agent.py, flags, trace files, exit codes."""
import io
import json
import os
import subprocess
import sys

import pytest

import agent
from agent import main
from test_http_client import FakeServer, completion, error

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(autouse=True)
def no_model_configured(monkeypatch):
    for name in ("OPENAI_MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def test_python_agent_py_runs_the_offline_demo_on_a_fresh_machine():
    env = {key: value for key, value in os.environ.items() if not key.startswith("OPENAI_")}
    done = subprocess.run([sys.executable, "agent.py"], cwd=ROOT, env=env, capture_output=True, text=True,
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
    (["--max-steps", "0"], "invalid max_steps 0"),
    (["--replay", "/no/such/file.jsonl"], "No such file"),
    (["--base-url", "http://localhost:1/v1"], "no model named"),
    (["--model", "m", "--base-url", "localhost:1"], "must start with http"),
    (["--trace", "/no/such/dir/trace.jsonl"], "No such file"),
])
def test_bad_configuration_exits_2_with_one_line(capsys, argv, words):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert words in err and err.startswith("agent.py: ")


def test_bad_usage_exits_2_and_there_is_no_key_flag(capsys):
    assert main(["--api-key", "sk-secret"]) == 2
    assert main(["--help"]) == 0
    assert "OPENAI_API_KEY" in capsys.readouterr().out


def test_endpoint_failure_exits_3_and_keeps_the_trace(tmp_path, capsys):
    server = FakeServer([completion('{"type": "tool_call", "name": "clock", "arguments": {}}'),
                         error(401, "Invalid key")])
    try:
        path = tmp_path / "trace.jsonl"
        code = main(["--model", "m", "--base-url", server.base_url, "--trace", str(path), "What time is it?"])
    finally:
        server.close()
    assert code == 3
    err = capsys.readouterr().err
    assert "stopped (llm_error)" in err and "HTTP 401" in err and "check OPENAI_API_KEY" in err
    events = [json.loads(line) for line in path.read_text().splitlines()]
    assert [e["event"] for e in events] == ["step", "step", "result"]
    assert events[0]["action"]["name"] == "clock" and "HTTP 401" in events[1]["error"]


def test_json_schema_flag_sends_the_action_schema(capsys):
    server = FakeServer([completion('{"type": "final", "thought": "t", "answer": "hi"}')])
    try:
        assert main(["--quiet", "--model", "m", "--base-url", server.base_url, "--json-schema",
                     "--temperature", "0.3", "--max-tokens", "99", "Say hi"]) == 0
    finally:
        server.close()
    body = server.requests[0]["body"]
    assert body["response_format"]["json_schema"]["schema"] == agent._demo_tools().action_schema()
    assert (body["temperature"], body["max_tokens"]) == (0.3, 99)
    assert capsys.readouterr().out == "hi\n"


def test_ctrl_c_stops_keeps_the_trace_and_exits_130(tmp_path, monkeypatch, capsys):
    plan = agent.MockLLM._plan
    calls = []

    def interrupted(self, messages):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return plan(self, messages)

    monkeypatch.setattr(agent.MockLLM, "_plan", interrupted)
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

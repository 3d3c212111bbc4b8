"""The loop: each test scripts the model, runs, and asserts on the trace."""
import datetime
import json
import logging
import threading
import time

import pytest
from _http_servers import chat_answer
from conftest import call, final, make_tools

import agent as agent_module
from agent import STOP_REASONS, Agent, LLMError, MockLLM, ToolRegistry


def roles(result):
    return [m["role"] for m in result.messages]


def assert_alternating(messages):
    assert messages[0]["role"] == "system"
    for i, message in enumerate(messages[1:]):
        assert message["role"] == ("user" if i % 2 == 0 else "assistant"), [m["role"] for m in messages]


# -- the happy paths ------------------------------------------------------------------

def test_final_answer_in_one_step():
    result = Agent(MockLLM([final("42")]), make_tools()).run("What is 6*7?")
    assert (result.answer, result.stop_reason, result.ok) == ("42", "final", True)
    assert roles(result) == ["system", "user", "assistant"]
    assert result.messages[1] == {"role": "user", "content": "What is 6*7?"}
    assert len(result.steps) == 1 and result.steps[0].observation is None
    json.dumps(result.to_dict())


def test_tool_call_then_final_trace():
    llm = MockLLM([call("add", a=40, b=2), final("42")])
    result = Agent(llm, make_tools()).run("add 40 and 2")
    assert result.stop_reason == "final" and result.answer == "42"
    assert roles(result) == ["system", "user", "assistant", "user", "assistant"]
    first = result.steps[0]
    assert (first.index, first.action.name, first.action.arguments) == (1, "add", {"a": 40, "b": 2})
    assert first.observation == '[OBSERVATION] add({"a":40,"b":2}) returned: 42\n(step 1 of 10)'
    assert result.messages[3] == {"role": "user", "content": first.observation}
    assert first.error is None and first.tool_seconds >= 0 and first.llm_seconds >= 0
    assert llm.calls[1][-1]["content"] == first.observation  # the model saw the observation


def test_tools_may_be_a_list_of_functions():
    def shout(text: str) -> str:
        """Upper-case text."""
        return text.upper()

    result = Agent(MockLLM([call("shout", text="hi"), final("HI")]), [shout]).run("shout hi")
    assert result.steps[0].observation.startswith('[OBSERVATION] shout({"text":"hi"}) returned: HI')


def test_module_run_uses_the_offline_planner_and_demo_tools():
    result = agent_module.run("What is (128*3+40)/4?")
    assert result.answer == "106" and result.stop_reason == "final"
    assert [s.action.name for s in result.steps[:-1]] == ["calculator"]


def test_offline_demo_is_multi_step():
    result = agent_module.run(agent_module._DEMO_TASK)
    assert [s.action.name for s in result.steps[:-1]] == ["clock", "calculator"]
    assert "106" in result.answer and "UTC" in result.answer


# -- failures that go back to the model ------------------------------------------------

def test_unknown_tool_becomes_error_observation():
    # the second call: the first takes the tool rung, which asks again after a name that is no tool
    result = Agent(MockLLM([call("add", a=1, b=1), call("ad", a=1, b=2), final("3")]), make_tools()).run("t")
    step = result.steps[1]
    assert step.observation.startswith("[OBSERVATION] ERROR: unknown tool 'ad'. Did you mean 'add'?")
    assert step.error.startswith("ERROR: unknown tool")
    assert result.stop_reason == "final"


@pytest.mark.parametrize("name, arguments", [
    # Qwen2.5-Coder-1.5B, after the results it needed; told "unknown tool", it started the task over
    ("final", {"answer": "The total distance is 2628 km."}),
    ("final_answer", {"thought": "1410 + 1218", "answer": "The total distance is 2628 km."}),
])
def test_a_call_to_final_with_an_answer_is_the_final_answer(name, arguments):
    ran = []
    result = Agent(MockLLM([call("add", a=1, b=2), call(name, **arguments)]), make_tools(ran)).run("t")
    assert result.stop_reason == "final" and result.answer == "The total distance is 2628 km."
    assert result.steps[-1].action.kind == "final" and "final_as_call" in result.steps[-1].action.repairs
    assert ran == [("add", 1, 2)]


@pytest.mark.parametrize("name, answer, text", [
    ("Final", ["Oslo", "Lima"], '["Oslo", "Lima"]'), ("final-answer", 3, "3"), ("FINAL_ANSWER", True, "true")])
def test_a_call_to_final_spelled_otherwise_or_with_an_answer_not_text_is_read_as_a_final_answer(name, answer, text):
    result = Agent(MockLLM([call("add", a=1, b=2), call(name, answer=answer)]), make_tools()).run("t")
    assert result.answer == text and result.steps[1].action.repairs == ("final_as_call", "answer_not_text")


@pytest.mark.parametrize("arguments", [
    {"thought": "Paris is warmer."},   # Qwen2.5-Coder-1.5B; told "unknown tool", it started over
    {"answer": "3", "a": 1}, {"answer": ""}, {"text": "3"}, {}])
def test_a_call_to_final_with_more_or_less_than_an_answer_is_asked_for_the_final_shape(arguments):
    result = Agent(MockLLM([call("add", a=1, b=2), call("final", **arguments), final("3")]), make_tools()).run("t")
    assert result.steps[1].action is None and len(result.steps) == 3 and result.answer == "3"
    assert result.steps[1].error.startswith('"final" is not a tool; to give the final answer, use "type": '
                                            '"final"')
    assert '{"type": "final", "thought": "<why>", "answer": "<the answer>"}' in result.steps[1].observation


def test_a_registered_tool_named_final_is_called():
    ran = []
    tools = make_tools()

    @tools.register
    def final(answer: str) -> str:
        """Record an answer."""
        ran.append(answer)
        return "recorded"

    result = Agent(MockLLM([call("final", answer="3"), '{"type": "final", "answer": "done"}']), tools).run("t")
    assert ran == ["3"] and result.answer == "done"
    # an answer beside its name, not in its arguments, neither runs it nor ends the run
    for name in ("final", "final "):
        answer_beside = json.dumps({"type": "tool_call", "name": name, "answer": "3"})
        result = Agent(MockLLM([answer_beside, '{"type": "final", "answer": "done"}']), tools).run("t")
        assert ran == ["3"] and result.steps[0].action is None and result.answer == "done"
        assert result.steps[0].error.startswith('"final" is a tool: put its arguments in "arguments"')


def test_an_answer_beside_the_name_final_ends_the_run_and_runs_nothing():
    # Qwen2.5-Coder-1.5B, both cities in hand: its "thought" twice, the answer beside "name": "final"
    ran = []
    reply = ('{"type": "tool_call", "thought": "Oslo is 21 °C, Cairo 8 °C.", "name": "final", '
             '"thought": "Oslo is warmer.", "answer": "Oslo"}')
    result = Agent(MockLLM([call("add", a=1, b=2), reply]), make_tools(ran)).run("t")
    assert result.stop_reason == "final" and result.answer == "Oslo" and ran == [("add", 1, 2)]
    assert result.steps[-1].action.repairs == ("duplicate_thought", "final_as_call")


def test_tool_exception_becomes_error_observation():
    result = Agent(MockLLM([call("fail"), final("sorry")]), make_tools()).run("t")
    assert "ERROR: 'fail' raised RuntimeError: disk on fire" in result.steps[0].observation
    assert result.answer == "sorry"


def test_bad_arguments_become_error_observation():
    result = Agent(MockLLM([call("add", a="1", b=2), final("x")]), make_tools()).run("t")
    assert "parameter 'a' must be integer, got string" in result.steps[0].observation


def test_loop_recovers_from_a_format_error():
    llm = MockLLM(["Sure! The answer is 42.", final("42")])
    result = Agent(llm, make_tools()).run("t")
    bad, good = result.steps
    assert bad.action is None and bad.raw == "Sure! The answer is 42."
    assert "no JSON object" in bad.error
    assert bad.observation.startswith("[OBSERVATION] ERROR: your reply contains no JSON object.")
    assert "(3 attempts left.)" in bad.observation
    assert llm.calls[1][-1]["content"] == bad.observation  # the repair message reached the model
    assert good.action.answer == "42" and result.stop_reason == "final"
    assert roles(result) == ["system", "user", "assistant", "user", "assistant"]


def test_reply_cut_off_at_the_token_limit_gets_its_own_message():
    class CutOff(MockLLM):
        def chat(self, messages):
            reply = super().chat(messages)
            self.last_finish_reason = "length" if len(self.calls) == 1 else "stop"
            return reply

    result = Agent(CutOff(['{"type": "final", "answer": "The long', final("ok")]), make_tools()).run("t")
    assert "cut off at the token limit" in result.steps[0].observation
    assert "shorter reply" in result.steps[0].observation
    assert result.answer == "ok"


def test_confirm_tool_is_declined_without_a_callback():
    log = []
    result = Agent(MockLLM([call("delete", path="/x"), final("no")]), make_tools(log)).run("t")
    assert log == []
    assert "the user declined to run 'delete'" in result.steps[0].observation


def test_confirm_tool_runs_when_the_callback_says_yes():
    log, asked = [], []
    confirm = lambda name, args: asked.append((name, args)) or True  # noqa: E731
    result = Agent(MockLLM([call("delete", path="/x"), final("ok")]), make_tools(log), confirm=confirm).run("t")
    assert log == [("delete", "/x")] and asked == [("delete", {"path": "/x"})]
    assert result.steps[0].observation.startswith('[OBSERVATION] delete({"path":"/x"}) returned: deleted /x')


def test_long_observation_is_cut_to_max_observation_chars():
    registry = ToolRegistry()
    registry.register(lambda: "x" * 10_000, name="big")
    result = Agent(MockLLM([call("big"), final("ok")]), registry, max_observation_chars=500).run("t")
    assert "characters cut" in result.steps[0].observation
    assert len(result.steps[0].observation) < 700


# -- a failed step is a value, not a prefix of the text ----------------------------------

def _failing_tools():
    registry = ToolRegistry()

    @registry.register
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @registry.register
    def boom() -> str:
        """Always raises."""
        raise RuntimeError("disk on fire")

    @registry.register(timeout=0.05)
    def slow() -> str:
        """Never finishes in time."""
        time.sleep(1)
        return "late"

    @registry.register
    def report() -> str:
        """Real output that happens to start with ERROR:."""
        return "ERROR: not really"

    return registry


def test_a_result_names_the_call_it_answers_and_a_failure_comes_alone():
    registry = _failing_tools()
    llm = MockLLM([call("add", a=1, b=2), call("boom"), call("add", a=1, b=2), final("3")])
    result = Agent(llm, registry).run("t")
    added, failed, repeated = result.steps[:3]
    assert added.observation == '[OBSERVATION] add({"a":1,"b":2}) returned: 3\n(step 1 of 10)'
    assert failed.observation.startswith("[OBSERVATION] ERROR: 'boom' raised RuntimeError")
    # the answer rung shows the result alone, and the result alone is what the history digests
    assert repeated.observation.startswith("[OBSERVATION] The result of your call is:\n3\n")
    assert agent_module._observation_result(added.observation, ("add", {"a": 1, "b": 2})) == "3"
    assert agent_module._observation_result(added.observation) == 'add({"a":1,"b":2}) returned: 3'
    assert agent_module._observation_result(added.observation, ("add", {"a": 2, "b": 1})) == (
        'add({"a":1,"b":2}) returned: 3')
    long = agent_module._returned("write", {"text": "x" * 1000}, "written")
    assert long == 'write({"text":"' + "x" * 184 + '\u2026 returned: written'


# -- a result after its call: what is echoed, and what is read back ---------------------------

def _fetch_tools(func):
    tools = ToolRegistry()
    tools.register(func, name="fetch", description="Fetch a URL.",
                   parameters={"type": "object", "properties": {"request": {"type": "object"}},
                               "required": ["request"]})
    return tools


# the echo serialises the arguments after the tool ran: a value the tool added crashed the run
def test_a_tool_that_adds_a_non_json_value_to_its_arguments_does_not_crash_the_run():
    def fetch(request):
        request["sent_at"] = datetime.datetime(2000, 1, 1)    # the tool's own bookkeeping
        return "200 OK"

    llm = MockLLM([call("fetch", request={"url": "https://example.com"}), final("ok")])
    result = Agent(llm, _fetch_tools(fetch), constrain="never").run("Fetch example.com")
    assert result.answer == "ok"


# ... and what the tool (or confirm, or an overridden call) wrote into them goes to the model
def test_the_echoed_call_is_the_models_not_what_the_tool_made_of_it():
    def fetch(request):
        request.setdefault("headers", {})["Authorization"] = "Bearer sk-SECRET"
        return "200 OK"

    llm = MockLLM([call("fetch", request={"url": "https://example.com"}), final("ok")])
    Agent(llm, _fetch_tools(fetch), constrain="never").run("Fetch example.com")
    sent = llm.calls[1][-1]["content"]
    assert sent.startswith('[OBSERVATION] fetch({"request":{"url":"https://example.com"}}) returned: 200 OK')
    assert "sk-SECRET" not in json.dumps(llm.calls)


def test_an_argument_a_confirm_callback_adds_is_not_echoed():
    tools = ToolRegistry()
    tools.register(lambda path, **_: "written", name="write", description="Write a file.", confirm=True,
                   parameters={"type": "object", "properties": {"path": {"type": "string"}},
                               "additionalProperties": True})

    def confirm(name, arguments):
        arguments["owner_token"] = "tok-SECRET"               # an audit hook that annotates the call
        return True

    llm = MockLLM([call("write", path="a.txt"), final("ok")])
    Agent(llm, tools, constrain="never", confirm=confirm).run("Write a.txt")
    assert "tok-SECRET" not in llm.calls[1][-1]["content"]


# the copy check: the model's own earlier argument, echoed, now "names" the example's subject
def test_an_echoed_argument_does_not_make_a_copy_of_the_examples_argument_pass():
    tools = ToolRegistry()
    tools.register(lambda query: "no results", name="search", description="Search.")
    tools.register(lambda item: "29 EUR", name="get_price", description="A price.")
    replies = [call("search", query="Eiffel Tower"), call("get_price", item="Louvre ticket price"), final("5")]
    result = Agent(MockLLM(replies), tools, constrain="never").run("What is 2 + 3?")
    assert result.steps[1].action is None                     # refused as a copy, as before 9e06572
    assert "copied from the instructions' example" in result.steps[1].error


# an empty result (or one that starts with white space) is not read back without its call
def test_an_empty_result_reads_back_empty():
    message = agent_module._observation(agent_module._returned("touch", {"path": "a.txt"}, ""), 1, 10)
    assert agent_module._observation_result(message, ("touch", {"path": "a.txt"})) == ""


def test_an_empty_result_shows_no_call_in_the_digest_and_the_progress_line():
    tools = ToolRegistry()
    tools.register(lambda path: "", name="touch", description="Create an empty file.")
    result = Agent(MockLLM([call("touch", path="a.txt"), final("ok")]), tools, constrain="never").run("Make a.txt")
    step = result.steps[0]
    assert agent_module._digest_line(step, {}, 100) == '1. touch(path="a.txt") → '
    assert "returned" not in agent_module._cli_progress(step)


def test_a_result_read_back_is_stripped_as_before():
    message = agent_module._observation(agent_module._returned("cat", {}, "\n\n  line two"), 1, 10)
    assert agent_module._observation_result(message, ("cat", {})) == "line two"


def test_a_tool_whose_output_starts_with_error_is_not_a_failed_step():
    registry = _failing_tools()
    llm = MockLLM([call("report"), call("report"), final("x")])
    result = Agent(llm, registry).run("t")
    first, repeat = result.steps[:2]
    assert first.error is None
    # named as every result is, so it reads as what the tool returned, not as a failure
    assert first.observation == "[OBSERVATION] report({}) returned: ERROR: not really\n(step 1 of 10)"
    # a repeat of a call that succeeded: the result is in hand (a failed one would be "Its result:")
    assert "The result of your call is:\nERROR: not really\nYou already have it. Give the final answer now" in repeat.observation
    assert any("a call that already succeeded was repeated" in note for note in repeat.notes)
    assert registry.call("report", {}) == "ERROR: not really"          # the public text is the same
    assert registry._result("report", {}) == ("ERROR: not really", False)


@pytest.mark.parametrize("reply, text", [
    (call("boom"), "ERROR: 'boom' raised RuntimeError: disk on fire. Check the arguments or try "
                   "another approach."),
    (call("nope"), "ERROR: unknown tool 'nope'. Available tools: add, boom, slow, report."),
    (call("add", a="1", b=2), "ERROR: invalid arguments for 'add': parameter 'a' must be integer, got "
                              'string "1". Expected arguments: {"a": {"type": "integer"}, "b": {"type": '
                              '"integer"}}. Fix and call again.'),
    (call("slow"), "ERROR: 'slow' did not finish within 0.05 s and was abandoned. Try smaller input or "
                   "another approach."),
])
def test_a_failed_call_is_a_failed_step_with_the_same_text(reply, text):
    registry = _failing_tools()
    result = Agent(MockLLM([reply, reply, final("x")]), registry, constrain="never").run("t")
    first, repeat = result.steps[:2]
    assert first.error == text
    assert first.observation == f"[OBSERVATION] {text}\n(step 1 of 10)"
    assert f"Its result:\n{text}\nDo not repeat it" in repeat.observation
    name, arguments = json.loads(reply)["name"], json.loads(reply)["arguments"]
    assert registry.call(name, arguments) == text
    assert registry._result(name, arguments) == (text, True)



class _Sandboxed(ToolRegistry):
    """A registry that audits every call and refuses one tool, by overriding the public call()."""

    def __init__(self):
        super().__init__()
        self.seen = []

    def call(self, name, arguments, **options):
        self.seen.append(name)
        if name == "boom":
            return "ERROR: sandbox: 'boom' is disabled here."
        return super().call(name, arguments, **options)


def test_the_loop_runs_tools_through_an_overridden_call():
    # A subclass (or an instance attribute) that wraps call() to audit or refuse calls sees the
    # agent's calls, as before the failed flag; its text is all it gives, so ERROR: marks a failure.
    registry = _Sandboxed()
    registry.register(_failing_tools().get("boom"))
    registry.register(_failing_tools().get("add"))
    result = Agent(MockLLM([call("boom"), call("add", a=1, b=2), final("x")]), registry,
                   constrain="never").run("t")
    refused, added = result.steps[:2]
    assert registry.seen == ["boom", "add"]
    assert refused.observation == ("[OBSERVATION] ERROR: sandbox: 'boom' is disabled here.\n"
                                   "(step 1 of 10)")
    assert refused.error == "ERROR: sandbox: 'boom' is disabled here."
    assert (added.observation, added.error) == ('[OBSERVATION] add({"a":1,"b":2}) returned: 3\n(step 2 of 10)', None)

    plain = _failing_tools()
    calls = []
    plain.call = lambda name, arguments, **options: calls.append(name) or "patched"
    result = Agent(MockLLM([call("add", a=1, b=2), final("x")]), plain).run("t")
    assert calls == ["add"] and result.steps[0].observation.startswith(
        '[OBSERVATION] add({"a":1,"b":2}) returned: patched')


def test_the_loop_runs_tools_through_a_call_patched_on_the_class(monkeypatch):
    # instrumentation wraps ToolRegistry.call on the class itself; the agent's calls go through it
    seen = []
    plain_call = ToolRegistry.call

    def traced(self, name, arguments, **options):
        seen.append(name)
        return plain_call(self, name, arguments, **options)

    monkeypatch.setattr(ToolRegistry, "call", traced)
    result = Agent(MockLLM([call("boom"), final("x")]), _failing_tools(), constrain="never").run("t")
    assert seen == ["boom"]
    assert result.steps[0].error.startswith("ERROR: 'boom' raised RuntimeError: disk on fire.")

# -- stop reasons -----------------------------------------------------------------------

def test_every_stop_reason_is_listed():
    assert STOP_REASONS == ("final", "max_steps", "repeat_limit", "format_errors", "time_limit",
                            "token_limit", "llm_error")


def test_max_steps_stops_and_the_last_observation_asks_for_the_answer():
    replies = [call("add", a=i, b=1) for i in range(10)]
    result = Agent(MockLLM(replies), make_tools(), max_steps=3).run("t")
    assert result.stop_reason == "max_steps" and result.answer is None and not result.ok
    assert len(result.steps) == 3
    assert result.steps[0].observation.endswith("(step 1 of 3)")
    assert result.steps[1].observation.endswith("(step 2 of 3; your next reply is the last: give the final answer)")
    assert result.last_observation == result.steps[2].observation
    assert "max_steps=3" in result.summary


def test_repeated_call_is_not_run_again_and_gets_a_nudge():
    log = []
    replies = [call("add", a=1, b=2)] * 3 + [final("3")]
    result = Agent(MockLLM(replies), make_tools(log), max_repeats=2).run("t")
    assert log == [("add", 1, 2)]  # ran once
    nudge = result.steps[1].observation
    # the answer rung (the call had succeeded): the earlier result, in hand, and the ask
    assert nudge.startswith("[OBSERVATION] The result of your call is:\n3\nYou already have it.")
    assert "Give the final answer now" in nudge
    assert result.stop_reason == "final"


def test_arguments_in_another_order_are_the_same_call():
    log = []
    replies = [call("add", a=1, b=2), json.dumps({"type": "tool_call", "name": "add", "arguments": {"b": 2, "a": 1}}),
               final("3")]
    Agent(MockLLM(replies), make_tools(log)).run("t")
    assert log == [("add", 1, 2)]


def test_repeat_limit_stops_the_run():
    log = []
    result = Agent(MockLLM([call("add", a=1, b=2)] * 5), make_tools(log), max_repeats=2).run("t")
    assert result.stop_reason == "repeat_limit"
    assert len(result.steps) == 4 and log == [("add", 1, 2)]
    assert result.steps[-1].observation is None
    assert "repeated 3 times" in result.steps[-1].error


def test_format_errors_stop_after_the_limit_in_a_row():
    result = Agent(MockLLM(["nope", "still nope", "{bad", "no"]), make_tools(), max_format_errors=2).run("t")
    assert result.stop_reason == "format_errors"
    assert len(result.steps) == 3
    assert "(2 attempts left.)" in result.steps[0].observation
    assert "(1 attempt left.)" in result.steps[1].observation
    assert result.steps[2].observation is None and result.steps[2].error


def test_format_error_count_resets_after_a_good_reply():
    replies = ["bad", call("add", a=1, b=1), "bad", final("ok")]
    result = Agent(MockLLM(replies), make_tools(), max_format_errors=1).run("t")
    assert result.stop_reason == "final"


def test_time_limit_stops_between_steps(clock):
    registry = ToolRegistry()
    registry.register(lambda: clock.__setitem__(0, clock[0] + 5) or "slept", name="nap")  # the tool takes 5 s
    result = Agent(MockLLM([call("nap"), final("late")]), registry, max_seconds=2).run("t")
    assert result.stop_reason == "time_limit" and len(result.steps) == 1
    assert result.seconds == 5 and result.steps[0].tool_seconds == 5


def test_tool_timeout_never_runs_past_max_seconds():
    release = threading.Event()
    registry = ToolRegistry(default_timeout=30)
    registry.register(lambda: release.wait(30) and "slept", name="slow")
    started = time.monotonic()
    result = Agent(MockLLM([call("slow"), final("x")]), registry, max_seconds=0.1).run("t")
    release.set()
    assert time.monotonic() - started < 10   # waiting for the tool takes 30 s: room for a busy machine
    assert "did not finish within" in result.steps[0].observation
    assert result.stop_reason == "time_limit"


def test_token_limit_with_estimated_usage():
    result = Agent(MockLLM([call("add", a=1, b=1), final("x")]), make_tools(), max_total_tokens=50).run("t")
    assert result.stop_reason == "token_limit"
    assert result.usage["estimated"] is True
    assert result.usage["total_tokens"] > 50


def test_token_limit_with_reported_usage():
    class Counting(MockLLM):
        def __init__(self, replies):
            super().__init__(replies)
            self.usage = {"prompt_tokens": 0, "completion_tokens": 0}  # a total shared with other runs
            self.last_usage = None

        def chat(self, messages):
            self.usage["prompt_tokens"] += 100_000  # another run's calls: never diffed into this run
            self.last_usage = {"prompt_tokens": 100, "completion_tokens": 10}
            return super().chat(messages)

    replies = [call("add", a=i, b=1) for i in range(5)]
    result = Agent(Counting(replies), make_tools(), max_total_tokens=250).run("t")
    assert result.stop_reason == "token_limit" and len(result.steps) == 3
    assert result.usage == {"prompt_tokens": 300, "completion_tokens": 30, "estimated": False, "total_tokens": 330,
                            "estimated_steps": []}


def test_a_call_without_reported_usage_is_estimated():
    class Sometimes(MockLLM):
        def chat(self, messages):
            self.last_usage = {"prompt_tokens": 7, "completion_tokens": 3} if not self.calls else None
            return super().chat(messages)

    result = Agent(Sometimes([call("add", a=1, b=1), final("2")]), make_tools()).run("t")
    assert result.usage["estimated"] is True
    assert result.usage["completion_tokens"] == 3 + len(final("2")) // 4


def test_llm_error_stops_and_keeps_the_message():
    llm = MockLLM([call("add", a=1, b=1), LLMError("HTTP 503 from server: overloaded", status=503)])
    result = Agent(llm, make_tools()).run("t")
    assert result.stop_reason == "llm_error" and result.answer is None
    assert len(result.steps) == 2
    assert result.steps[-1].raw is None and result.steps[-1].error == "HTTP 503 from server: overloaded"
    assert "overloaded" in result.summary


def test_running_out_of_scripted_replies_is_an_llm_error():
    result = Agent(MockLLM([]), make_tools()).run("t")
    assert result.stop_reason == "llm_error"
    assert "ran out of scripted replies" in result.steps[0].error


def test_any_exception_from_a_custom_client_is_an_llm_error():
    class Broken:
        def chat(self, messages):
            raise ConnectionError("socket closed")

    result = Agent(Broken(), make_tools()).run("t")
    assert result.stop_reason == "llm_error"
    assert result.steps[0].error == "ConnectionError: socket closed"


def test_non_string_reply_is_read_as_text():
    result = Agent(MockLLM([lambda messages: None, final("ok")]), make_tools()).run("t")
    assert result.steps[0].raw == "" and result.stop_reason == "final"


# -- options, callbacks, logging ----------------------------------------------------------

@pytest.mark.parametrize("option, value, words", [
    ("max_steps", 0, "invalid max_steps 0 (must be an integer >= 1)"),
    ("max_steps", 2.5, "invalid max_steps 2.5"),
    ("max_repeats", -1, "invalid max_repeats -1"),
    ("max_format_errors", True, "invalid max_format_errors True"),
    ("max_context_chars", 10, "invalid max_context_chars 10"),
    ("max_seconds", 0, "invalid max_seconds 0"),
    ("max_total_tokens", 0, "invalid max_total_tokens 0"),
])
def test_options_are_validated(option, value, words):
    with pytest.raises(ValueError) as info:
        Agent(MockLLM([]), **{option: value})
    assert words in str(info.value)


# One validator checks every numeric option of every class: each refuses the same kinds of values.
_OWNERS = {
    "max_steps": Agent, "max_repeats": Agent, "max_format_errors": Agent, "max_observation_chars": Agent,
    "max_context_chars": Agent, "max_total_tokens": Agent, "max_seconds": Agent, "max_retries": "client",
    "max_response_bytes": "client", "max_tokens": "client", "temperature": "client", "timeout": "client",
    "max_request_seconds": "client", "default_timeout": ToolRegistry, "max_thought_chars": "schema",
    "workers": "batch",
}


def _build(option, value):
    if _OWNERS[option] is Agent:
        return Agent(MockLLM([]), **{option: value})
    if _OWNERS[option] is ToolRegistry:
        return ToolRegistry(**{option: value})
    if _OWNERS[option] == "schema":
        return ToolRegistry().action_schema(**{option: value})
    if _OWNERS[option] == "batch":
        return agent_module.run_batch(Agent(MockLLM([])), [], **{option: value})
    return agent_module.OpenAICompatLLM("m", "http://127.0.0.1:9/v1", **{option: value})


@pytest.mark.parametrize("value", [
    True, "5", float("nan"), float("inf"), -1, -(10 ** 400), pytest.param(10 ** 5000, id="5000 digits")])
@pytest.mark.parametrize("option", sorted(agent_module._SETTINGS))
def test_every_numeric_option_refuses_what_is_not_a_number_in_range(option, value):
    assert option in _OWNERS  # a new option gets an owner here
    with pytest.raises(ValueError, match=f"invalid {option} ") as info:
        _build(option, value)
    assert len(str(info.value)) < 200   # a huge value is shown cut, or as a placeholder


@pytest.mark.parametrize("option", ["timeout", "max_request_seconds", "max_seconds", "default_timeout", "temperature"])
def test_a_seconds_option_refuses_an_integer_too_large_for_a_float(option):
    with pytest.raises(ValueError, match=f"invalid {option} "):   # not OverflowError, as math.isfinite raised
        _build(option, 10 ** 400)


def test_a_tool_timeout_is_checked_by_the_same_rule():
    with pytest.raises(agent_module.ToolError, match="tool .slow.: invalid timeout"):
        agent_module.Tool("slow", "d", {"type": "object"}, lambda: 1, timeout=10 ** 400)


def test_bad_task_or_history_is_a_value_error():
    agent = Agent(MockLLM([final("x")]))
    with pytest.raises(ValueError, match="invalid task"):
        agent.run("")
    with pytest.raises(ValueError, match="invalid history message 0"):
        agent.run("t", history=[{"role": "robot", "content": "hi"}])


def test_on_step_is_called_as_each_step_ends():
    seen = []
    Agent(MockLLM([call("add", a=1, b=1), final("2")]), make_tools(),
          on_step=lambda step: seen.append((step.index, step.action.kind))).run("t")
    assert seen == [(1, "tool_call"), (2, "final")]


def test_debug_log_records_model_and_tool_calls(caplog):
    with caplog.at_level(logging.DEBUG, logger="agent"):
        Agent(MockLLM([call("add", a=1, b=1), final("2")]), make_tools()).run("t")
    messages = [r.getMessage() for r in caplog.records if r.name == "agent"]
    assert any(m.startswith("step 1: model call took") for m in messages)
    assert any(m.startswith("step 1: tool add took") for m in messages)


def test_result_round_trips_through_json(tmp_path):
    result = Agent(MockLLM(["oops", call("add", a=1, b=1), final("2")]), make_tools()).run("t")
    data = json.loads(json.dumps(result.to_dict()))
    assert data["stop_reason"] == "final"
    assert [s["index"] for s in data["steps"]] == [1, 2, 3]
    assert data["steps"][1]["action"]["arguments"] == {"a": 1, "b": 1}
    path = tmp_path / "run.json"
    result.save(str(path))
    assert json.loads(path.read_text())["answer"] == "2"


# -- context budget and multi-turn ------------------------------------------------------------

def test_context_budget_keeps_system_and_task_and_alternation():
    replies = [call("add", a=i, b=1000) for i in range(30)] + [final("done")]
    llm = MockLLM(replies)
    result = Agent(llm, make_tools(), max_steps=40, max_context_chars=2500).run("Add many numbers.")
    assert result.stop_reason == "final"
    assert len(result.messages) == 2 + 2 * 30 + 1  # the result keeps everything
    for sent in llm.calls:
        assert sent[0]["role"] == "system"
        assert sent[1]["content"].startswith("Add many numbers.")
        assert_alternating(sent)
        if len(sent) > 4:
            assert sum(len(m["content"]) for m in sent) <= 2500 + 200
    assert "earlier step(s) of this task were left out" in llm.calls[-1][1]["content"]
    assert llm.calls[-1][-1] == result.messages[-2]  # the latest observation is always sent


def test_history_continues_a_conversation():
    agent = Agent(MockLLM([final("Paris"), final("About 2.1 million")]), make_tools())
    first = agent.run("Capital of France?")
    second = agent.run("How many people live there?", history=first.messages)
    assert [m["role"] for m in second.messages] == ["system", "user", "assistant", "user", "assistant"]
    assert second.messages[:3] == first.messages
    assert agent.llm.calls[1][2]["content"] == first.messages[2]["content"]


def test_history_ending_with_a_user_message_keeps_roles_alternating():
    agent = Agent(MockLLM([call("add", a=1, b=1), final("x")]), make_tools(), max_steps=1)
    stopped = agent.run("first")
    assert stopped.messages[-1]["role"] == "user"
    second = agent.run("second", history=stopped.messages)
    assert_alternating(second.messages[:-1])
    assert second.messages[3]["content"].endswith("\n\nsecond")


def test_history_before_the_task_is_always_sent_under_a_budget():
    history = [{"role": "system", "content": "sys"}, {"role": "user", "content": "earlier " * 300},
               {"role": "assistant", "content": "answer " * 300}]
    llm = MockLLM([call("add", a=i, b=1) for i in range(8)] + [final("x")])
    Agent(llm, make_tools(), max_context_chars=1000).run("now", history=history)
    for sent in llm.calls:
        assert sent[:3] == history and sent[3]["content"].startswith("now")
    assert "left out" in llm.calls[-1][3]["content"]


# -- the decoding ladder: what each call sends ---------------------------------------------

class PlainClient:
    """A client whose chat takes no per-call options."""

    def __init__(self, replies):
        self.replies, self.calls = list(replies), []

    def chat(self, messages):
        self.calls.append(messages)
        return self.replies.pop(0)


class SchemaOnlyClient(PlainClient):
    def chat(self, messages, response_schema=None):
        self.calls.append(response_schema)
        return self.replies.pop(0)


TOOL_RUNG = "decoding ladder: the first call of a run may only call a tool (a response_schema of the tool calls)"


def tool_calls(registry):
    return agent_module._tool_rung(registry)


def test_the_first_call_may_only_call_a_tool_and_a_format_error_turns_on_the_schema():
    registry = make_tools()
    llm = MockLLM(["Sure! 42.", call("add", a=1, b=1), final("2")])
    result = Agent(llm, registry).run("t")
    assert llm.options[0] == {"response_schema": tool_calls(registry), "frequency_penalty": 0.5}
    constrained = {"response_schema": registry.action_schema(), "frequency_penalty": 0.5}
    assert llm.options[1] == llm.options[2] == constrained
    assert result.steps[0].notes == [TOOL_RUNG, "decoding ladder: a reply could not be used: from the next call "
                                     "on, the action schema is sent (response_schema) with frequency_penalty=0.5"]
    assert result.steps[1].notes == [] and result.answer == "2"
    assert json.loads(json.dumps(result.to_dict()))["steps"][0]["notes"] == result.steps[0].notes


def test_a_repeated_failed_reply_raises_the_temperature():
    llm = MockLLM(["17 * 23 + 4 = 349", "Not JSON", "17 * 23 + 4 = 349", final("395"), ])
    # four attempts: the fourth call is not the last one allowed, which takes the answer rung
    result = Agent(llm, make_tools(), max_format_errors=4).run("t")
    assert [sorted(options) for options in llm.options] == [
        ["frequency_penalty", "response_schema"], ["frequency_penalty", "response_schema"],
        ["frequency_penalty", "response_schema"],
        ["frequency_penalty", "response_schema", "temperature"]]
    assert llm.options[3]["temperature"] == 0.7
    assert "temperature of at least 0.7" in result.steps[2].notes[0]
    assert result.answer == "395"


def test_the_raised_temperature_keeps_a_hotter_configured_one():
    llm = MockLLM(["no", "no", final("x")])
    llm.temperature = 0.9
    Agent(llm, make_tools()).run("t")
    assert llm.options[2]["temperature"] == 0.9


def test_constrain_never_takes_no_rung():
    llm = MockLLM(["no", "no", "no", final("x")])
    result = Agent(llm, make_tools(), constrain="never").run("t")
    assert llm.options == [{}, {}, {}, {}] and all(not step.notes for step in result.steps)


def test_constrain_always_sends_the_schema_from_the_first_call():
    registry = make_tools()
    llm = MockLLM([call("add", a=1, b=1), final("x")])
    Agent(llm, registry, constrain="always").run("t")
    assert llm.options == [{"response_schema": tool_calls(registry), "frequency_penalty": 0.5},
                           {"response_schema": registry.action_schema(), "frequency_penalty": 0.5}]


def test_constrain_always_with_a_plain_client_warns_once_and_runs(caplog):
    llm = PlainClient(["no", "no", final("x")])
    with caplog.at_level(logging.INFO, logger="agent"):
        result = Agent(llm, make_tools(), constrain="always").run("t")
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "running unconstrained" in warnings[0].getMessage()
    assert result.answer == "x" and len(llm.calls) == 3
    assert all(not step.notes for step in result.steps)  # a plain client takes no rung


def test_a_client_naming_only_response_schema_gets_only_that():
    registry = make_tools()
    llm = SchemaOnlyClient(["no", "no", "no", final("x")])
    result = Agent(llm, registry, max_seconds=60, max_format_errors=4).run("t")
    assert llm.calls == [tool_calls(registry)] + [registry.action_schema()] * 3
    assert result.answer == "x"


def test_the_ladder_is_logged_at_info(caplog):
    with caplog.at_level(logging.INFO, logger="agent"):
        Agent(MockLLM(["no", "no", final("x")]), make_tools()).run("t")
    messages = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert any("step 1: decoding ladder: the first call of a run may only call a tool" in m for m in messages)
    assert any("step 1: decoding ladder: a reply could not be used: from the next call on" in m for m in messages)
    assert any("step 2: decoding ladder: the same failed reply came twice" in m for m in messages)


def test_what_is_left_of_max_seconds_is_passed_to_each_call(clock):
    def slow(reply):  # each model call takes 4 s
        return lambda messages: clock.__setitem__(0, clock[0] + 4) or reply

    llm = MockLLM([slow(call("add", a=1, b=1)), slow(final("2"))])
    result = Agent(llm, make_tools(), max_seconds=30).run("t")
    assert [options["max_seconds"] for options in llm.options] == [30, 26]
    assert [step.llm_seconds for step in result.steps] == [4, 4]


def test_the_ladder_changes_nothing_on_the_client():
    llm = MockLLM(["no", "no", final("x")])
    llm.temperature = 0.0
    before = dict(vars(llm))
    Agent(llm, make_tools()).run("t")
    assert llm.temperature == 0.0 and set(vars(llm)) == set(before)
    assert MockLLM.__dict__.get("response_schema") is None


def test_constrain_is_validated():
    with pytest.raises(ValueError, match="invalid constrain 'sometimes'"):
        Agent(MockLLM([]), constrain="sometimes")


# -- what the client reports goes into the step --------------------------------------------

class Reporting(MockLLM):
    """A scripted client that also reports a finish reason and reasoning per reply."""

    def __init__(self, replies, finish_reasons, reasoning=None):
        super().__init__(replies)
        self.finish_reasons, self.reasoning = list(finish_reasons), reasoning

    def chat(self, messages, **options):
        reply = super().chat(messages, **options)
        self.last_finish_reason = self.finish_reasons[len(self.calls) - 1]
        self.last_reasoning = self.reasoning
        return reply


def test_finish_reason_and_reasoning_are_kept_on_the_step():
    result = Agent(Reporting([final("x")], ["stop"], reasoning="Let me think."), make_tools()).run("t")
    step = result.steps[0]
    assert (step.finish_reason, step.reasoning) == ("stop", "Let me think.")
    assert result.to_dict()["steps"][0]["reasoning"] == "Let me think."


def test_a_repetition_stop_is_a_format_error_that_says_so():
    looping = '{"type": "final", "thought": "' + "I think I think " * 30
    result = Agent(Reporting([looping, final("x")], ["repetition", "stop"]), make_tools()).run("t")
    first = result.steps[0]
    assert first.action is None and "kept repeating the same text" in first.error
    assert first.observation.startswith("[OBSERVATION] ERROR: your reply kept repeating the same text, so it was")
    assert result.answer == "x"


def test_a_repetition_stop_refuses_even_a_readable_action():
    text = "Let me see. " + call("add", a=1, b=2) + " Then again, then again, then again"
    log = []
    result = Agent(Reporting([text, final("x")], ["repetition", "stop"]), make_tools(log)).run("t")
    assert log == [] and "kept repeating" in result.steps[0].error


# -- context overflow and prompt caching ---------------------------------------------------

def overflow(n_ctx=None, n_prompt_tokens=None):
    exc = LLMError("HTTP 400: the request exceeds the available context size", status=400, kind="context_overflow")
    exc.n_ctx, exc.n_prompt_tokens = n_ctx, n_prompt_tokens
    return exc


def sent_chars(messages):
    return sum(len(m["content"]) for m in messages)


def test_a_context_overflow_sets_a_budget_and_retries_once():
    replies = [call("add", a=i, b=10 ** 40) for i in range(30)] + [overflow(n_ctx=1000, n_prompt_tokens=2000),
                                                                    final("done")]
    llm = MockLLM(replies)
    agent = Agent(llm, make_tools(), max_steps=40)
    result = agent.run("t")
    assert result.stop_reason == "final" and agent.max_context_chars is None
    failed, retried = llm.calls[30], llm.calls[31]
    budget = sent_chars(failed) // 2  # scaled by n_ctx / n_prompt_tokens
    assert result.steps[30].notes == [f"context overflow: max_context_chars={budget} for the rest of this run; retried"]
    assert sent_chars(retried) <= budget and retried[1]["content"].startswith("t\n\n[Note: ")
    assert_alternating(retried)


def test_the_token_counts_of_an_overflow_are_declared_fields_of_the_error():
    assert (LLMError("x", 400).n_ctx, LLMError("x", 400).n_prompt_tokens) == (None, None)
    error = LLMError("the request exceeds the available context size", 400, "context_overflow",
                     n_ctx=1000, n_prompt_tokens=2000)
    llm = MockLLM([call("add", a=i, b=10 ** 40) for i in range(30)] + [error, final("done")])
    result = Agent(llm, make_tools(), max_steps=40).run("t")
    budget = sent_chars(llm.calls[30]) // 2   # scaled by n_ctx / n_prompt_tokens, not by 3/4
    assert result.steps[30].notes == [f"context overflow: max_context_chars={budget} for the rest of this run; retried"]


def test_a_reply_that_filled_the_context_is_sent_back_shortened_and_kept_whole():
    # Seen on llama.cpp: a free-text reply ran to the context limit, and the next request overflowed.
    runaway = "The answer is " + "very " * 3000
    llm = MockLLM([runaway, overflow(n_ctx=1000, n_prompt_tokens=2000), final("done")])
    result = Agent(llm, make_tools()).run("t")
    assert result.stop_reason == "final"
    retried = llm.calls[2]
    assert retried[-2]["role"] == "assistant" and "characters cut" in retried[-2]["content"]
    assert sent_chars(retried) <= sent_chars(llm.calls[1]) // 2 * 0.6 + 300   # trimmed like pairs: to 60%
    assert result.messages[2]["content"] == runaway and result.steps[0].raw == runaway
    assert_alternating(retried)


def test_a_runaway_reply_after_an_earlier_step_is_cut_to_the_trim_target():
    # The real sequence: prose, a constrained reply cut at the token limit, then the overflow. The budget
    # (what was sent, scaled by 4096/4128) fits once the earlier pair is dropped, but leaves no room to reply.
    runaway = '{"type": "tool_call", "thought": "' + "1234567890" * 368
    llm = MockLLM(["17*23+4 = 391", runaway, overflow(n_ctx=4096, n_prompt_tokens=4128), final("x")])
    result = Agent(llm, make_tools()).run("t")
    budget = sent_chars(llm.calls[2]) * 4096 // 4128
    assert result.stop_reason == "final"
    assert sent_chars(llm.calls[3]) <= budget * 0.6 + 300 and "characters cut" in llm.calls[3][-2]["content"]


def test_without_token_counts_the_budget_is_three_quarters_of_what_was_sent():
    llm = MockLLM([call("add", a=i, b=10 ** 40) for i in range(4)] + [overflow(), final("done")])
    result = Agent(llm, make_tools()).run("t")
    assert f"max_context_chars={sent_chars(llm.calls[4]) * 3 // 4} " in result.steps[4].notes[0]


def test_when_the_task_alone_does_not_fit_the_run_stops_at_once():
    llm = MockLLM([overflow(n_ctx=100, n_prompt_tokens=5000), final("never")])
    result = Agent(llm, make_tools()).run("t")
    assert result.stop_reason == "llm_error" and len(llm.calls) == 1
    assert "the system prompt and the task alone" in result.steps[0].error
    assert "the system prompt and the task alone" in result.summary


def test_a_second_overflow_ends_the_run_naming_max_context_chars():
    # enough steps that three quarters of what was sent still hold the system prompt and the task
    replies = [call("add", a=i, b=1) for i in range(10)] + [overflow(), call("add", a=9, b=9), overflow(), final("x")]
    result = Agent(MockLLM(replies), make_tools(), max_steps=20).run("t")
    assert result.stop_reason == "llm_error" and len(result.steps) == 12
    assert "set a smaller max_context_chars" in result.steps[-1].error


def test_an_overflow_under_your_own_budget_names_max_context_chars():
    llm = MockLLM([call("add", a=1, b=1), overflow(), final("x")])
    result = Agent(llm, make_tools(), max_context_chars=5000).run("t")
    assert result.stop_reason == "llm_error" and len(llm.calls) == 2
    assert "set a smaller max_context_chars" in result.steps[-1].error


def test_the_budget_trims_in_chunks_so_calls_share_their_prefix():
    llm = MockLLM([call("add", a=i, b=10 ** 30) for i in range(60)] + [final("x")])
    Agent(llm, make_tools(), max_steps=70, max_context_chars=5000).run("t")
    shared = sum(current[:len(previous)] == previous for previous, current in zip(llm.calls, llm.calls[1:]))
    trims = len(llm.calls) - 1 - shared
    assert trims >= 3 and shared >= 5 * trims  # most calls extend the one before
    for previous, current in zip(llm.calls, llm.calls[1:]):
        if current[:len(previous)] != previous:  # a trim goes well below the budget
            assert sent_chars(current) <= 0.6 * 5000 + 200


# -- the ladder and the loop check seen in real request bodies (OpenAICompatLLM) -----------

def test_each_rung_changes_the_request_body(serve):
    registry = make_tools()
    server = serve(chat_answer("17 * 23 + 4 = 349"), chat_answer("17 * 23 + 4 = 349"), chat_answer(final("395")))
    llm = agent_module.OpenAICompatLLM("m", server.base_url, temperature=0.0, sleep=lambda s: None)
    result = Agent(llm, registry).run("What is 17 * 23 + 4?")
    bodies = [request["body"] for request in server.requests]
    assert bodies[0]["response_format"]["json_schema"]["schema"] == tool_calls(registry)
    assert bodies[0]["temperature"] == 0.0
    assert bodies[1]["response_format"]["json_schema"]["schema"] == registry.action_schema()
    assert bodies[1]["temperature"] == 0.0  # one failure: the schema, not yet a hotter temperature
    assert bodies[2]["temperature"] == 0.7 and "response_format" in bodies[2]  # the same failure again
    assert result.answer == "395" and llm.response_schema is None and llm.temperature == 0.0


def test_a_whole_reply_that_loops_is_a_format_error_that_says_so():
    looping = "Let me compute 17 * 23 first. " * 20
    result = Agent(MockLLM([looping, final("x")]), make_tools()).run("t")
    assert "kept repeating the same text" in result.steps[0].error and result.answer == "x"


def test_a_constrained_reply_that_looped_raises_the_temperature():
    loop = '{"type": "tool_call", "thought": "' + "so the answer is so " * 40
    llm = Reporting(["prose, not JSON", loop, final("395")], ["stop", "repetition", "stop"])
    result = Agent(llm, make_tools()).run("t")
    assert "temperature" not in llm.options[1] and llm.options[2]["temperature"] == 0.7
    assert "a constrained reply looped" in result.steps[1].notes[0]
    assert result.answer == "395"


def test_a_free_text_reply_that_looped_only_turns_on_the_schema():
    loop = "17 * 23 = 17 * 23 = " * 40
    llm = Reporting([loop, final("395")], ["repetition", "stop"])
    Agent(llm, make_tools()).run("t")
    assert "response_schema" in llm.options[1] and "temperature" not in llm.options[1]


def test_on_wait_hears_each_model_call_and_tool_start_and_end_but_not_a_confirmed_tool():
    heard = []
    llm = MockLLM([call("add", a=1, b=2), call("delete", path="/x"), final("3")])
    result = Agent(llm, make_tools(), confirm=lambda name, arguments: True,
                   on_wait=lambda step, what: heard.append((step, what))).run("add 1 and 2")
    assert result.answer == "3" and result.steps[1].observation.startswith('[OBSERVATION] delete({"path":"/x"}) returned: deleted')
    assert heard == [(1, "waiting for the model"), (1, None), (1, "running add (limit 30 s)"),
                     (1, None), (2, "waiting for the model"), (2, None),
                     (3, "waiting for the model"), (3, None)]


def test_the_last_attempt_after_unusable_replies_asks_for_the_final_answer():
    llm = MockLLM(["no", "still no", "never", final("Paris")])
    result = Agent(llm, make_tools()).run("What is the capital of France?")
    assert (result.stop_reason, result.answer) == ("final", "Paris")
    assert llm.options[3]["response_schema"]["properties"]["type"] == {"const": "final"}
    assert "temperature" not in llm.options[3]     # an answer is asked at the client's own
    assert any("the next unusable reply would stop the run: the next call asks for the final "
               "answer" in note for note in result.steps[2].notes)


def test_an_unusable_reply_to_the_last_attempt_still_stops_the_run():
    result = Agent(MockLLM(["no", "still no", "never", "nope"]), make_tools()).run("t")
    assert result.stop_reason == "format_errors" and len(result.steps) == 4

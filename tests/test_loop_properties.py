"""Whatever the model does, the run ends cleanly with a contract stop reason and a full trace."""
import json

from conftest import make_tools
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent import STOP_REASONS, Agent, LLMError, MockLLM

RAN = []  # what the tools ran, in the current example
REGISTRY = make_tools(RAN)

calls = st.one_of(
    st.builds(lambda t: {"type": "tool_call", "name": "echo", "arguments": {"text": t}}, st.text(max_size=30)),
    st.builds(lambda a, b: {"type": "tool_call", "name": "add", "arguments": {"a": a, "b": b}},
              st.integers(-5, 5), st.one_of(st.integers(-5, 5), st.text(max_size=3), st.booleans())),
    st.just({"type": "tool_call", "name": "fail", "arguments": {}}),
    st.builds(lambda p: {"type": "tool_call", "name": "delete", "arguments": {"path": p}}, st.text(max_size=10)),
    st.builds(lambda n: {"type": "tool_call", "name": n, "arguments": {}}, st.text(max_size=12)),
)
finals = st.builds(lambda a: {"type": "final", "thought": "t", "answer": a}, st.text(max_size=30))
actions = st.one_of(calls, finals)


def packaging(obj):
    text = json.dumps(obj)
    return st.sampled_from([
        text, f"```json\n{text}\n```", f"<think>hmm</think>{text}", f"Sure!\n{text}\nDone.",
        text[:-1] + ",}", f"[{text}]", f"{text}\nObservation: 42\n{{\"type\": \"final\", \"answer\": \"x\"}}",
        f"{text}\n{text}", text[: len(text) // 2],
    ])


replies = st.one_of(
    actions.flatmap(packaging),
    st.text(max_size=60),                                            # garbage
    st.just("x" * 300_000),                                          # huge
    st.just('{"type": "tool_call", "name": "add", "arguments": {"a": 1, "b": 1}}'),  # a likely repeat
    st.builds(lambda s: LLMError(f"HTTP 503: {s}", status=503), st.text(max_size=10)),
    st.just(lambda messages: 1 / 0),                                 # a broken custom client
    st.just(lambda messages: None),                                  # a client returning no text
)

options = st.fixed_dictionaries({
    "max_steps": st.integers(1, 8),
    "max_repeats": st.integers(0, 3),
    "max_format_errors": st.integers(0, 3),
    "max_context_chars": st.one_of(st.none(), st.integers(1000, 3000)),
    "max_total_tokens": st.one_of(st.none(), st.integers(100, 5000)),
    "confirm": st.sampled_from([None, lambda name, arguments: False]),
})


@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(replies, max_size=12), options)
def test_the_run_always_ends_cleanly(script, opts):
    RAN.clear()
    result = Agent(MockLLM(script), REGISTRY, **opts).run("Do the task.")
    assert result.stop_reason in STOP_REASONS
    assert 1 <= len(result.steps) <= opts["max_steps"]
    assert [s.index for s in result.steps] == list(range(1, len(result.steps) + 1))
    assert not any(name == "delete" for name, *_ in RAN)  # never confirmed, so never run
    assert (result.answer is not None) == (result.stop_reason == "final")
    if result.stop_reason != "final":
        assert result.summary
    messages = result.messages
    assert messages[0]["role"] == "system" and messages[1]["content"] == "Do the task."
    for i, message in enumerate(messages[1:]):
        assert message["role"] == ("user" if i % 2 == 0 else "assistant")
    for step in result.steps:
        if step.observation is not None:
            assert step.observation.startswith("[OBSERVATION] ")
            assert f"(step {step.index} of {opts['max_steps']}" in step.observation
    json.dumps(result.to_dict())

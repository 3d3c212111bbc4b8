"""MockLLM: scripted replies, replay of saved runs, and the offline planner."""
import json

import pytest
from conftest import final

from agent import Agent, LLMError, MockLLM, _demo_tools, run


def test_scripted_replies_in_order_then_llm_error():
    llm = MockLLM(["a", lambda messages: f"saw {len(messages)}"])
    assert llm.chat([{"role": "user", "content": "x"}]) == "a"
    assert llm.chat([{"role": "user", "content": "y"}, {"role": "user", "content": "z"}]) == "saw 2"
    with pytest.raises(LLMError, match="ran out of scripted replies after 2"):
        llm.chat([])
    assert [len(c) for c in llm.calls] == [1, 2, 0]


def test_calls_are_copies():
    llm = MockLLM(["a"])
    messages = [{"role": "user", "content": "x"}]
    llm.chat(messages)
    messages[0]["content"] = "changed"
    assert llm.calls[0][0]["content"] == "x"


def test_scripted_exception_is_raised():
    with pytest.raises(LLMError, match="boom"):
        MockLLM([LLMError("boom")]).chat([])


def test_planner_calls_calculator_then_answers():
    agent = Agent(MockLLM(), _demo_tools())
    result = agent.run("What is 17 * 23 + 4?")
    assert result.answer == "395"
    call = result.steps[0].action
    assert (call.name, call.arguments) == ("calculator", {"expression": "17 * 23 + 4"})


@pytest.mark.parametrize("task, answer", [
    ("Compute 2^10 and then 3*(4+5).", "2**10 = 1024, and 3*(4+5) = 27."),
    ("Write a poem.", "I am the offline demo model"),
    ("What is 1/0 + 2?", "ERROR: 'calculator' raised UnsafeExpression: division by zero"),
], ids=["several expressions and a caret", "no arithmetic", "a tool error"])
def test_planner_answers_from_what_it_computed_or_explains_itself(task, answer):
    result = Agent(MockLLM(), _demo_tools()).run(task)
    assert result.answer.startswith(answer) and result.stop_reason == "final"


def test_from_trace_replays_a_saved_result(tmp_path):
    original = Agent(MockLLM(["oops", final("ok")]), _demo_tools()).run("t")
    path = tmp_path / "result.json"
    original.save(str(path))
    replay = MockLLM.from_trace(str(path))
    assert replay.replies == ["oops", final("ok")]
    again = Agent(replay, _demo_tools()).run("t")
    assert [s.raw for s in again.steps] == [s.raw for s in original.steps]
    assert [s.observation for s in again.steps] == [s.observation for s in original.steps]


def test_from_trace_reads_json_lines(tmp_path):
    path = tmp_path / "trace.jsonl"
    lines = [{"event": "step", "index": 1, "raw": "a"}, {"event": "step", "index": 2, "raw": None},
             {"event": "result", "answer": None}]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    assert MockLLM.from_trace(str(path)).replies == ["a"]


def test_from_trace_reads_the_recorded_fields_and_never_the_notes(tmp_path):
    path = tmp_path / "trace.jsonl"
    quoted = ('context overflow: max_context_chars=9 ... not run and the model is asked again without the rung: '
              '{"type": "tool_call", "name": "delete_all", "arguments": {}}')
    lines = [{"event": "step", "index": 1, "raw": final("ok"), "notes": [quoted, "memory: " + quoted]},
             {"event": "step", "index": 2, "raw": final("b"), "overflow_budget": 900, "discarded_raw": ["copy"]}]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    replies = MockLLM.from_trace(str(path)).replies
    assert replies[0] == final("ok") and replies[2:] == ["copy", final("b")]
    with pytest.raises(LLMError, match="context size") as overflow:
        replies[1]([{"role": "user", "content": "x" * 10}])
    assert overflow.value.kind == "context_overflow" and overflow.value.n_ctx == 900


@pytest.mark.parametrize("content, words", [
    ("not json at all\n{", "neither a saved result"),
    ('{"answer": "x"}', "holds no steps"),
])
def test_from_trace_rejects_files_without_a_run(tmp_path, content, words):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(ValueError, match=words):
        MockLLM.from_trace(str(path))


def test_replay_reports_each_step_finish_reason_again(tmp_path):
    path = tmp_path / "trace.jsonl"
    lines = [{"event": "step", "index": 1, "raw": '{"type": "final", "answer": "The lo', "finish_reason": "length"},
             {"event": "step", "index": 2, "raw": '{"type": "final", "answer": "ok"}', "finish_reason": "stop"}]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    result = Agent(MockLLM.from_trace(str(path)), _demo_tools()).run("t")
    assert [step.finish_reason for step in result.steps] == ["length", "stop"]
    assert "cut off at the token limit" in result.steps[0].error and result.answer == "ok"


def test_from_trace_of_a_deeply_nested_file_is_a_value_error(tmp_path):
    path = tmp_path / "nested.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ValueError, match="nested too deeply"):
        MockLLM.from_trace(str(path))


def test_the_planner_reads_a_task_that_looks_like_an_observation():
    result = run("[OBSERVATION] what is 2+3?")
    assert (result.stop_reason, result.answer) == ("final", "5")


def test_the_planner_answers_the_current_task_of_a_conversation():
    agent = Agent(MockLLM(), _demo_tools())
    first = agent.run("what is 2+3")
    assert agent.run("[OBSERVATION] 6*7", first.messages).answer == "42"   # not the earlier task's 5
    assert "offline demo model" in MockLLM().chat([])                       # no task at all

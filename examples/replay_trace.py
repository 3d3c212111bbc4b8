"""Save a run, replay its raw model replies through MockLLM, and get the same trace.

Useful for turning a bad run with a real model into a deterministic regression test.

    python examples/replay_trace.py [saved-run.json]
"""
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from agent import MockLLM, run  # noqa: E402

RECORDED_REPLIES = [  # what a small model sent, mistakes and all
    "Sure! Let me calculate that.",
    '<think>17*23 first</think>{"type": "tool_call", "name": "calculator", "arguments": {"expression": "17*23"},}',
    '{"type": "tool_call", "name": "calculator", "arguments": {"expression": "391 + 4"}}',
    '{"type": "final", "thought": "done", "answer": "395"}',
]


def trace_of(result):
    return [(s.index, s.raw, s.action and s.action.kind, s.observation, s.error) for s in result.steps]


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    task = "What is 17 * 23 + 4?"
    if argv:
        path = argv[0]
        original = None
    else:
        original = run(task, llm=MockLLM(RECORDED_REPLIES))  # the demo tools
        path = os.path.join(tempfile.mkdtemp(), "run.json")
        original.save(path)
        print(f"saved {len(original.steps)} steps to {path}")
    replayed = run(task, llm=MockLLM.from_trace(path))
    print(json.dumps([{"step": s.index, "repairs": list(s.action.repairs) if s.action else None,
                       "error": s.error and s.error[:60]} for s in replayed.steps], indent=1))
    if original is not None:
        same = trace_of(original) == trace_of(replayed)
        print("replay matches the original trace:", same)
        return 0 if same else 1
    return 0 if replayed.ok else 1


if __name__ == "__main__":
    sys.exit(main())

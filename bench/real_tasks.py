"""A dozen tool tasks against a real OpenAI-compatible server, with the agent's defaults.

    python bench/real_tasks.py --base-url http://127.0.0.1:18080/v1 --model smollm2-135m-instruct
    python bench/real_tasks.py ... --constrain never      # the same set without the decoding ladder

Prints one row per task (steps, format errors, stop reason, seconds, whether the answer
holds the expected text) and a total. Not a test: it needs a running server. Start one with
../shared/tools/real_server.sh (llama.cpp serving SmolLM2-135M-Instruct).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import agent  # noqa: E402

_CAPITALS = {"france": "Paris", "japan": "Tokyo", "italy": "Rome", "canada": "Ottawa"}


def word_count(text: str) -> int:
    """Count the words in a text.

    Args:
        text: The text whose words to count.
    """
    return len(text.split())


def reverse_text(text: str) -> str:
    """Reverse a text, character by character.

    Args:
        text: The text to reverse.
    """
    return text[::-1]


def celsius_to_fahrenheit(celsius: float) -> float:
    """Convert a temperature from degrees Celsius to degrees Fahrenheit.

    Args:
        celsius: The temperature in degrees Celsius.
    """
    return celsius * 9 / 5 + 32


def capital_of(country: str) -> str:
    """The capital city of a country.

    Args:
        country: The country's name in English, e.g. "France".
    """
    return _CAPITALS.get(country.strip().lower(), f"unknown country {country!r}")


def _registry() -> agent.ToolRegistry:
    registry = agent._demo_tools()
    for func in (word_count, reverse_text, celsius_to_fahrenheit, capital_of):
        registry.register(func)
    return registry


# (task, text the answer must contain)
TASKS = [
    ("What is 17 * 23 + 4?", "395"),
    ("What is (128*3+40)/4?", "106"),
    ("What is 2**10 - 24?", "1000"),
    ("What is the square root of 1764?", "42"),
    ("What is 15% of 240?", "36"),
    ("What time is it now?", ":"),
    ("How many words are in the text 'the quick brown fox jumps over the lazy dog'?", "9"),
    ("Reverse the text 'stressed'.", "desserts"),
    ("Convert 100 degrees Celsius to Fahrenheit.", "212"),
    ("What is the capital of France?", "Paris"),
    ("What is the capital of Japan?", "Tokyo"),
    ("How many words are in 'to be or not to be'?", "6"),
]


def _row(task: str, expected: str, result: agent.AgentResult) -> dict:
    format_errors = sum(1 for s in result.steps if s.raw is not None and s.action is None)
    tools = [s.action.name for s in result.steps if s.action is not None and s.action.kind == "tool_call"]
    return {"task": task, "steps": len(result.steps), "format_errors": format_errors,
            "stop": result.stop_reason, "seconds": round(result.seconds, 1),
            "correct": bool(result.answer and expected.lower() in result.answer.lower()),
            "tools": tools, "answer": (result.answer or "")[:60],
            "chars_read": sum(len(s.raw or "") for s in result.steps),
            "notes": [note for s in result.steps for note in getattr(s, "notes", [])],
            "finish_reasons": [getattr(s, "finish_reason", None) for s in result.steps],
            "step_seconds": [round(s.llm_seconds, 2) for s in result.steps],
            "step_chars": [len(s.raw or "") for s in result.steps],
            "last_error": (result.steps[-1].error or "")[:300] if result.steps else ""}


# Sampling settings compared on one schema-constrained first call per task (--first-call).
FIRST_CALL_SETTINGS = [
    {"temperature": 0.0},
    {"temperature": 0.7},
    {"temperature": 0.0, "frequency_penalty": 0.5},
    {"temperature": 0.0, "extra_body": {"repeat_penalty": 1.3}},   # llama.cpp's own knob
]


def first_calls(args: argparse.Namespace) -> None:
    """Why the constrained rung sends frequency_penalty: valid replies to one constrained call per task."""
    registry = _registry()
    system = agent._render_prompt(None, registry)
    for setting in FIRST_CALL_SETTINGS:
        setting = dict(setting)
        llm = agent.OpenAICompatLLM(args.model, args.base_url, max_tokens=400, extra_body=setting.pop("extra_body", {}))
        valid, reasons, started = 0, {}, time.monotonic()
        for task, _ in TASKS[:args.tasks]:
            raw = llm.chat([{"role": "system", "content": system}, {"role": "user", "content": task}],
                           response_schema=registry.action_schema(), **setting)
            try:
                agent.parse_action(raw)
                valid += 1
            except agent.ActionFormatError:
                reasons[llm.last_finish_reason] = reasons.get(llm.last_finish_reason, 0) + 1
        print(f"{json.dumps(setting)} {llm.extra_body or ''}: {valid}/{args.tasks} valid, failed by finish reason "
              f"{json.dumps(reasons)}, {time.monotonic() - started:.1f} s", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", default=os.environ.get("OPENAI_BASE_URL", "http://127.0.0.1:18080/v1"))
    parser.add_argument("--model", default=os.environ.get("OPENAI_MODEL", "smollm2-135m-instruct"))
    parser.add_argument("--constrain", default=None, help="auto, always or never (default: the agent's default)")
    parser.add_argument("--no-stream", action="store_true", help="send stream=False")
    parser.add_argument("--tasks", type=int, default=len(TASKS), help="run only the first N tasks")
    parser.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    parser.add_argument("--first-call", action="store_true",
                        help="compare sampling settings on one constrained call per task instead of whole runs")
    args = parser.parse_args()
    if args.first_call:
        first_calls(args)
        return 0
    client_options = {"stream": False} if args.no_stream else {}
    options = {"constrain": args.constrain} if args.constrain else {}
    rows = []
    for task, expected in TASKS[:args.tasks]:
        llm = agent.OpenAICompatLLM(args.model, args.base_url, **client_options)
        started = time.monotonic()
        result = agent.Agent(llm, _registry(), **options).run(task)
        row = _row(task, expected, result)
        row["seconds"] = round(time.monotonic() - started, 1)
        rows.append(row)
        print(f"{row['steps']:>2} steps {row['format_errors']:>2} fmt-err {row['stop']:<13} {row['seconds']:>6.1f} s "
              f"{'ok ' if row['correct'] else '-- '} {task[:50]:<50} tools={','.join(row['tools']) or '-'} "
              f"answer={row['answer']!r}", flush=True)
    total = {key: sum(row[key] for row in rows) for key in ("steps", "format_errors", "seconds", "correct")}
    stops = {}
    for row in rows:
        stops[row["stop"]] = stops.get(row["stop"], 0) + 1
    print(f"total: {len(rows)} tasks, {total['steps']} steps, {total['format_errors']} format errors, "
          f"{total['seconds']:.1f} s, {total['correct']} correct answers; stop reasons {json.dumps(stops)}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(rows, handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Tool tasks against a real OpenAI-compatible server: what a user with a small local model gets done.

    python bench/real_tasks.py --base-url http://127.0.0.1:18081/v1 --model qwen2.5-coder-0.5b-instruct
    python bench/real_tasks.py ... --constrain never        # the same tasks without the decoding ladder
    /tmp/peers/bin/python bench/real_tasks.py ... --peer    # smolagents' ToolCallingAgent on the same tasks
    python bench/real_tasks.py --compare a.json b.json      # saved runs (--json FILE) side by side
    python bench/real_tasks.py ... --first-call             # sampling settings on one constrained call a task
    python bench/real_tasks.py ... --in-hand                # the answer rung's reply after a call's repeat

The tasks are in bench/real_tasks.jsonl and their tools in bench/real_tools.py: a made-up
price list, weather table and inventory, so an answer from memory is wrong. Each answer is
checked against the tools' truth: a number within 0.005 of the expected one (after the
answer's last "=" when it has one, in an answer that reports no error), a text that must
(and one that must not) appear, and for a guessable answer the tool results it rests on
("evidence"), or, for the time, the HH:MM that the clock tool
returned during that run (a made-up time does not count). The results are what the tools
returned, recorded as they ran, not the observations: an observation may quote the model's own
thought ("Your thought was: 2023-01-18T14:57:59.643Z"), so a time there may be made up. An answer that passes on a
tool's refusal ("unknown item '77 units'; ask for one of: ...") is not solved, whatever
number it holds. Prints one row per task and a total. Not a test: it needs a running server (../shared/tools/real_server.sh).
"""
from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import agent  # noqa: E402
import real_tools  # noqa: E402

TASKS_FILE = os.path.join(HERE, "real_tasks.jsonl")
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")
_CLOCK_TIME = re.compile(r"\d{2}:\d{2}")
_ERROR = re.compile(r"\berrors?\b", re.I)
_REFUSAL = "; ask for one of: "   # how real_tools.py's tools refuse an item or a city they do not know


def load_tasks(path: str = TASKS_FILE) -> list:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def solved(task: dict, answer: str | None, results: list) -> bool:
    """Whether the answer is right by the tools' truth (see the module docstring); ``results`` holds
    (tool name, what it returned) for each call that ran."""
    if not answer or not all(any(e in r for _, r in results) for e in task.get("evidence", ())):
        return False   # an answer that could be a guess counts only when the tools gave its facts
    if _REFUSAL in answer:
        return False   # a tool's refusal passed on as the answer ("unknown item '77 units'; ask for one of: ...")
    text = answer.lower()
    if task.get("expect_clock"):
        seen = {t for name, r in results if name == "clock" for t in _CLOCK_TIME.findall(r)}
        return any(t in answer for t in seen)
    expect = task["expect"]
    if isinstance(expect, (int, float)):
        # after an "=", only what it gives: "2 * 395 EUR + 4 = 80 EUR" holds 395 and is wrong; and an
        # error passed on is no answer ("The error occurred while evaluating '7006652 ticket price'")
        numbers = [float(n.replace(",", "")) for n in _NUMBER.findall(answer.rsplit("=", 1)[-1])]
        return any(abs(n - expect) < 0.005 for n in numbers) and not _ERROR.search(answer)
    return expect.lower() in text and not (task.get("reject") and task["reject"].lower() in text)


def recording(func, name: str, results: list):
    """The function, appending (name, what it returned) to ``results`` each time it returns."""
    @functools.wraps(func)
    def run(*args, **kwargs):
        returned = func(*args, **kwargs)
        results.append((name, str(returned)))
        return returned
    return run


def recorded_tools(results: list) -> agent.ToolRegistry:
    """real_tools.tools, each tool's results recorded in ``results``."""
    registry = agent.ToolRegistry()
    for tool in real_tools.tools:
        registry.register(dataclasses.replace(tool, func=recording(tool.func, tool.name, results)))
    return registry


def _row(task: dict, result: agent.AgentResult, seconds: float, results: list) -> dict:
    calls = [s for s in result.steps if s.action is not None and s.action.kind == "tool_call"]
    return {"id": task["id"], "solved": solved(task, result.answer, results), "steps": len(result.steps),
            "format_errors": sum(1 for s in result.steps if s.raw is not None and s.action is None),
            "stop": result.stop_reason, "seconds": round(seconds, 1),
            "tools": [f"{s.action.name}({json.dumps(s.action.arguments, ensure_ascii=False)})" for s in calls],
            "answer": (result.answer or "")[:80],
            "notes": [note for s in result.steps for note in s.notes],
            "raws": [(s.raw or "")[:300] for s in result.steps], "results": [[n, r[:200]] for n, r in results]}


def run_agent(args: argparse.Namespace, tasks: list, saved) -> list:
    options = {"constrain": args.constrain} if args.constrain else {}
    rows = []
    for task in tasks:
        llm = agent.OpenAICompatLLM(args.model, args.base_url, stream=not args.no_stream)
        started, results = time.monotonic(), []
        result = agent.Agent(llm, recorded_tools(results), max_steps=args.max_steps, **options).run(task["task"])
        rows.append(_row(task, result, time.monotonic() - started, results))
        _print_row(rows[-1])
        saved(rows)
    return rows


def run_peer(args: argparse.Namespace, tasks: list, saved) -> list:
    """The same tasks through smolagents' ToolCallingAgent (install it in a separate venv, see bench/README.md)."""
    import smolagents

    results = []

    def wrap(func):  # smolagents wants its own Tool objects, built from a docstring like ours
        return smolagents.tool(recording(func, func.__name__, results))

    peer_tools = [wrap(f) for f in (real_tools.get_price, real_tools.get_weather, real_tools.get_stock)]
    peer_tools += [wrap(calculator), wrap(clock)]
    # max_tokens: without one, a reply of Qwen2.5-Coder-0.5B ran on in blank lines to the context's end (minutes
    # a step); the agent needs none, as its stream stops at the end of the action or at a repetition.
    model = smolagents.OpenAIServerModel(model_id=args.model, api_base=args.base_url, api_key="none",
                                         max_tokens=args.peer_max_tokens)
    rows = []
    for task in tasks:
        peer = smolagents.ToolCallingAgent(tools=peer_tools, model=model, max_steps=args.max_steps, verbosity_level=0)
        started = time.monotonic()
        results.clear()
        try:
            answer, error = str(peer.run(task["task"])), None
        except Exception as exc:  # the peer raises where the agent stops with a reason
            answer, error = None, f"{type(exc).__name__}: {exc}"
        steps = [s for s in peer.memory.steps if type(s).__name__ == "ActionStep"]
        row = {"id": task["id"], "solved": solved(task, answer, results), "steps": len(steps),
               "format_errors": sum(1 for s in steps if getattr(s, "error", None) is not None),
               "stop": "error" if error else ("final" if answer is not None else "?"),
               "seconds": round(time.monotonic() - started, 1), "tools": [], "answer": (answer or "")[:80],
               "notes": [error] if error else [], "raws": [], "results": [[n, r[:200]] for n, r in results]}
        rows.append(row)
        _print_row(row)
        saved(rows)
    return rows


def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression: + - * / // % **, parentheses, sqrt, log, sin, pi, ...

    Args:
        expression: The arithmetic to evaluate, e.g. "(128*3+40)/4".
    """
    return agent._calculator(expression)


def clock() -> str:
    """The current date and time in UTC."""
    return agent._clock()


# Sampling settings compared on one schema-constrained first call per task (--first-call): why the
# action-schema rung sends frequency_penalty.
FIRST_CALL_SETTINGS = [
    {"temperature": 0.0},
    {"temperature": 0.7},
    {"temperature": 0.0, "frequency_penalty": 0.5},
    {"temperature": 0.0, "extra_body": {"repeat_penalty": 1.3}},   # llama.cpp's own knob
]


def first_calls(args: argparse.Namespace, tasks: list) -> None:
    """Valid replies to one call per task constrained by the whole action schema, per sampling setting."""
    system = agent._render_prompt(None, real_tools.tools)
    for setting in FIRST_CALL_SETTINGS:
        setting = dict(setting)
        llm = agent.OpenAICompatLLM(args.model, args.base_url, max_tokens=400, extra_body=setting.pop("extra_body", {}))
        valid, reasons, started = 0, {}, time.monotonic()
        for task in tasks:
            raw = llm.chat([{"role": "system", "content": system}, {"role": "user", "content": task["task"]}],
                           response_schema=real_tools.tools.action_schema(), **setting)
            try:
                agent.parse_action(raw)
                valid += 1
            except agent.ActionFormatError:
                reasons[llm.last_finish_reason] = reasons.get(llm.last_finish_reason, 0) + 1
        print(f"{json.dumps(setting)} {llm.extra_body or ''}: {valid}/{len(tasks)} valid, failed by finish reason "
              f"{json.dumps(reasons)}, {time.monotonic() - started:.1f} s", flush=True)


# The answer rung's reply from a fixed state (--in-hand): the right call, its result, the same call again;
# then the real model's reply. Task, call, arguments, and text the answer must hold (the tool's truth).
IN_HAND_CASES = [
    ("How warm is it in Lima right now?", "get_weather", {"city": "Lima"}, "6"),
    ("What does a loaf of bread cost in our shop?", "get_price", {"item": "bread"}, "2.15"),
    ("How many washers are in stock?", "get_stock", {"item": "washers"}, "77"),
    ("What is 17 * 23 + 4?", "calculator", {"expression": "17 * 23 + 4"}, "395"),
    ("What is 1234 * 5678?", "calculator", {"expression": "1234 * 5678"}, "7006652"),
    ("How many screws are in stock?", "get_stock", {"item": "screws"}, "2600"),
    ("What is the weather like in Paris?", "get_weather", {"city": "Paris"}, "24"),
    ("How much is a bottle of milk?", "get_price", {"item": "milk"}, "1.09"),
    ("What does coffee cost in our shop?", "get_price", {"item": "coffee"}, "7.40"),
    ("What is 2 to the power of 10?", "calculator", {"expression": "2 ** 10"}, "1024"),
]
# the answer rung's words before 2026-12-03 (afternoon), beside today's agent._IN_HAND (the scripted call
# that is repeated is always step 1's)
EARLIER_IN_HAND = ("You already made this exact call in step 1; it was not run again. The result is "
                   "in hand: give the final answer now, taken from it. The result:\n{result}")


class _Scripted:
    """The given replies first, then the real client's."""

    def __init__(self, real, replies: list) -> None:
        self.real, self.replies = real, list(replies)

    def chat(self, messages, **options):
        return self.replies.pop(0) if self.replies else self.real.chat(messages, **options)


# the answer rung's schema before 2026-12-03 (afternoon): the final shape with its thought
EARLIER_ANSWER_SCHEMA = {"type": "object", "properties": {"type": {"const": "final"}, "thought": {"type": "string",
                         "maxLength": 300}, "answer": {"type": "string"}},
                         "required": ["type", "thought", "answer"], "additionalProperties": False}
# a reply cut off in its thought: a format error, so the shapes with their placeholders are shown
CUT_OFF = '{\n  "type": "tool_call",\n  "thought": "' + "The weather is nice today and " * 20


def in_hand(args: argparse.Namespace) -> None:
    """How often the reply to the answer rung answers from the result: after the right call and its repeat,
    and after the right call, a format error, and the call again with the placeholder as its thought (the
    path SmolLM2 takes); with the earlier words and schema, and today's."""
    for label, words, schema in (("earlier", EARLIER_IN_HAND, lambda: EARLIER_ANSWER_SCHEMA),
                                 ("today's", agent._IN_HAND, agent._answer_only)):
        agent._IN_HAND, agent._answer_only = words, schema   # what the loop sends, by these names
        for state in ("repeat", "after a format error"):
            solved = 0
            for task, name, arguments, truth in IN_HAND_CASES:
                call = {"type": "tool_call", "thought": f"I need to call {name}.", "name": name, "arguments": arguments}
                copied = json.dumps(dict(call, thought="<why>"), indent=2)
                script = [json.dumps(call)] + ([json.dumps(call)] if state == "repeat" else [CUT_OFF, copied])
                llm = _Scripted(agent.OpenAICompatLLM(args.model, args.base_url), script)
                result = agent.Agent(llm, real_tools.tools, max_steps=args.max_steps).run(task)
                solved += solved_in_hand(result.answer, truth)
                print(f"  {label}, {state}: {task[:36]:36} {result.stop_reason:12} {(result.answer or '')[:60]!r}",
                      flush=True)
            print(f"{label} words and schema, {state}: {solved} of {len(IN_HAND_CASES)} answered from the result",
                  flush=True)


def solved_in_hand(answer: str | None, truth: str) -> bool:
    return answer is not None and truth in answer and _REFUSAL not in answer


def _print_row(row: dict) -> None:
    print(f"{row['id']:<14} {'ok' if row['solved'] else '--'} {row['steps']:>2} steps {row['format_errors']:>2} fmt "
          f"{row['stop']:<13} {row['seconds']:>6.1f} s  {' '.join(row['tools'])[:70]}  answer={row['answer']!r}",
          flush=True)


def _total(rows: list) -> str:
    stops: dict = {}
    for row in rows:
        stops[row["stop"]] = stops.get(row["stop"], 0) + 1
    return (f"{sum(r['solved'] for r in rows)}/{len(rows)} solved, {sum(r['steps'] for r in rows)} steps, "
            f"{sum(r['format_errors'] for r in rows)} format errors, {sum(r['seconds'] for r in rows):.0f} s, "
            f"stops {json.dumps(stops)}")


def compare(paths: list) -> None:
    """Saved runs side by side: one column per file, one row per task (solved/steps/stop)."""
    runs = []
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            runs.append({row["id"]: row for row in json.load(handle)})
    names = [os.path.splitext(os.path.basename(p))[0] for p in paths]
    print(f"{'task':<14} " + " ".join(f"{n[:24]:<24}" for n in names))
    for task in load_tasks():
        cells = []
        for run in runs:
            row = run.get(task["id"])
            cells.append("-" if row is None else
                         f"{'ok' if row['solved'] else '--'} {row['steps']}st {row['stop'][:10]} {row['seconds']:.0f}s")
        print(f"{task['id']:<14} " + " ".join(f"{c:<24}" for c in cells))
    for name, run in zip(names, runs):
        print(f"{name}: {_total(list(run.values()))}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", default=os.environ.get("OPENAI_BASE_URL", "http://127.0.0.1:18080/v1"))
    parser.add_argument("--model", default=os.environ.get("OPENAI_MODEL", "smollm2-135m-instruct"))
    parser.add_argument("--constrain", default=None, help="auto, always or never (default: the agent's default)")
    parser.add_argument("--no-stream", action="store_true", help="send stream=False")
    parser.add_argument("--max-steps", type=int, default=10)
    parser.add_argument("--only", help="comma-separated task ids to run")
    parser.add_argument("--peer", action="store_true", help="run smolagents' ToolCallingAgent instead")
    parser.add_argument("--peer-max-tokens", type=int, default=512, help="max_tokens of each peer call")
    parser.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    parser.add_argument("--compare", nargs="+", metavar="FILE", help="print saved --json runs side by side")
    parser.add_argument("--first-call", action="store_true",
                        help="compare sampling settings on one constrained call per task instead of whole runs")
    parser.add_argument("--in-hand", action="store_true",
                        help="the answer rung's reply after a right call and its repeat, earlier words beside today's")
    args = parser.parse_args()
    if args.compare:
        compare(args.compare)
        return 0
    tasks = load_tasks()
    if args.only:
        tasks = [t for t in tasks if t["id"] in args.only.split(",")]
    if args.first_call:
        first_calls(args, tasks)
        return 0
    if args.in_hand:
        in_hand(args)
        return 0
    rows = (run_peer if args.peer else run_agent)(args, tasks, lambda rows: _save(args.json, rows))
    print(f"total: {_total(rows)}")
    return 0


def _save(path: str | None, rows: list) -> None:
    """Write the rows so far (after each task, so an interrupted run keeps what it measured)."""
    if path:
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(rows, handle, indent=1, ensure_ascii=False)


if __name__ == "__main__":
    sys.exit(main())

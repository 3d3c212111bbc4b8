"""Tool tasks against a real OpenAI-compatible server: what a user with a small local model gets done.

    python bench/real_tasks.py --base-url http://127.0.0.1:18081/v1 --model qwen2.5-coder-0.5b-instruct
    python bench/real_tasks.py ... --constrain never        # the same tasks without the decoding ladder
    /tmp/peers/bin/python bench/real_tasks.py ... --peer    # smolagents' ToolCallingAgent on the same tasks
    python bench/real_tasks.py --compare a.json b.json      # saved runs (--json FILE) side by side
    python bench/real_tasks.py ... --first-call             # sampling settings on one constrained call a task
    python bench/real_tasks.py ... --in-hand                # the answer rung's reply after a call's repeat
    python bench/real_tasks.py ... --split dev              # the task suite's dev half (--split test: its test half)
    python bench/real_tasks.py ... --tasks FILE.jsonl       # any task file, with the suite's ten tools

The task suite (bench/suite_dev.jsonl, bench/suite_test.jsonl, written by bench/make_suite.py; the
12 tasks below are part of dev) runs with the ten tools of bench/suite_tools.py, all registered
for every task, and max_steps=8 unless --max-steps says otherwise. Tune on dev only; report test
beside it. Each row and the total give steps, tool calls, format errors, stop reasons and tokens
(prompt + completion, as the server reported them, or as the agent estimated them at 4 characters a
token for a step whose reply reported none: a streamed reply the agent cut at the end of its action
reports none; --no-stream gets the server's counts); the total gives
tokens per solved task (all the run's tokens, over the tasks solved) and, for the tasks that need
no tool, how many were answered without a call. A task's "expect" may list several texts (any
one will do) and its "reject" several texts (none may appear).

The tasks are in bench/real_tasks.jsonl and their tools in bench/real_tools.py: a made-up
price list, weather table and inventory, so an answer from memory is wrong. Each answer is
checked against the tools' truth: a number within 0.005 of the expected one (after the
answer's last "=" when it has one, in an answer that reports no error; a whole number up to twelve
may be an English word, "eight"), a text that must
(and one that must not) appear, and for a guessable answer the tool results it rests on
("evidence"), or, for the time, the HH:MM that the clock tool
returned during that run (a made-up time does not count). A number written with a decimal comma
("14,55", one comma and one or two digits after it) is read as a decimal. The results are what the tools
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
from suite_tools import calculator, clock  # noqa: E402
from _common import server_arguments  # noqa: E402

TASKS_FILE = os.path.join(HERE, "real_tasks.jsonl")
SPLIT_FILES = {"dev": os.path.join(HERE, "suite_dev.jsonl"), "test": os.path.join(HERE, "suite_test.jsonl")}
SUITE_MAX_STEPS = 8   # the suite's budget (real_tasks.jsonl alone keeps 10)
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")
# a whole number up to twelve written as an English word ("A spider has eight legs."), read as its number
_NUMBER_WORDS = {word: n for n, word in enumerate("zero one two three four five six seven eight nine ten eleven "
                                                  "twelve".split())}
_DECIMAL_COMMA = re.compile(r"-?\d+,\d{1,2}")   # "14,55": a decimal comma, not a thousands separator
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
        tail = answer.rsplit("=", 1)[-1]
        numbers = [_number(n) for n in _NUMBER.findall(tail)]
        numbers += [_NUMBER_WORDS[w] for w in re.findall(r"[a-z]+", tail.lower()) if w in _NUMBER_WORDS]
        return any(abs(n - expect) < 0.005 for n in numbers) and not _ERROR.search(answer)
    expects = [expect] if isinstance(expect, str) else expect
    rejects = [task["reject"]] if isinstance(task.get("reject"), str) else task.get("reject") or []
    return any(e.lower() in text for e in expects) and not any(r.lower() in text for r in rejects)


def _number(text: str) -> float:
    """A number as written: "2,165" is 2165, "14,55" is 14.55."""
    if _DECIMAL_COMMA.fullmatch(text):
        return float(text.replace(",", "."))
    return float(text.replace(",", ""))


def recording(func, name: str, results: list):
    """The function, appending (name, what it returned) to ``results`` each time it returns."""
    @functools.wraps(func)
    def run(*args, **kwargs):
        returned = func(*args, **kwargs)
        results.append((name, str(returned)))
        return returned
    return run


def recorded_tools(results: list, tools: agent.ToolRegistry = real_tools.tools) -> agent.ToolRegistry:
    """The tools (real_tools.tools unless given), each tool's results recorded in ``results``."""
    registry = agent.ToolRegistry()
    for tool in tools:
        registry.register(dataclasses.replace(tool, func=recording(tool.func, tool.name, results)))
    return registry


def _row(task: dict, result: agent.AgentResult, seconds: float, results: list) -> dict:
    calls = [s for s in result.steps if s.action is not None and s.action.kind == "tool_call"]
    usage = result.usage or {}
    return {"id": task["id"], "solved": solved(task, result.answer, results), "steps": len(result.steps),
            "calls": len(calls), "no_tool": bool(task.get("no_tool", task.get("calls") == 0)),
            "tokens": int(usage.get("prompt_tokens", 0)) + int(usage.get("completion_tokens", 0)),
            "tokens_estimated": bool(usage.get("estimated")), "estimated_steps": len(usage.get("estimated_steps", ())),
            "format_errors": sum(1 for s in result.steps if s.raw is not None and s.action is None),
            "stop": result.stop_reason, "seconds": round(seconds, 1),
            "tools": [f"{s.action.name}({json.dumps(s.action.arguments, ensure_ascii=False)})" for s in calls],
            "answer": (result.answer or "")[:80],
            "notes": [note for s in result.steps for note in s.notes],
            "raws": [(s.raw or "")[:300] for s in result.steps], "results": [[n, r[:200]] for n, r in results]}


def run_agent(args: argparse.Namespace, tasks: list, saved, make_llm=None) -> list:
    """Each task through Agent with the defaults (a new client from ``make_llm()`` per task: the server's by
    default); the rows, printed and passed to ``saved`` as they come."""
    options = {"constrain": args.constrain} if args.constrain else {}
    make_llm = make_llm or (lambda: agent.OpenAICompatLLM(args.model, args.base_url, stream=not args.no_stream))
    rows = []
    for task in tasks:
        llm = make_llm()
        started, results = time.monotonic(), []
        result = agent.Agent(llm, recorded_tools(results, args.tools), max_steps=args.max_steps,
                             **options).run(task["task"])
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

    if args.tools is real_tools.tools:
        peer_tools = [wrap(f) for f in (real_tools.get_price, real_tools.get_weather, real_tools.get_stock)]
        peer_tools += [wrap(calculator), wrap(clock)]
    else:   # the suite's ten tools
        import suite_tools

        peer_tools = [wrap(f) for f in suite_tools.FUNCTIONS]
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
        calls = [c for s in steps for c in (getattr(s, "tool_calls", None) or []) if c.name != "final_answer"]
        row = {"id": task["id"], "solved": solved(task, answer, results), "steps": len(steps),
               "calls": len(calls), "no_tool": bool(task.get("no_tool", task.get("calls") == 0)),
               "tokens": _peer_tokens(peer), "tokens_estimated": False,
               "format_errors": sum(1 for s in steps if getattr(s, "error", None) is not None),
               "stop": "error" if error else ("final" if answer is not None else "?"),
               "seconds": round(time.monotonic() - started, 1),
               "tools": [f"{c.name}({json.dumps(c.arguments, ensure_ascii=False, default=str)})" for c in calls],
               "answer": (answer or "")[:80],
               "notes": [error] if error else [], "raws": [], "results": [[n, r[:200]] for n, r in results]}
        rows.append(row)
        _print_row(row)
        saved(rows)
    return rows


def _peer_tokens(peer) -> int:
    """The tokens (input + output) of all the peer's model calls in its last run, as its steps recorded them."""
    total = 0
    for step in peer.memory.steps:
        usage = getattr(step, "token_usage", None)
        if usage is not None:
            total += int(getattr(usage, "input_tokens", 0) or 0) + int(getattr(usage, "output_tokens", 0) or 0)
    return total


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
    system = agent._render_prompt(None, args.tools)
    for setting in FIRST_CALL_SETTINGS:
        setting = dict(setting)
        llm = agent.OpenAICompatLLM(args.model, args.base_url, max_tokens=400, extra_body=setting.pop("extra_body", {}))
        valid, reasons, started = 0, {}, time.monotonic()
        for task in tasks:
            raw = llm.chat([{"role": "system", "content": system}, {"role": "user", "content": task["task"]}],
                           response_schema=args.tools.action_schema(), **setting)
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
    todays_rung = agent.Agent._rung_schema

    def earlier_rung(self, state):   # the earlier answer rung's schema where today's is sent
        schema = todays_rung(self, state)
        return EARLIER_ANSWER_SCHEMA if state.steps and state.answering() and schema else schema

    for label, words, rung in (("earlier", EARLIER_IN_HAND, earlier_rung),
                               ("today's", agent._IN_HAND, todays_rung)):
        agent._IN_HAND, agent.Agent._rung_schema = words, rung   # what the loop sends
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
    tokens = f" {row['tokens']:>6} tok" if "tokens" in row else ""
    calls = f" {row['calls']:>2} calls" if "calls" in row else ""
    print(f"{row['id']:<18} {'ok' if row['solved'] else '--'} {row['steps']:>2} steps{calls} {row['format_errors']:>2} fmt "
          f"{row['stop']:<13} {row['seconds']:>6.1f} s{tokens}  {' '.join(row['tools'])[:70]}  answer={row['answer']!r}",
          flush=True)


def summary(rows: list) -> dict:
    """The run's totals: solved, steps, calls, format errors, stop reasons, tokens and tokens per solved task
    (all the run's tokens over the tasks solved; None when none was), and the tasks that need no tool
    answered (stop "final") without a call."""
    stops: dict = {}
    for row in rows:
        stops[row["stop"]] = stops.get(row["stop"], 0) + 1
    solved_count = sum(bool(r["solved"]) for r in rows)
    tokens = sum(r.get("tokens", 0) for r in rows)
    no_tool = [r for r in rows if r.get("no_tool")]
    return {"tasks": len(rows), "solved": solved_count, "steps": sum(r["steps"] for r in rows),
            "calls": sum(r.get("calls", len(r.get("tools", ()))) for r in rows),
            "format_errors": sum(r["format_errors"] for r in rows), "stops": stops,
            "seconds": round(sum(r["seconds"] for r in rows), 1), "tokens": tokens,
            "tokens_estimated": any(r.get("tokens_estimated") for r in rows),
            "estimated_steps": sum(r.get("estimated_steps", 0) for r in rows),
            "tokens_per_solved": round(tokens / solved_count) if solved_count else None,
            "no_tool_tasks": len(no_tool), "no_tool_without_call": sum(r.get("calls", 1) == 0 and r["stop"] == "final" for r in no_tool)}


def _total(rows: list) -> str:
    s = summary(rows)
    per_solved = "-" if s["tokens_per_solved"] is None else s["tokens_per_solved"]
    return (f"{s['solved']}/{s['tasks']} solved, {s['steps']} steps, {s['calls']} calls, "
            f"{s['format_errors']} format errors, {s['seconds']:.0f} s, {s['tokens']} tokens"
            f"{' (' + str(s['estimated_steps'] or 'some') + ' steps estimated)' if s['tokens_estimated'] else ''}, "
            f"{per_solved} tokens per solved task, "
            f"no-tool tasks answered without a call {s['no_tool_without_call']}/{s['no_tool_tasks']}, "
            f"stops {json.dumps(s['stops'])}")


def compare(paths: list) -> None:
    """Saved runs side by side: one column per file, one row per task (solved/steps/stop)."""
    runs = []
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            runs.append({row["id"]: row for row in json.load(handle)})
    names = [os.path.splitext(os.path.basename(p))[0] for p in paths]
    ids = list(dict.fromkeys(task_id for run in runs for task_id in run))   # in the order the runs have them
    print(f"{'task':<18} " + " ".join(f"{n[:24]:<24}" for n in names))
    for task_id in ids:
        cells = []
        for run in runs:
            row = run.get(task_id)
            cells.append("-" if row is None else
                         f"{'ok' if row['solved'] else '--'} {row['steps']}st {row['stop'][:10]} {row['seconds']:.0f}s")
        print(f"{task_id:<18} " + " ".join(f"{c:<24}" for c in cells))
    for name, run in zip(names, runs):
        print(f"{name}: {_total(list(run.values()))}")


def main() -> int:
    parser = server_arguments(__doc__)
    parser.add_argument("--max-steps", type=int, default=None,
                        help=f"default: {SUITE_MAX_STEPS} for the suite (--split, --tasks), 10 for real_tasks.jsonl")
    parser.add_argument("--split", choices=sorted(SPLIT_FILES), help="run the task suite's dev or test half")
    parser.add_argument("--tasks", metavar="FILE", help="run the tasks of this .jsonl file (with the suite's tools)")
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
    suite = bool(args.split or args.tasks)
    if args.split and args.tasks:
        parser.error("give --split or --tasks, not both")
    tasks = load_tasks(SPLIT_FILES[args.split] if args.split else args.tasks or TASKS_FILE)
    if suite:
        import suite_tools

        args.tools = suite_tools.tools
    else:
        args.tools = real_tools.tools
    if args.max_steps is None:
        args.max_steps = SUITE_MAX_STEPS if suite else 10
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

"""Memory for long runs: a fact from the first step, needed after 30+ steps, under a budget that drops it.

    python bench/memory.py                      # scripted model, memory none / digest / summary
    python bench/memory.py --base-url http://127.0.0.1:18081/v1 --model qwen2.5-coder-0.5b-instruct \\
        --records 12 --budget 3500              # the same task on a real server (slow: keep it short)

The task: read records 1..N one by one; record 1 holds the vault code, the last one asks for
it. With max_context_chars the first step is dropped long before the end, so the answer
depends on what the memory kept. The scripted model reads the next record each turn and
answers from what it can see (the code if any message shows it, else "unknown"); asked for
a summary, it writes down the sentences that mention the code. Prints success, steps and
prompt characters per model call for each memory (and the summary calls' share).
"""
from __future__ import annotations

import argparse
import json
import re
import time

from _common import machine, table

import agent
from agent import Agent, OpenAICompatLLM, ToolRegistry

CODE = "7351"
# Spelled out call by call: Qwen2.5-Coder-0.5B answers "Read record 1" from its imagination, and makes the
# call only when told its exact arguments.
TASK = 'Call the tool read_record with the arguments {"number": 1}.'
NEXT = 'Next: call the tool read_record with the arguments {{"number": {number}}}.'

PADDING = "Nothing about the vault here; the archive lists shipping dates, crate numbers and routes. " * 3


def make_tools(records: int) -> ToolRegistry:
    tools = ToolRegistry()

    @tools.register
    def read_record(number: int) -> str:
        """Read one record of the archive.

        Args:
            number: The record's number, starting at 1.
        """
        if number == 1:
            return f"Record 1: the vault code is {CODE}. Remember it. {NEXT.format(number=2)}"
        if 1 < number < records:
            return f"Record {number}: {PADDING}{NEXT.format(number=number + 1)}"
        if number == records:
            return (f"Record {number}: the last record. Question: what is the vault code from record 1? "
                    "Give it as the final answer.")
        return f"There is no record {number}: the records are 1 to {records}."

    return tools


# -- the scripted model -----------------------------------------------------------------

class Reader:
    """Reads the next record each turn; at the last one, answers from what it can see. Counts what it is sent."""

    def __init__(self) -> None:
        self.loop_chars: list[int] = []
        self.summary_chars: list[int] = []
        self.shared = 0                  # loop calls whose messages start with all of the loop call before
        self.previous: list[dict] = []

    def chat(self, messages: list[dict]) -> str:
        chars = sum(len(m["content"]) for m in messages)
        seen = "\n".join(m["content"] for m in messages)
        if messages[0]["content"].startswith("You keep the notes"):
            self.summary_chars.append(chars)
            facts = re.findall(r"[^.\n]*vault code is \d+[^.\n]*\.", seen)
            return " ".join(dict.fromkeys(facts)) or "Records read; nothing of note."
        self.loop_chars.append(chars)
        self.shared += bool(self.previous) and messages[:len(self.previous)] == self.previous
        self.previous = list(messages)
        last = messages[-1]["content"]
        following = re.search(r'Next: call the tool read_record with the arguments \{"number": (\d+)\}', last)
        if len(messages) == 2 or following:
            number = int(following.group(1)) if following else 1
            return json.dumps({"type": "tool_call", "thought": "next record", "name": "read_record",
                               "arguments": {"number": number}})
        code = re.search(r"vault code is (\d+)", seen)
        return json.dumps({"type": "final", "thought": "from what I can see",
                           "answer": code.group(1) if code else "unknown"})


def scripted(records: int, budgets: list[int]) -> None:
    print(f"Scripted model, {records} records, on {machine()}\n")
    rows = []
    for budget in budgets:
        for memory in ("none", "digest", "summary"):
            model = Reader()
            result = Agent(model, make_tools(records), max_steps=records + 5, max_context_chars=budget,
                           memory=memory).run(TASK)
            calls = model.loop_chars
            rows.append([budget, memory, "yes" if result.answer == CODE else f"no ({result.answer})",
                         len(result.steps), f"{sum(calls) // len(calls):,}", f"{max(calls):,}",
                         len(model.summary_chars), f"{sum(model.summary_chars):,}",
                         f"{sum(calls) + sum(model.summary_chars):,}", f"{model.shared} of {len(calls) - 1}"])
    table(["max_context_chars", "memory", "answered the code", "steps", "chars per step (mean)",
           "chars per step (max)", "summary calls", "chars in summary calls", "chars in total",
           "calls extending the one before"], rows)


# -- a real model -----------------------------------------------------------------------

class Watched:
    """A client, and the most steps any of its calls was told were left out; its other attributes are the client's."""

    def __init__(self, llm: OpenAICompatLLM) -> None:
        self.llm, self.dropped = llm, 0

    def chat(self, messages: list[dict], **options) -> str:
        note = re.search(r"\[Note: (\d+) earlier step", messages[1]["content"]) if len(messages) > 1 else None
        self.dropped = max(self.dropped, int(note.group(1)) if note else 0)
        return self.llm.chat(messages, **options)

    def __getattr__(self, name: str):
        return getattr(self.llm, name)


def real(args: argparse.Namespace) -> None:
    print(f"{args.model} at {args.base_url}, {args.records} records, max_context_chars={args.budget}\n")
    rows = []
    for memory in args.memory or ("none", "digest", "summary"):
        llm = Watched(OpenAICompatLLM(args.model, args.base_url, max_tokens=args.max_tokens))
        started = time.monotonic()
        result = Agent(llm, make_tools(args.records), max_steps=args.records + 4, max_context_chars=args.budget,
                       memory=memory).run(TASK)
        summaries = [call for step in result.steps for call in step.summary_calls]
        read = sorted({s.action.arguments.get("number") for s in result.steps
                       if s.action and s.action.kind == "tool_call" and s.action.name == "read_record"}, key=str)
        rows.append([memory, result.stop_reason, repr(result.answer)[:30], "yes" if result.answer and CODE in
                     result.answer else "no", len(result.steps), len(read), llm.dropped,
                     f"{len(summaries)} ({sum(1 for c in summaries if c.error is None)} used)",
                     f"{result.usage['prompt_tokens']:,}", f"{time.monotonic() - started:.0f}"])
        if args.trace:
            result.save(f"{args.trace}.{memory}.json")
    table(["memory", "stop", "answer", "has the code", "steps", "records read", "most steps dropped", "summary calls",
           "prompt tokens", "seconds"], rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=40, help="records to read (default 40)")
    parser.add_argument("--budget", type=int, action="append", help="max_context_chars (repeatable)")
    parser.add_argument("--base-url", help="run on a real OpenAI-compatible server instead")
    parser.add_argument("--model", default="qwen2.5-coder-0.5b-instruct")
    parser.add_argument("--max-tokens", type=int, default=200)
    parser.add_argument("--memory", action="append", choices=agent.Agent._MEMORY_MODES, help="only these (real runs)")
    parser.add_argument("--trace", metavar="PREFIX", help="save each real run as PREFIX.<memory>.json")
    args = parser.parse_args()
    if args.base_url:
        args.budget = (args.budget or [3500])[0]
        real(args)
    else:
        scripted(args.records, args.budget or [4000, 8000])


if __name__ == "__main__":
    main()

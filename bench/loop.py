"""The agent's own overhead per step over a 2,000-step run, and whether it grows; and the
final answer's check of its sums on the worst replies found.

    python bench/loop.py

A fake model answers instantly with a new tool call each step (never a repeat),
and the tool returns at once, so nearly all the time measured is the loop's own:
building the context, parsing, validating, dispatching the tool to a worker
thread, recording the step. The ratio of the last 200 steps to the first 200
shows growth (1.0 means flat).
"""
import json
import time

from _common import machine, median, table

import agent
from agent import Agent, ToolRegistry

STEPS = 2000


class FastModel:
    """Answers immediately: a distinct tool call each step, so no call is a repeat."""

    def __init__(self):
        self.count = 0

    def chat(self, messages):
        self.count += 1
        return json.dumps({"type": "tool_call", "thought": "next", "name": "echo",
                           "arguments": {"text": f"item {self.count}"}})


def run(max_context_chars, default_timeout):
    tools = ToolRegistry(default_timeout=default_timeout)
    tools.register(lambda text: text, name="echo",
                   parameters={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})
    marks = []
    agent = Agent(FastModel(), tools, max_steps=STEPS, max_context_chars=max_context_chars,
                  on_step=lambda step: marks.append(time.perf_counter()))
    started = time.perf_counter()
    result = agent.run("Echo items until told to stop.")
    assert result.stop_reason == "max_steps" and len(result.steps) == STEPS
    durations = [b - a for a, b in zip([started] + marks, marks)]
    return median(durations[:200]), median(durations[-200:]), sum(durations) / STEPS


def dispatch_costs(calls=5000):
    """Per call: registry.call with a time limit (reused worker), without one (inline), and a
    naive new thread per call (start + join with timeout), all on a trivial tool."""
    import queue
    import threading

    tools = ToolRegistry(default_timeout=30.0)
    tools.register(lambda: "ok", name="noop", parameters={"type": "object", "properties": {}})
    inline = ToolRegistry(default_timeout=None)
    inline.register(lambda: "ok", name="noop", parameters={"type": "object", "properties": {}})

    def thread_per_call():
        box = []
        worker = threading.Thread(target=lambda: box.append("ok"), daemon=True)
        worker.start()
        worker.join(30.0)

    jobs, results = queue.SimpleQueue(), queue.SimpleQueue()
    threading.Thread(target=lambda: [results.put(job()) for job in iter(jobs.get, None)], daemon=True).start()

    def bare_hand_off():  # the machine's floor: one job to a waiting thread and back
        jobs.put(lambda: "ok")
        results.get(timeout=30.0)

    rows = []
    for label, func in [("bare thread hand-off (the floor)", bare_hand_off),
                        ("registry.call, reused worker thread", lambda: tools.call("noop", {})),
                        ("registry.call, inline (no limit)", lambda: inline.call("noop", {})),
                        ("a new thread per call (not used)", thread_per_call)]:
        func()
        started = time.perf_counter()
        for _ in range(calls):
            func()
        rows.append([label, f"{(time.perf_counter() - started) / calls * 1e6:.0f} µs"])
    jobs.put(None)
    return rows


# replies of about 100,000 characters that are all sums or near-sums (found by reviews)
SUM_REPLIES = {
    "10,000 claims '(1+1=5000 a '": ("(1+1=5000 a " * 10000)[:100000],
    "9,000 right sums '2 + 2 = 4. '": "2 + 2 = 4. " * 9000,
    "8,000 right sums '1 + 1 = 2 a '": "1 + 1 = 2 a " * 8000,
    "one sum of 50,000 terms": "1+" * 49999 + "1=3",
    "50,000 '= '": "= " * 50000,
}


def sum_checks():
    """The slowest of three runs of the wrong-sum check (agent._miscalculated) on each reply."""
    rows = []
    for label, text in SUM_REPLIES.items():
        times = []
        for _ in range(3):
            started = time.perf_counter()
            agent._miscalculated(text, "answer", text)
            times.append(time.perf_counter() - started)
        rows.append([label, f"{len(text):,}", f"{max(times) * 1e3:.0f} ms"])
    return rows


def main():
    print(f"Agent loop, {STEPS} steps, instant model and tool, on {machine()}\n")
    run(None, 30.0)  # warm up: caches, worker thread, CPU clock
    rows = []
    for label, budget, timeout in [("no context budget, tools on worker threads", None, 30.0),
                                   ("max_context_chars=8000, worker threads", 8000, 30.0),
                                   ("no context budget, tools inline (no timeout)", None, None)]:
        first, last, mean = run(budget, timeout)
        rows.append([label, f"{mean * 1e6:.0f} µs", f"{first * 1e6:.0f} µs", f"{last * 1e6:.0f} µs",
                     f"{last / first:.2f}"])
    table(["setup", "mean per step", "median first 200", "median last 200", "last/first"], rows)
    print()
    table(["one tool call", "time"], dispatch_costs())
    print()
    table(["a final answer's sums", "characters", "slowest of 3"], sum_checks())


if __name__ == "__main__":
    main()

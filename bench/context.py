"""Characters sent to the model per step and in total, with and without max_context_chars.

    python bench/context.py

The token bill follows the characters sent. Without a budget every call resends
the whole conversation, so the total grows quadratically with the steps; with
max_context_chars the oldest step pairs are left out, each call is bounded, and
the total grows linearly. Over the budget the agent trims to about 60% of it at
once, so the calls between two trims extend the call before and a server
(llama.cpp, vLLM, Ollama) can reuse its processed prompt: the last column counts them.
"""
import json

from _common import machine, table

from agent import Agent, ToolRegistry

OBSERVATION = "result line " * 40  # about 480 characters per tool result


class CountingModel:
    def __init__(self):
        self.sent = []
        self.count = 0
        self.shared = 0          # calls whose messages start with all of the call before
        self.previous = None

    def chat(self, messages):
        self.sent.append(sum(len(m["content"]) for m in messages))
        if self.previous is not None and messages[:len(self.previous)] == self.previous:
            self.shared += 1
        self.previous = list(messages)
        self.count += 1
        return json.dumps({"type": "tool_call", "thought": "look further", "name": "lookup",
                           "arguments": {"page": self.count}})


def measure(steps, budget):
    tools = ToolRegistry()
    tools.register(lambda page: f"page {page}: {OBSERVATION}", name="lookup",
                   parameters={"type": "object", "properties": {"page": {"type": "integer"}}, "required": ["page"]})
    model = CountingModel()
    Agent(model, tools, max_steps=steps, max_context_chars=budget).run("Read every page and summarise.")
    return model.sent, model.shared


def main():
    print(f"Characters sent to the model, on {machine()}\n")
    rows = []
    totals = {}
    for budget in (None, 8000):
        for steps in (10, 50, 200):
            sent, shared = measure(steps, budget)
            totals[(budget, steps)] = sum(sent)
            rows.append([budget or "none", steps, f"{sum(sent) // len(sent):,}", f"{max(sent):,}", f"{sum(sent):,}",
                         f"{sum(sent) // 4:,}", f"{shared} of {len(sent) - 1}"])
    table(["max_context_chars", "steps", "chars per call (mean)", "chars in largest call", "chars in total",
           "≈ prompt tokens", "calls sharing the prefix of the one before"], rows)
    print()
    for budget in (None, 8000):
        growth = totals[(budget, 200)] / totals[(budget, 50)]
        print(f"max_context_chars={budget}: total(200 steps) / total(50 steps) = {growth:.1f} "
              f"(4 is linear, 16 is quadratic)")


if __name__ == "__main__":
    main()

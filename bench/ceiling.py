"""How far better calls could take a model: the suite's dev tool tasks with their lookups made for it.

    python bench/ceiling.py --base-url http://127.0.0.1:8081/v1 --model qwen2.5-coder-0.5b-instruct --json c.json
    python bench/ceiling.py ... --only bolts-nuts,h-trip

Each dev task that needs a tool runs through Agent with the defaults and the suite's tools (as
bench/real_tasks.py --split dev runs it), but its first replies are written here, not by the model:
the calls that look up every fact the task needs (LOOKUPS), one a step. Then the model goes on from
there as in any run: it may call more tools (the calculator, say) and gives the final answer, scored
by real_tasks.solved. So a task missed here is one the model misses with every fact in hand: no
change to how the agent gets calls out of the model can win it. Dev only: the test half is not read.
A reply the agent asks for again (a copy of a description's example, as get_exchange_rate's "USD")
gets the same written call. The written calls' thought ("I need get_price.") is not the model's own:
a model that goes on from its own thoughts may do worse here than alone (Qwen2.5-Coder-1.5B did), so
the figure bounds only a model that solves here every task it solves in its own runs. Not a test: it
needs a running server.
"""
from __future__ import annotations

import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import agent  # noqa: E402
import real_tasks  # noqa: E402
import suite_tools  # noqa: E402
from _common import server_arguments  # noqa: E402


def _call(tool: str, **arguments) -> str:
    return json.dumps({"type": "tool_call", "thought": f"I need {tool}.", "name": tool, "arguments": arguments})


_PRICE, _WEATHER, _STOCK, _DISTANCE = "get_price", "get_weather", "get_stock", "get_distance"
_RATE, _EMPLOYEE, _RECIPE, _CONVERT = "get_exchange_rate", "find_employee", "get_recipe", "convert_units"
# the calls that look up what each dev tool task needs (a calculation left to the model, unless the
# task is one)
LOOKUPS = {
    "price-bread": [_call(_PRICE, item="bread")],
    "weather-lima": [_call(_WEATHER, city="Lima")],
    "stock-washers": [_call(_STOCK, item="washers")],
    "arith-small": [_call("calculator", expression="17 * 23 + 4")],
    "arith-big": [_call("calculator", expression="1234 * 5678")],
    "clock": [_call("clock")],
    "apples-12": [_call(_PRICE, item="apple")],
    "bolts-nuts": [_call(_STOCK, item="bolts"), _call(_STOCK, item="nuts")],
    "warmer": [_call(_WEATHER, city="Oslo"), _call(_WEATHER, city="Cairo")],
    "bread-cheese": [_call(_PRICE, item="bread"), _call(_PRICE, item="cheese")],
    "o-es-oslo-berlin": [_call(_DISTANCE, from_city="Oslo", to_city="Berlin")],
    "o-tobias-age": [_call(_EMPLOYEE, name="Tobias Lindqvist")],
    "o-it-cairo": [_call(_WEATHER, city="Cairo")],
    "o-drells": [_call(_CONVERT, amount=3, from_unit="drell", to_unit="kg")],
    "o-yen-rate": [_call(_RATE, currency="JPY")],
    "o-zlt-rate": [_call(_RATE, currency="ZLT")],
    "o-aiko-office": [_call(_EMPLOYEE, name="Aiko Brandt")],
    "o-bolts": [_call(_STOCK, item="bolts")],
    "o-tarns": [_call(_CONVERT, amount=4, from_unit="tarn", to_unit="m")],
    "t-usd-20": [_call(_RATE, currency="USD")],
    "t-rome-vienna-back": [_call(_DISTANCE, from_city="Rome", to_city="Vienna")],
    "t-omelette-4": [_call(_RECIPE, dish="omelette")],
    "t-paris-lima": [_call(_WEATHER, city="Paris"), _call(_WEATHER, city="Lima")],
    "t-it-garlic": [_call(_RECIPE, dish="zuppa di lenticchie")],
    "t-madrid-tarns": [_call(_DISTANCE, from_city="Paris", to_city="Madrid"),
                       _call(_CONVERT, amount=905, from_unit="km", to_unit="tarn")],
    "t-fr-cheese-3": [_call(_PRICE, item="cheese")],
    "t-nearer": [_call(_DISTANCE, from_city="Paris", to_city="Berlin"),
                 _call(_DISTANCE, from_city="Paris", to_city="Madrid")],
    "h-bread-zlt": [_call(_PRICE, item="bread"), _call(_RATE, currency="ZLT")],
    "h-fr-warmest": [_call(_WEATHER, city=city) for city in ("Paris", "Oslo", "Cairo")],
    "h-stock-3": [_call(_STOCK, item=item) for item in ("bolts", "nuts", "washers")],
    "h-oldest": [_call(_EMPLOYEE, name=name) for name in ("Tobias Lindqvist", "Samuel Okafor", "Lucía Ferreira")],
    "h-es-age-diff": [_call(_EMPLOYEE, name="Aiko Brandt"), _call(_EMPLOYEE, name="Samuel Okafor")],
    "h-trip": [_call(_DISTANCE, from_city="Paris", to_city="Berlin"),
               _call(_DISTANCE, from_city="Berlin", to_city="Vienna")],
}


class _Given:
    """The written calls, one for each assistant turn the conversation has so far (a reply asked for
    again gets the same one), then the real client's replies."""

    def __init__(self, real, replies: list) -> None:
        self.real, self.replies = real, replies

    def chat(self, messages, **options):
        turn = sum(1 for m in messages if m["role"] == "assistant")
        return self.replies[turn] if turn < len(self.replies) else self.real.chat(messages, **options)


def main() -> int:
    parser = server_arguments(__doc__)
    parser.add_argument("--only", help="comma-separated task ids to run")
    parser.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    args = parser.parse_args()
    tasks = [t for t in real_tasks.load_tasks(real_tasks.SPLIT_FILES["dev"])
             if t["id"] in LOOKUPS and (not args.only or t["id"] in args.only.split(","))]
    rows = []
    for task in tasks:
        results: list = []
        llm = _Given(agent.OpenAICompatLLM(args.model, args.base_url), LOOKUPS[task["id"]])
        started = time.monotonic()
        result = agent.Agent(llm, real_tasks.recorded_tools(results, suite_tools.tools),
                             max_steps=real_tasks.SUITE_MAX_STEPS).run(task["task"])
        rows.append(real_tasks._row(task, result, time.monotonic() - started, results))
        real_tasks._print_row(rows[-1])
        if args.json:
            with open(args.json, "w", encoding="utf-8") as handle:
                json.dump(rows, handle, ensure_ascii=False, indent=1)
    print(f"total: {real_tasks._total(rows)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Tools for bench/real_tasks.py and for `python agent.py --batch bench/real_tasks.jsonl --tools bench/real_tools.py`.

Their facts are made up (a shop's price list, a weather table that contradicts the
climate, an inventory), so a model can only answer right by calling them: an answer from
memory is wrong. ``clock`` and ``calculator`` are the agent's demo tools.
"""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import agent  # noqa: E402

PRICES = {"apple": 0.37, "bread": 2.15, "coffee": 7.40, "milk": 1.09, "cheese": 4.85}
WEATHER = {"paris": (24, "sunny"), "oslo": (21, "clear"), "lima": (6, "fog"), "cairo": (8, "rain")}
STOCK = {"bolts": 1320, "nuts": 845, "washers": 77, "screws": 2600}


def _key(text: str, known: dict) -> str:
    """The known item or city named in the text ("a loaf of bread" -> "bread", "12 apples" -> "apple"); when
    it names several, the text itself, which is unknown: the tools answer one item at a time."""
    words = [w[:-1] if w.endswith("s") and w[:-1] in known else w for w in text.lower().replace(",", " ").split()]
    found = {w for w in words if w in known}
    return found.pop() if len(found) == 1 else text.strip().lower()


def get_price(item: str) -> str:
    """The price of one item in our shop, in euros.

    Args:
        item: The item's name, e.g. "milk".
    """
    price = PRICES.get(_key(item, PRICES))
    return f"unknown item {item!r}; ask for one of: {', '.join(PRICES)}" if price is None else f"{price:.2f} EUR"


def get_weather(city: str) -> str:
    """The weather in a city right now.

    Args:
        city: The city's name, e.g. "Rome".
    """
    known = WEATHER.get(_key(city, WEATHER))
    if known is None:
        return f"no weather for {city!r}; ask for one of: {', '.join(c.title() for c in WEATHER)}"
    return f"{_key(city, WEATHER).title()}: {known[0]} °C, {known[1]}"


def get_stock(item: str) -> str:
    """How many units of an item are in our warehouse.

    Args:
        item: The item's name, e.g. "screws".
    """
    count = STOCK.get(_key(item, STOCK))
    return f"unknown item {item!r}; ask for one of: {', '.join(STOCK)}" if count is None else f"{count} units"


tools = agent._demo_tools()
for _func in (get_price, get_weather, get_stock):
    tools.register(_func)

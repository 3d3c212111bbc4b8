"""The ten tools of the task suite (bench/suite_dev.jsonl, bench/suite_test.jsonl), all registered for every task.

    python bench/real_tasks.py --split dev ...       # runs the suite with these tools
    python agent.py --tools bench/suite_tools.py "How many metres are 3 tarns?"

(agent.py's --batch does not take the suite's files: some tasks list several expected texts.)

real_tools.py's shop (prices, weather, stock) and the agent's calculator and clock, and six
more whose facts are made up, so an answer from memory is wrong: exchange rates (real codes at
invented rates, and two invented currencies), road distances between real cities (invented
kilometres), an employee directory, a recipe book, and a unit table with invented units (a
tarn, a glim, a drell). Like real_tools.py's, each tool refuses what it does not know with
"...; ask for one of: ..." (the runner does not count an answer that passes such a refusal
on). ``FUNCTIONS`` holds the plain functions (typed, with an Args: docstring) for a peer that
builds its own tools from them (smolagents' ``tool``).
"""
from __future__ import annotations

import os
import sys
import unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import agent  # noqa: E402
from real_tools import get_price, get_stock, get_weather  # noqa: E402,F401  (the shop, unchanged)

# what one euro buys
RATES = {"USD": 1.62, "GBP": 0.51, "JPY": 212.0, "ZLT": 4.2, "KRV": 0.27}
_CURRENCY_NAMES = {"dollar": "USD", "dollars": "USD", "pound": "GBP", "pounds": "GBP", "yen": "JPY",
                   "zlt": "ZLT", "krv": "KRV", "usd": "USD", "gbp": "GBP", "jpy": "JPY"}
# road kilometres, either way
DISTANCES = {("paris", "berlin"): 1410, ("paris", "madrid"): 905, ("berlin", "vienna"): 1218,
             ("rome", "vienna"): 640, ("oslo", "berlin"): 436, ("paris", "rome"): 1733,
             ("madrid", "rome"): 2275, ("oslo", "paris"): 2310}
EMPLOYEES = {
    "Marta Quiroga": {"age": 41, "department": "Logistics", "office": "B-214", "joined": 2011, "extension": 5532},
    "Tobias Lindqvist": {"age": 29, "department": "Finance", "office": "A-102", "joined": 2019, "extension": 4107},
    "Aiko Brandt": {"age": 53, "department": "Research", "office": "C-330", "joined": 1998, "extension": 6021},
    "Samuel Okafor": {"age": 36, "department": "Sales", "office": "A-118", "joined": 2015, "extension": 4470},
    "Lucía Ferreira": {"age": 47, "department": "Legal", "office": "D-005", "joined": 2007, "extension": 3389},
}
# dish: (people it serves, [(ingredient, amount, unit)])
RECIPES = {
    "pancakes": (4, [("flour", 300, "g"), ("milk", 450, "ml"), ("eggs", 3, ""), ("sugar", 40, "g"),
                     ("butter", 25, "g"), ("salt", 2, "g")]),
    "omelette": (2, [("eggs", 5, ""), ("milk", 60, "ml"), ("cheese", 70, "g"), ("chives", 8, "g")]),
    "lentil soup": (6, [("lentils", 420, "g"), ("carrots", 3, ""), ("onions", 2, ""), ("stock", 1600, "ml"),
                        ("cumin", 6, "g"), ("lemon", 1, ""), ("garlic cloves", 4, "")]),
    "guacamole": (3, [("avocados", 4, ""), ("limes", 2, ""), ("onion", 1, ""), ("tomatoes", 2, ""),
                      ("coriander", 15, "g")]),
}
# each unit in metres (length) or grams (mass); tarn, glim, vock, drell and pib are made up
UNITS = {"m": ("length", 1.0), "km": ("length", 1000.0), "cm": ("length", 0.01),
         "tarn": ("length", 17.5), "glim": ("length", 2.6), "vock": ("length", 0.42),
         "g": ("mass", 1.0), "kg": ("mass", 1000.0), "drell": ("mass", 340.0), "pib": ("mass", 12.0)}
_UNIT_NAMES = {"meter": "m", "metre": "m", "kilometer": "km", "kilometre": "km", "centimeter": "cm",
               "centimetre": "cm", "gram": "g", "gramme": "g", "kilogram": "kg", "kilogramme": "kg",
               "mètre": "m", "kilo": "kg"}


def _plain(text: str) -> str:
    """Lower case without accents: "Lucía" -> "lucia", "Berlín" -> "berlin"."""
    return "".join(c for c in unicodedata.normalize("NFKD", str(text)) if not unicodedata.combining(c)).lower().strip()


def _number(value: float) -> str:
    return f"{value:.4f}".rstrip("0").rstrip(".")


def get_exchange_rate(currency: str) -> str:
    """How much of a currency one euro buys today.

    Args:
        currency: The currency's code, e.g. "USD".
    """
    words = _plain(currency).replace(",", " ").split()
    found = {_CURRENCY_NAMES.get(w, w.upper()) for w in words} & set(RATES)
    if len(found) != 1:
        return f"unknown currency {currency!r}; ask for one of: {', '.join(RATES)}"
    code = found.pop()
    return f"1 EUR = {_number(RATES[code])} {code}"


def _city(text: str) -> str | None:
    known = {c for pair in DISTANCES for c in pair}
    found = {w for w in _plain(text).replace(",", " ").split() if w in known}
    return found.pop() if len(found) == 1 else None


def get_distance(from_city: str, to_city: str) -> str:
    """The road distance between two cities, in kilometres.

    Args:
        from_city: Where the trip starts, e.g. "Lyon".
        to_city: Where the trip ends, e.g. "Milan".
    """
    a, b = _city(from_city), _city(to_city)
    km = DISTANCES.get((a, b)) or DISTANCES.get((b, a))
    if km is None:
        cities = sorted({c.title() for pair in DISTANCES for c in pair})
        return f"no distance from {from_city!r} to {to_city!r}; ask for one of: {', '.join(cities)}"
    return f"{a.title()} to {b.title()}: {km} km by road"


def find_employee(name: str) -> str:
    """One employee's entry in the company directory: age, department, office, year joined, phone extension.

    Args:
        name: The employee's name, e.g. "Ann Smith".
    """
    words = set(_plain(name).replace(",", " ").split())
    found = [full for full in EMPLOYEES if words & set(_plain(full).split())]
    if len(found) != 1:
        return f"no employee {name!r}; ask for one of: {', '.join(EMPLOYEES)}"
    entry = EMPLOYEES[found[0]]
    return (f"{found[0]}: age {entry['age']}, department {entry['department']}, office {entry['office']}, "
            f"joined {entry['joined']}, extension {entry['extension']}")


def get_recipe(dish: str) -> str:
    """A dish's recipe from our recipe book: how many people it serves and its ingredients.

    Args:
        dish: The dish's name, e.g. "apple pie".
    """
    words = _plain(dish).replace(",", " ").split()   # "pancake", "omelet", "lentil soup", "soup" do
    found = [d for d in RECIPES if any(w[:5] == d[:5] or w == d.split()[-1] for w in words if len(w) > 3)]
    if len(found) != 1:
        return f"no recipe {dish!r}; ask for one of: {', '.join(RECIPES)}"
    serves, ingredients = RECIPES[found[0]]
    listed = ", ".join(f"{name} {amount}{(' ' + unit) if unit else ''}" for name, amount, unit in ingredients)
    return f"{found[0]} (serves {serves}), {len(ingredients)} ingredients: {listed}"


def _unit(text: str) -> str | None:
    word = _plain(text).rstrip(".")
    for candidate in (word, word[:-1] if word.endswith("s") else word, word[:-2] if word.endswith("es") else word):
        if candidate in UNITS:
            return candidate
        if candidate in _UNIT_NAMES:
            return _UNIT_NAMES[candidate]
    return None


def convert_units(amount: float, from_unit: str, to_unit: str) -> str:
    """Convert an amount between units of length or of mass, including our own units (tarn, glim, vock, drell, pib).

    Args:
        amount: How many of from_unit, e.g. 2.5.
        from_unit: The unit to convert from, e.g. "km".
        to_unit: The unit to convert to, e.g. "m".
    """
    source, target = _unit(from_unit), _unit(to_unit)
    if source is None or target is None:
        return f"unknown unit {from_unit if source is None else to_unit!r}; ask for one of: {', '.join(UNITS)}"
    if UNITS[source][0] != UNITS[target][0]:
        return f"cannot convert {UNITS[source][0]} ({source}) to {UNITS[target][0]} ({target})"
    value = float(amount) * UNITS[source][1] / UNITS[target][1]
    return f"{_number(float(amount))} {source} = {_number(value)} {target}"


_DEMO = agent._demo_tools()   # the agent's own calculator and clock


def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression: + - * / // % **, parentheses, sqrt, log, sin, pi, ...

    Args:
        expression: The arithmetic to evaluate, e.g. "(128*3+40)/4".
    """
    return _DEMO.get("calculator").func(expression)


def clock() -> str:
    """The current date and time in UTC."""
    return _DEMO.get("clock").func()


# the plain functions, in the order the registry lists them (a peer builds its own tools from these)
FUNCTIONS = [calculator, clock, get_price, get_weather, get_stock, get_exchange_rate, get_distance,
             find_employee, get_recipe, convert_units]

tools = agent._demo_tools()   # the agent's own calculator and clock, as real_tools.py has them
for _func in FUNCTIONS[2:]:
    tools.register(_func)
assert [t.name for t in tools] == [f.__name__ for f in FUNCTIONS]

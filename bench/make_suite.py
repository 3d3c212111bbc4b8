"""Writes the task suite's two halves, bench/suite_dev.jsonl and bench/suite_test.jsonl (run once; kept to show how).

    python bench/make_suite.py           # writes both files
    python bench/make_suite.py --check   # exit 1 unless the files are what this script writes

The suite: the 12 tasks of bench/real_tasks.jsonl, all in dev, and the new tasks below, over the
ten tools of bench/suite_tools.py (all registered for every task). The new tasks were split
once, at random, with ``random.Random(SEED)``: within each group of tasks that need the same
number of calls (none, one, two, three or more), shuffled, and the first half (the larger
half, for an odd group) to dev, the rest to test. Tune on dev only; report test beside it.

Fields of a task, beside real_tasks.py's (id, task, expect or expect_clock, reject, evidence):
- ``calls``: the fewest tool calls that do it: each lookup, plus one calculator call where the
  task asks for arithmetic on what was looked up (the 12 older tasks keep their own counts);
- ``no_tool``: true when no tool is needed (``calls`` 0); ``decoy`` then names a tool that
  looks related but does not fit, when there is one;
- ``arith``: true when the task does arithmetic on a looked-up fact;
- ``lang``: the language of the task ("en", "fr", "es", "de", "it", "pt");
- ``split``: "dev" or "test"; ``origin``: "real_tasks" for the 12 older tasks.
Expected numbers are computed from the tools' tables, so they are the tools' truth; a number
whose two-decimal rounding would miss the 0.005 tolerance is refused here.
"""
from __future__ import annotations

import json
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import suite_tools as T  # noqa: E402
from real_tools import PRICES, STOCK, WEATHER  # noqa: E402

SEED = 20261204
DEV_FILE = os.path.join(HERE, "suite_dev.jsonl")
TEST_FILE = os.path.join(HERE, "suite_test.jsonl")
OLD_FILE = os.path.join(HERE, "real_tasks.jsonl")

E, R, D = T.EMPLOYEES, T.RATES, T.DISTANCES
serves = {dish: T.RECIPES[dish][0] for dish in T.RECIPES}
amount = {(dish, name): a for dish in T.RECIPES for name, a, _ in T.RECIPES[dish][1]}
W = {city: WEATHER[city][0] for city in WEATHER}


def task(id, text, expect=None, *, calls, lang="en", arith=False, **extra) -> dict:
    out = {"id": id, "task": text}
    if expect is not None:
        out["expect"] = round(expect, 6) if isinstance(expect, float) else expect
    out.update(extra)
    out.update(calls=calls, no_tool=calls == 0, arith=arith, lang=lang)
    return out


NEW = [
    # -- no tool needed (decoy: a tool that looks related but does not fit)
    task("nt-hours", "How many hours are there in three days?", 72, calls=0, decoy="clock"),
    task("nt-boil", "At sea level, at what temperature in Celsius does water boil?", 100, calls=0,
         decoy="get_weather"),
    task("nt-spider", "How many legs does a spider have?", 8, calls=0),
    task("nt-romeo", "Who wrote the play Romeo and Juliet?", "Shakespeare", calls=0),
    task("nt-es-capital", "¿Cuál es la capital de Italia?", ["roma", "rome"], calls=0, lang="es"),
    task("nt-de-leap", "Wie viele Tage hat ein Schaltjahr?", 366, calls=0, lang="de", decoy="clock"),
    task("nt-cm", "How many centimetres make one metre?", 100, calls=0, decoy="convert_units"),
    task("nt-translate-es", "Can you translate 'good morning' into Spanish for me?", "buenos", calls=0),
    task("nt-dozen", "Quick question before I go shopping: how many eggs are in a dozen?", 12, calls=0,
         decoy="get_price"),
    task("nt-fr-hexagon", "Combien de côtés a un hexagone ?", 6, calls=0, lang="fr"),
    # -- one call
    task("o-cheese", "I'd like to buy some cheese. What's your price for it?", PRICES["cheese"], calls=1),
    task("o-paris-temp", "Is it hot in Paris at the moment? Give me the temperature.", W["paris"], calls=1),
    task("o-bolts", "Do we still have bolts in the warehouse? How many?", STOCK["bolts"], calls=1),
    task("o-zlt-rate", "What's the euro to ZLT exchange rate today?", R["ZLT"], calls=1),
    task("o-yen-rate", "How many yen does one euro get me right now?", R["JPY"], calls=1),
    task("o-paris-madrid", "How far is it by road from Paris to Madrid, in kilometres?", D[("paris", "madrid")],
         calls=1),
    task("o-es-oslo-berlin", "¿Qué distancia hay por carretera entre Oslo y Berlín, en kilómetros?",
         D[("oslo", "berlin")], calls=1, lang="es"),
    task("o-tobias-age", "How old is Tobias Lindqvist?", E["Tobias Lindqvist"]["age"], calls=1),
    task("o-aiko-office", "Which office is Aiko Brandt in?", E["Aiko Brandt"]["office"], calls=1,
         evidence=["C-330"]),
    task("o-de-okafor-dept", "In welcher Abteilung arbeitet Samuel Okafor?", ["sales", "vertrieb", "verkauf"],
         calls=1, lang="de", evidence=["department Sales"]),
    task("o-guac-count", "How many different ingredients go into the guacamole recipe?",
         len(T.RECIPES["guacamole"][1]), calls=1),
    task("o-omelette-eggs", "How many eggs does the omelette recipe call for?", amount[("omelette", "eggs")],
         calls=1),
    task("o-tarns", "Convert 4 tarns to metres.", 4 * T.UNITS["tarn"][1], calls=1),
    task("o-drells", "What's 3 drells in kilograms?", 3 * T.UNITS["drell"][1] / 1000, calls=1),
    task("o-fr-glims", "Combien de mètres font 10 glims ?", 10 * T.UNITS["glim"][1], calls=1, lang="fr"),
    task("o-de-clock", "Wie spät ist es gerade?", calls=1, lang="de", expect_clock=True),
    task("o-calc", "Can you work out 3.75 * 48 - 19 for me?", 3.75 * 48 - 19, calls=1),
    task("o-it-cairo", "Che tempo fa al Cairo adesso?", ["rain", "pioggia", "piov"], calls=1, lang="it",
         evidence=["Cairo: 8"]),
    # -- two calls
    task("t-milk-6", "I need six bottles of milk. What will that come to?", 6 * PRICES["milk"], calls=2,
         arith=True),
    task("t-paris-lima", "Where is it warmer right now, Paris or Lima? Just name the city.", "Paris", calls=2,
         reject=["lima"], evidence=["Paris: 24", "Lima: 6"]),
    task("t-older", "Who is older, Marta Quiroga or Samuel Okafor?", "Marta", calls=2, reject=["samuel", "okafor"],
         evidence=["age 41", "age 36"]),
    task("t-nearer", "Which is nearer to Paris by road: Berlin or Madrid?", "Madrid", calls=2, reject=["berlin"],
         evidence=["1410 km", "905 km"]),
    task("t-yen-50", "I'm changing 50 euros into yen. How many yen will I receive?", 50 * R["JPY"], calls=2,
         arith=True),
    task("t-rome-vienna-back", "If I drive from Rome to Vienna and back, how many kilometres is that?",
         2 * D[("rome", "vienna")], calls=2, arith=True),
    task("t-pancakes-12", "I'm making pancakes for 12 people. How much flour do I need, in grams?",
         amount[("pancakes", "flour")] * 12 / serves["pancakes"], calls=2, arith=True),
    task("t-aiko-years", "It's 2026. For how many years has Aiko Brandt been with the company?",
         2026 - E["Aiko Brandt"]["joined"], calls=2, arith=True),
    task("t-fr-cheese-3", "Combien coûtent trois fromages dans notre magasin ?", 3 * PRICES["cheese"], calls=2,
         lang="fr", arith=True),
    task("t-washers-short", "We need 100 washers for a job. How many more do we have to order?",
         100 - STOCK["washers"], calls=2, arith=True),
    task("t-it-garlic", "Quanti spicchi d'aglio servono per la zuppa di lenticchie per 3 persone?",
         amount[("lentil soup", "garlic cloves")] * 3 / serves["lentil soup"], calls=2, lang="it", arith=True),
    task("t-usd-20", "Convert 20 euros into US dollars for me, please.", 20 * R["USD"], calls=2, arith=True),
    task("t-pt-berlin-vienna", "Qual é a distância de Berlim a Viena, ida e volta, em quilómetros?",
         2 * D[("berlin", "vienna")], calls=2, lang="pt", arith=True),
    task("t-omelette-4", "How much cheese goes into an omelette for 4 people, in grams?",
         amount[("omelette", "cheese")] * 4 / serves["omelette"], calls=2, arith=True),
    task("t-de-younger", "Wer ist jünger: Tobias Lindqvist oder Lucía Ferreira?", "Tobias", calls=2, lang="de",
         reject=["lucía", "lucia", "ferreira"], evidence=["age 29", "age 47"]),
    task("t-madrid-tarns", "How many tarns is the road from Paris to Madrid?",
         D[("paris", "madrid")] * 1000 / T.UNITS["tarn"][1], calls=2),
    # -- three calls or more
    task("h-coffee-usd", "How much is a bag of coffee from our shop in US dollars?", PRICES["coffee"] * R["USD"],
         calls=3, arith=True),
    task("h-bread-zlt", "What would a loaf of bread cost me in ZLT?", PRICES["bread"] * R["ZLT"], calls=3,
         arith=True),
    task("h-warmest", "Of Oslo, Lima and Cairo, which city is warmest right now? Just name the city.", "Oslo",
         calls=3, reject=["lima", "cairo"], evidence=["Oslo: 21", "Lima: 6", "Cairo: 8"]),
    task("h-de-paris-lima", "Wie viel Grad wärmer ist es gerade in Paris als in Lima?", W["paris"] - W["lima"],
         calls=3, lang="de", arith=True),
    task("h-stock-3", "What's the total number of bolts, nuts and washers in the warehouse?",
         STOCK["bolts"] + STOCK["nuts"] + STOCK["washers"], calls=4, arith=True),
    task("h-age-sum", "What's the combined age of Marta Quiroga and Tobias Lindqvist?",
         E["Marta Quiroga"]["age"] + E["Tobias Lindqvist"]["age"], calls=3, arith=True),
    task("h-es-age-diff", "¿Cuántos años más tiene Aiko Brandt que Samuel Okafor?",
         E["Aiko Brandt"]["age"] - E["Samuel Okafor"]["age"], calls=3, lang="es", arith=True),
    task("h-trip", "I'm driving Paris to Berlin, then Berlin to Vienna. How many kilometres is that in total?",
         D[("paris", "berlin")] + D[("berlin", "vienna")], calls=3, arith=True),
    task("h-basket", "What do two coffees, one cheese and four apples cost together in our shop?",
         2 * PRICES["coffee"] + PRICES["cheese"] + 4 * PRICES["apple"], calls=4, arith=True),
    task("h-cheese-gbp", "How much is one cheese in British pounds?", PRICES["cheese"] * R["GBP"], calls=3,
         arith=True),
    task("h-fr-warmest", "Fait-il plus chaud à Paris, à Oslo ou au Caire en ce moment ? Donne seulement le nom "
         "de la ville.", "Paris", calls=3, lang="fr", reject=["oslo", "caire", "cairo"],
         evidence=["Paris: 24", "Oslo: 21", "Cairo: 8"]),
    task("h-oldest", "Who is the oldest of Tobias Lindqvist, Samuel Okafor and Lucía Ferreira?", ["lucía", "lucia", "ferreira"],
         calls=3, reject=["tobias", "samuel"], evidence=["age 29", "age 36", "age 47"]),
]


def _old_tasks() -> list:
    """The 12 tasks of real_tasks.jsonl, with the suite's fields; all in dev."""
    arith = {"apples-12", "bolts-nuts", "bread-cheese"}
    with open(OLD_FILE, encoding="utf-8") as handle:
        old = [json.loads(line) for line in handle if line.strip()]
    return [dict(t, no_tool=t["calls"] == 0, arith=t["id"] in arith, lang="en", origin="real_tasks", split="dev")
            for t in old]


def group(t: dict) -> int:
    """The group a task is split within: 0, 1, 2, or 3 for three calls or more."""
    return min(t["calls"], 3)


def split(tasks: list, seed: int = SEED) -> tuple:
    """(dev, test): within each group, shuffled by random.Random(seed), the first (larger) half to dev."""
    rng = random.Random(seed)
    dev, test = [], []
    for g in range(4):
        members = [t for t in tasks if group(t) == g]
        rng.shuffle(members)
        half = (len(members) + 1) // 2
        dev += [dict(t, split="dev") for t in members[:half]]
        test += [dict(t, split="test") for t in members[half:]]
    return dev, test


def _check_tasks(tasks: list) -> None:
    ids = [t["id"] for t in tasks]
    assert len(ids) == len(set(ids)), "duplicate ids"
    for t in tasks:
        expect = t.get("expect")
        if isinstance(expect, float):   # a two-decimal answer must be within the tolerance
            assert abs(round(expect, 2) - expect) < 0.0049, (t["id"], expect)
        assert ("expect" in t) != bool(t.get("expect_clock")), t["id"]


def build() -> tuple:
    _check_tasks(NEW)
    dev, test = split(NEW)
    return _old_tasks() + dev, test


def _lines(tasks: list) -> str:
    return "".join(json.dumps(t, ensure_ascii=False) + "\n" for t in tasks)


def main() -> int:
    dev, test = build()
    if "--check" in sys.argv[1:]:
        same = all(os.path.exists(p) and open(p, encoding="utf-8").read() == _lines(ts)
                   for p, ts in ((DEV_FILE, dev), (TEST_FILE, test)))
        print("the suite files are what make_suite.py writes" if same else "the suite files differ")
        return 0 if same else 1
    for path, tasks in ((DEV_FILE, dev), (TEST_FILE, test)):
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(_lines(tasks))
        print(f"{path}: {len(tasks)} tasks")
    return 0


if __name__ == "__main__":
    sys.exit(main())

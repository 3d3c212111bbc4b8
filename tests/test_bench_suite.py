"""The task suite (bench/suite_dev.jsonl, bench/suite_test.jsonl), its runner's scorer and totals, its tools, and
bench/bfcl.py's scorer: offline, with scripted replies."""
import argparse
import collections
import json
import os
import sys

import pytest

from conftest import ROOT, call, final

sys.path.insert(0, os.path.join(ROOT, "bench"))

import agent  # noqa: E402
import bfcl  # noqa: E402
import make_suite  # noqa: E402
import real_tasks  # noqa: E402
import suite_tools  # noqa: E402

DEV = real_tasks.load_tasks(real_tasks.SPLIT_FILES["dev"])
TEST = real_tasks.load_tasks(real_tasks.SPLIT_FILES["test"])
SUITE = DEV + TEST


# -- the suite's composition ---------------------------------------------------------------------------

def test_the_suite_has_the_composition_the_issue_asks_for():
    calls = collections.Counter(min(t["calls"], 3) for t in SUITE)
    assert len(SUITE) >= 60
    assert calls[0] >= 10 and calls[1] >= 20 and calls[2] >= 15 and calls[3] >= 10
    assert sum(t["arith"] for t in SUITE) >= 10
    assert sum(t["lang"] != "en" for t in SUITE) >= 5
    assert all(t["no_tool"] == (t["calls"] == 0) for t in SUITE)
    assert any(t.get("decoy") for t in SUITE if t["no_tool"])   # some beside a tool that looks related


def test_at_least_eight_tools_all_registered_for_every_task():
    assert len(suite_tools.tools) >= 8
    assert [t.name for t in suite_tools.tools] == [f.__name__ for f in suite_tools.FUNCTIONS]
    assert {t["decoy"] for t in SUITE if t.get("decoy")} <= {t.name for t in suite_tools.tools}


def test_dev_and_test_are_disjoint_and_the_old_twelve_are_in_dev():
    dev_ids, test_ids = {t["id"] for t in DEV}, {t["id"] for t in TEST}
    assert not dev_ids & test_ids and len(dev_ids) == len(DEV) and len(test_ids) == len(TEST)
    old = {t["id"] for t in real_tasks.load_tasks(real_tasks.TASKS_FILE)}
    assert len(old) == 12 and old <= dev_ids
    assert all(t["split"] == "dev" for t in DEV) and all(t["split"] == "test" for t in TEST)
    assert {t["task"] for t in DEV} & {t["task"] for t in TEST} == set()


def test_the_split_is_the_recorded_one():
    dev, test = make_suite.build()   # random.Random(make_suite.SEED), within call-count groups
    assert make_suite.SEED == 20261204
    assert [t["id"] for t in dev] == [t["id"] for t in DEV] and dev == DEV
    assert test == TEST
    new = [t for t in DEV if t.get("origin") != "real_tasks"]
    for group in range(4):   # each group of new tasks halved, the larger half (if odd) to dev
        d, t = (sum(make_suite.group(x) == group for x in half) for half in (new, TEST))
        assert d - t in (0, 1)


def test_every_expected_number_is_the_tools_truth():
    # a right answer, written from the tools, solves its task: the expectations agree with the tables
    by_id = {t["id"]: t for t in SUITE}
    results = [("get_price", suite_tools.get_price("coffee")), ("get_exchange_rate", suite_tools.get_exchange_rate("USD"))]
    assert real_tasks.solved(by_id["h-coffee-usd"], "That is 11.99 USD.", results)
    results = [("get_distance", suite_tools.get_distance("Paris", "Berlin")),
               ("get_distance", suite_tools.get_distance("Berlin", "Vienna"))]
    assert real_tasks.solved(by_id["h-trip"], "1410 + 1218 = 2628 km", results)
    assert real_tasks.solved(by_id["o-tarns"], "4 tarns are 70 metres.", [("convert_units", "4 tarn = 70 m")])


# -- the runner's scorer ---------------------------------------------------------------------------------

def _task(task_id):
    return next(t for t in SUITE if t["id"] == task_id)


@pytest.mark.parametrize("answer, right", [
    ("Three cheeses cost 14.55 EUR.", True),
    ("Trois fromages coûtent 14,55 €.", True),          # a decimal comma
    ("3 * 4.85 = 14.55", True),
    ("Trois fromages coûtent 14,50 €.", False),
    ("14.55 = 3 * 4.85 + 1 = 15.55", False),             # only what the last "=" gives
    ("The error: 14.55", False),
])
def test_a_number_answer(answer, right):
    assert real_tasks.solved(_task("t-fr-cheese-3"), answer, [("get_price", "4.85 EUR")]) is right


def test_a_guessable_answer_needs_its_evidence():
    task = _task("t-paris-lima")
    both = [("get_weather", suite_tools.get_weather("Paris")), ("get_weather", suite_tools.get_weather("Lima"))]
    assert real_tasks.solved(task, "Paris", both)
    assert not real_tasks.solved(task, "Paris", both[:1])      # a guess from memory: Lima never looked up
    assert not real_tasks.solved(task, "Paris", [])
    assert not real_tasks.solved(task, "Lima", both)
    assert not real_tasks.solved(task, "Paris is warmer than Lima", both)   # the rejected name appears


def test_lists_of_expected_and_rejected_texts():
    task = _task("o-de-okafor-dept")
    entry = [("find_employee", suite_tools.find_employee("Samuel Okafor"))]
    assert real_tasks.solved(task, "Er arbeitet im Vertrieb.", entry)
    assert real_tasks.solved(task, "Sales", entry)
    assert not real_tasks.solved(task, "Marketing", entry)
    assert not real_tasks.solved(_task("h-oldest"), "Tobias Lindqvist", [("find_employee", "age 29"),
                                 ("find_employee", "age 36"), ("find_employee", "age 47")])


def test_a_memory_guess_with_no_call_fails_and_a_refusal_passed_on_fails():
    assert not real_tasks.solved(_task("o-paris-temp"), "It is about 15 °C in Paris.", [])
    refusal = suite_tools.get_distance("Lisbon", "Paris")
    assert "; ask for one of: " in refusal
    assert not real_tasks.solved(_task("o-paris-madrid"), refusal + " 905", [("get_distance", refusal)])


def test_the_old_rules_still_hold():
    old = {t["id"]: t for t in real_tasks.load_tasks(real_tasks.TASKS_FILE)}
    assert real_tasks.solved(old["bolts-nuts"], "2,165 units", [])   # a thousands separator
    assert not real_tasks.solved(old["warmer"], "Oslo", [("get_weather", "Oslo: 21 °C, clear")])
    assert real_tasks.solved(old["clock"], "It is 14:05.", [("clock", "2026-12-04 14:05:09 UTC")])
    assert not real_tasks.solved(old["clock"], "It is 14:05.", [])


def test_the_runner_reports_calls_tokens_and_tokens_per_solved_task():
    args = argparse.Namespace(constrain=None, tools=suite_tools.tools, max_steps=8, model="m", base_url="u",
                              no_stream=False)
    scripts = iter([[call("convert_units", amount=4, from_unit="tarn", to_unit="m"), final("70 metres")],
                    [final("William Shakespeare")],
                    [final("About 30 dollars")]])
    tasks = [_task("o-tarns"), _task("nt-romeo"), _task("t-usd-20")]
    saved = []
    rows = real_tasks.run_agent(args, tasks, saved.append, make_llm=lambda: agent.MockLLM(next(scripts)))
    assert [r["solved"] for r in rows] == [True, True, False]
    assert [r["calls"] for r in rows] == [1, 0, 0]
    assert all(r["tokens"] > 0 for r in rows)
    total = real_tasks.summary(rows)
    assert total["solved"] == 2 and total["calls"] == 1 and total["format_errors"] == 0
    assert total["tokens_per_solved"] == round(sum(r["tokens"] for r in rows) / 2)
    assert total["no_tool_tasks"] == 1 and total["no_tool_without_call"] == 1
    assert total["stops"] == {"final": 3}
    assert "tokens per solved task" in real_tasks._total(rows)


def test_the_peers_tokens_are_its_steps_token_usage():
    from types import SimpleNamespace as NS

    steps = [NS(token_usage=NS(input_tokens=100, output_tokens=20)), NS(token_usage=None), NS(),
             NS(token_usage=NS(input_tokens=50, output_tokens=5))]
    assert real_tasks._peer_tokens(NS(memory=NS(steps=steps))) == 175


# -- the suite's tools -------------------------------------------------------------------------------------

def test_the_tools_know_their_made_up_facts_and_refuse_the_rest():
    assert suite_tools.get_exchange_rate("yen") == "1 EUR = 212 JPY"
    assert suite_tools.get_distance("Berlín", "Oslo") == "Berlin to Oslo: 436 km by road"
    assert suite_tools.find_employee("Lucia Ferreira").startswith("Lucía Ferreira: age 47")
    assert suite_tools.get_recipe("pancake").startswith("pancakes (serves 4), 6 ingredients")
    assert suite_tools.convert_units(3, "drells", "kg") == "3 drell = 1.02 kg"
    for refusal in (suite_tools.get_exchange_rate("euro"), suite_tools.find_employee("Bob"),
                    suite_tools.get_recipe("pizza"), suite_tools.convert_units(1, "furlong", "m")):
        assert real_tasks._REFUSAL in refusal


# -- bench/bfcl.py's scorer --------------------------------------------------------------------------------

ITEMS = {item["id"]: item for item in bfcl.load_items()}


def test_the_bfcl_sample_is_forty_and_forty_and_every_function_registers():
    kinds = collections.Counter(item["category"] for item in ITEMS.values())
    assert kinds == {"simple": 40, "irrelevance": 40}
    for item in ITEMS.values():
        assert len(bfcl.registry_for(item, [])) == len(item["function"])
        if item["category"] == "simple":
            assert bfcl.answerable(item)


def test_bfcl_schemas_become_json_schema():
    schema = bfcl.json_schema({"type": "dict", "properties": {
        "x": {"type": "float", "description": "d"}, "t": {"type": "tuple", "items": {"type": "float"}},
        "a": {"type": "any"}, "o": {"type": "string", "optional": True}}, "required": ["x", "gone"]})
    assert schema == {"type": "object", "properties": {"x": {"type": "number", "description": "d"},
                      "t": {"type": "array", "items": {"type": "number"}}, "a": {}, "o": {"type": "string"}},
                      "required": ["x"]}
    assert bfcl.tool_name("math.factorial") == "math_factorial"


def test_bfcl_simple_scoring():
    item = ITEMS["simple_python_1"]   # math.factorial, number: [5]
    assert bfcl.score(item, [("math_factorial", {"number": 5})]) == (True, "right call")
    assert not bfcl.score(item, [("math_factorial", {"number": 6})])[0]
    assert not bfcl.score(item, [("math_factorial", {"number": "5"})])[0]       # wrong type
    assert not bfcl.score(item, [("math_factorial", {})])[0]                    # required left out
    assert not bfcl.score(item, [("math_factorial", {"number": 5, "extra": 1})])[0]
    assert not bfcl.score(item, [("factorial", {"number": 5})])[0]
    assert not bfcl.score(item, [])[0]
    # only the first call counts
    assert not bfcl.score(item, [("math_factorial", {"number": 4}), ("math_factorial", {"number": 5})])[0]


def test_bfcl_strings_optional_arguments_and_floats():
    function = {"name": "f", "parameters": {"type": "dict", "properties": {
        "city": {"type": "string"}, "unit": {"type": "string"}, "r": {"type": "float"}}, "required": ["city", "r"]}}
    possible = {"city": ["New York, NY", "NYC"], "unit": ["celsius", ""], "r": [2.0]}
    assert bfcl.check_call(function, {"city": "new york ny", "r": 2}, possible)[0]     # int for a float
    assert bfcl.check_call(function, {"city": "NYC", "unit": "Celsius", "r": 2.0}, possible)[0]
    assert not bfcl.check_call(function, {"city": "Boston", "r": 2.0}, possible)[0]
    assert not bfcl.check_call(function, {"city": "NYC", "unit": "kelvin", "r": 2.0}, possible)[0]
    possible["unit"] = ["celsius"]   # no "": it may not be left out
    assert not bfcl.check_call(function, {"city": "NYC", "r": 2.0}, possible)[0]


def test_bfcl_irrelevance_scoring_and_a_scripted_run():
    item = ITEMS["irrelevance_0"]
    assert bfcl.score(item, []) == (True, "no call")
    assert not bfcl.score(item, [("determine_body_mass_index", {"weight": 1.0, "height": 1.0})])[0]
    row = bfcl.run_item(item, agent.MockLLM([final("I have no tool for that: 25 square metres.")]), 3, {})
    assert row["ok"] and row["calls"] == [] and row["tokens"] > 0
    simple = ITEMS["simple_python_1"]
    row = bfcl.run_item(simple, agent.MockLLM([call("math_factorial", number=5), final("120")]), 3, {})
    assert row["ok"] and row["calls"] == [["math_factorial", {"number": 5}]]
    assert bfcl.totals([row]) == {"simple": {"items": 1, "ok": 1, "percent": 100.0},
                                  "irrelevance": {"items": 0, "ok": 0, "percent": None}}
    assert json.dumps(row)


@pytest.mark.parametrize("answer, right", [
    ("A spider has eight legs.", True), ("8 legs", True), ("Eight.", True),
    ("Spiders have seven or so legs.", False), ("It has eighteen legs.", False),
])
def test_a_small_whole_number_may_be_written_as_a_word(answer, right):
    assert real_tasks.solved({"expect": 8}, answer, []) is right

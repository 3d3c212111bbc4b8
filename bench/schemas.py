"""Argument validation: the cost of one validated call on the JSON-Schema-Test-Suite's schemas.

    python bench/schemas.py                  # agent.py as it is
    python bench/schemas.py --before REV     # and agent.py at a git revision, on the same cases

Every required case of draft 2020-12 and draft 7 (tests/data/json-schema-test-suite) becomes a
tool with one parameter, as tests/test_schema_suite.py wraps it, and ``registry.call`` runs it:
validation, then a tool that returns at once (no time limit, so no worker thread). With
``--before``, both versions are timed on the cases both register, so the rows compare like with
like; the cases only the newer one registers are timed in a row of their own.
"""
import argparse
import glob
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time

from _common import ROOT, machine, median, table

sys.path.insert(0, os.path.join(ROOT, "tests"))

import agent  # noqa: E402
from test_schema_suite import SUITE, wrapped  # noqa: E402

SUBSETS = {"all": lambda name: True,
           "pattern, patternProperties": lambda name: "pattern" in name,
           "$ref, $id, $anchor": lambda name: any(w in name for w in ("ref", "anchor", "defs", "definitions")),
           "unevaluated*": lambda name: "unevaluated" in name}


def load_before(revision):
    text = subprocess.run(["git", "show", f"{revision}:agent.py"], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout
    path = os.path.join(tempfile.mkdtemp(), "agent_before.py")
    with open(path, "w", encoding="utf-8") as file:
        file.write(text)
    spec = importlib.util.spec_from_file_location("agent_before", path)
    module = sys.modules["agent_before"] = importlib.util.module_from_spec(spec)   # dataclasses look it up
    spec.loader.exec_module(module)
    return module


def cases(module):
    """{(file, group): (registry, [arguments])} of the groups module registers."""
    found = {}
    for path in sorted(glob.glob(os.path.join(SUITE, "draft2020-12", "*.json"))
                       + glob.glob(os.path.join(SUITE, "draft7", "*.json"))):
        name = os.path.relpath(path, SUITE)
        for group in json.load(open(path, encoding="utf-8")):
            registry = module.ToolRegistry(default_timeout=None)
            try:
                registry.register(lambda value: "ran", name="case",
                                  parameters=wrapped(group["schema"], name.startswith("draft7")))
            except module.ToolError:
                continue
            found[(name, group["description"])] = (registry, [{"value": t["data"]} for t in group["tests"]])
    return found


def per_call(selected, repeat=5):
    """Microseconds per call: the best of `repeat` passes over every call (the least disturbed)."""
    calls = [(registry, arguments) for registry, many in selected for arguments in many]
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        for registry, arguments in calls:
            registry.call("case", arguments)
        best = min(best, time.perf_counter() - started)
    return len(calls), best / len(calls) * 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", metavar="REV", help="also time agent.py at this git revision")
    options = parser.parse_args()
    print(f"argument validation on {machine()}\n")
    after = cases(agent)
    before = cases(load_before(options.before)) if options.before else {}
    started = time.perf_counter()
    cases(agent)
    registering = (time.perf_counter() - started) / len(after) * 1e6
    rows = []
    for label, wanted in SUBSETS.items():
        keys = [key for key in after if wanted(key[0])]
        both = [key for key in keys if key in before]
        only = [key for key in keys if key not in before]
        if before and both:
            n, old = per_call([before[key] for key in both])
            _, new = per_call([after[key] for key in both])
            rows.append([label, "both register", n, f"{old:.1f}", f"{new:.1f}", f"{new / old:.2f}"])
        if only or not before:
            n, new = per_call([after[key] for key in (only if before else keys)])
            rows.append([label, "only this one" if before else "registered", n, "-", f"{new:.1f}", "-"])
    table(["cases", "schemas", "calls", "before µs/call", "after µs/call", "after/before"], rows)
    print(f"\nregistering one tool (checking its schema): {registering:.0f} µs on average over "
          f"{len(after)} schemas")
    times = []
    for registry, many in after.values():
        for arguments in many:
            started = time.perf_counter()
            registry.call("case", arguments)
            times.append(time.perf_counter() - started)
    print(f"one call, median over {len(times)}: {median(times) * 1e6:.1f} µs; slowest: "
          f"{max(times) * 1e6:.0f} µs")
    pathological()


# The patterns that make a backtracking search (Python's re) take exponential time, or meet a new set
# of states at almost every character, and the arguments that do it; tests/test_hardening_schemas.py
# checks what each call answers, this measures how long it takes.
WINDOWS = "".join(format(i, "021b") for i in range(10_000)).translate({48: "a", 49: "b"})
PATHOLOGICAL = [
    ("backtracking: ^(\\w+\\s?)*$ on 41 letters and !", {"type": "string", "pattern": r"^(\w+\s?)*$"},
     "a" * 41 + "!"),
    ("backtracking: the same on 15,001 characters", {"type": "string", "pattern": r"^(\w+\s?)*$"},
     "a b" * 5000 + "!"),
    ("too many states: (a|b)*a(a|b){20}c, 210,000 characters", {"type": "string", "pattern": "(a|b)*a(a|b){20}c"},
     WINDOWS),
    ("the same as a patternProperties name", {"patternProperties": {"(a|b)*a(a|b){20}c": {}}}, {WINDOWS: 1}),
    ("the same under not", {"not": {"pattern": "(a|b)*a(a|b){20}c"}}, WINDOWS),
]


def pathological(repeat=3):
    """The slowest of ``repeat`` validated calls on each pathological pattern, and what it answered."""
    rows = []
    for label, schema, value in PATHOLOGICAL:
        registry = agent.ToolRegistry(default_timeout=None)
        registry.register(lambda x: "ran", name="p", parameters={"type": "object", "properties": {"x": schema}})
        worst = 0.0
        for _ in range(repeat):
            started = time.perf_counter()
            out = registry.call("p", {"x": value})
            worst = max(worst, time.perf_counter() - started)
        rows.append([label, f"{worst * 1000:.0f}", "ran" if out == "ran" else out[:60]])
    print()
    table(["pathological pattern", f"slowest of {repeat}, ms", "answer"], rows)


if __name__ == "__main__":
    main()

"""A public function-calling benchmark through Agent with the defaults: a fixed sample of the Berkeley Function
Calling Leaderboard's (BFCL) "simple" and "irrelevance" items.

    python bench/bfcl.py --base-url http://127.0.0.1:8081/v1 --model qwen2.5-coder-0.5b-instruct
    python bench/bfcl.py ... --json bfcl-qwen05.json        # also write the rows
    python bench/bfcl.py ... --only simple_python_12,irrelevance_3 --max-steps 2
    python bench/bfcl.py --make-sample DIR                  # draw the sample again from BFCL's data/ directory

The sample (bench/data/bfcl_sample.jsonl, its licence and source in bench/data/BFCL_NOTICE.md) is 40
"simple" items (one function listed, one call expected) and 40 "irrelevance" items (one function
listed that does not fit the question), drawn with random.Random(SEED) from BFCL_v4_simple_python.json
and BFCL_v4_irrelevance.json (BFCL v3's "simple" and "irrelevance"), with the possible answers of
the simple items (leaving out the one simple item no call can pass, see ``answerable``).

For each item, its function is registered as the only tool: BFCL's parameter schema made JSON
Schema ("dict" is "object", "float" "number", "tuple" "array", "any" has no type; keywords agent.py
does not take, such as "optional", are left out), under its name with each character other than a
letter, digit, "_" or "-" made "_" (as BFCL does for OpenAI's models: "math.factorial" is
"math_factorial"). The function is a stub that records the call and returns a short made-up result.
Agent(llm, registry, max_steps=3) runs the question with the agent's defaults. Scoring:
- simple: the first call the model makes (the first tool_call action, run or refused) has the
  function's name, and its arguments pass BFCL's AST rule (``simple_function_checker`` in BFCL's
  ast_checker.py): each required argument present, no argument outside the function's parameters and
  the possible answer, each value of the expected type (an int allowed for a float) and among the
  allowed values (strings compared without case, spaces and ",./-_*^"; lists element-wise; dicts key
  by key), and each possible-answer parameter the call leaves out allowed to be absent ("" among its
  values);
- irrelevance: no call at all.
Prints a row per item and the two percentages. Not a test: it needs a running server.
"""
from __future__ import annotations

import json
import os
import random
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import agent  # noqa: E402
from _common import server_arguments  # noqa: E402

SEED = 20261204
PER_CATEGORY = 40
SAMPLE_FILE = os.path.join(HERE, "data", "bfcl_sample.jsonl")
SOURCE_FILES = {"simple": ("BFCL_v4_simple_python.json", "possible_answer/BFCL_v4_simple_python.json"),
                "irrelevance": ("BFCL_v4_irrelevance.json", None)}

# -- the items' functions as tools ---------------------------------------------------------------------

_TYPES = {"dict": "object", "float": "number", "tuple": "array"}   # BFCL's type names -> JSON Schema's
_KEEP = set(agent._SCHEMA_KEYWORDS) | set(agent._ANNOTATIONS)      # what agent.py takes


def json_schema(bfcl: dict) -> dict:
    """BFCL's parameter schema as a JSON Schema agent.py takes."""
    out = {}
    for key, value in bfcl.items():
        if key not in _KEEP:
            continue   # "optional" and the like: not JSON Schema
        if key == "type":
            if value == "any":
                continue
            out["type"] = _TYPES.get(value, value)
        elif key == "properties" and isinstance(value, dict):
            out["properties"] = {name: json_schema(sub) if isinstance(sub, dict) else sub
                                 for name, sub in value.items()}
        elif key == "items" and isinstance(value, dict):
            out["items"] = json_schema(value)
        else:
            out[key] = value
    if "required" in out:   # a required name must be a declared parameter
        out["required"] = [name for name in out["required"] if name in out.get("properties", {})]
    return out


def tool_name(name: str) -> str:
    """The function's name as a tool name: "math.factorial" -> "math_factorial"."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", name)[:64]


def registry_for(item: dict, ran: list) -> agent.ToolRegistry:
    """The item's functions as tools; each records (tool name, arguments) in ``ran`` and returns a made-up
    result."""
    registry = agent.ToolRegistry()
    for function in item["function"]:
        name = tool_name(function["name"])

        def stub(_name=name, **arguments):
            ran.append((_name, arguments))
            return f"{_name} done: result 42"

        parameters = json_schema(function["parameters"])
        parameters["type"] = "object"
        registry.register(agent.Tool(name=name, description=function.get("description", ""),
                                     parameters=parameters, func=stub))
    return registry


# -- BFCL's AST rule for one call (after its simple_function_checker) -----------------------------------

_PYTHON_TYPES = {"string": str, "integer": int, "float": float, "boolean": bool, "array": list, "tuple": list,
                 "dict": dict, "any": str}


def standardize(text: str) -> str:
    """BFCL's standardize_string: no spaces or ",./-_*^", lower case, ' made "."""
    return re.sub(r"[ ,./\-_*^]", "", text).lower().replace("'", '"')


def _strings(values: list) -> list:
    return [standardize(v) if isinstance(v, str) else v for v in values]


def _dict_ok(value: dict, allowed: list) -> bool:
    for answer in allowed:
        if answer == "" or not isinstance(answer, dict):
            continue
        if all(key in answer and (standardize(v) if isinstance(v, str) else v) in _strings(answer[key])
               for key, v in value.items()) and \
                all(key in value or "" in values for key, values in answer.items()):
            return True
    return False


def check_call(function: dict, arguments: dict, possible: dict) -> tuple:
    """(ok, why) for one call's arguments: BFCL's simple_function_checker, Python flavour."""
    properties = function["parameters"].get("properties", {})
    for name in function["parameters"].get("required", []):
        if name not in arguments:
            return False, f"missing required parameter {name!r}"
    for name, value in arguments.items():
        if name not in properties or name not in possible:
            return False, f"unexpected parameter {name!r}"
        allowed = possible[name]
        kind = properties[name].get("type", "any")
        expected = _PYTHON_TYPES.get(kind, str)
        if kind == "float" and type(value) is int:
            value = float(value)
        answer_type = next((type(a) for a in allowed if a != ""), None)
        variable = answer_type is not None and answer_type is not expected
        if type(value) is not expected and not (answer_type is not None and type(value) is answer_type):
            return False, f"{name!r}: expected type {kind}, got {type(value).__name__}"
        if not variable and expected is dict:
            ok = _dict_ok(value, allowed)
        elif not variable and expected is list and properties[name].get("items", {}).get("type") == "dict":
            ok = any(isinstance(a, list) and len(a) == len(value) and all(_dict_ok(v, [d]) for v, d in zip(value, a))
                     for a in allowed)
        elif not variable and expected is str:
            ok = standardize(value) in [standardize(a) for a in allowed if isinstance(a, str)]
        elif not variable and expected is list:
            ok = _strings(list(value)) in [_strings(a) for a in allowed if isinstance(a, list)]
        else:
            ok = value in allowed
        if not ok:
            return False, f"{name!r}: {value!r} is not one of {allowed!r}"
    for name, values in possible.items():
        if name not in arguments and "" not in values:
            return False, f"parameter {name!r} left out"
    return True, "right call"


def score(item: dict, calls: list) -> tuple:
    """(ok, why) for an item, given the calls the model made in order, each (tool name, arguments)."""
    if item["category"] == "irrelevance":
        return (not calls, "no call" if not calls else f"called {calls[0][0]}")
    if not calls:
        return False, "no call"
    name, arguments = calls[0]
    expected = item["ground_truth"][0]
    function_name = next(iter(expected))
    function = next(f for f in item["function"] if f["name"] == function_name)
    if name != tool_name(function_name):
        return False, f"called {name}, not {tool_name(function_name)}"
    if not isinstance(arguments, dict):
        return False, "arguments are not an object"
    return check_call(function, arguments, expected[function_name])


# -- running ----------------------------------------------------------------------------------------------

def load_items(path: str = SAMPLE_FILE) -> list:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def question(item: dict) -> str:
    """The item's user turn (every item of the two categories has one)."""
    return "\n".join(m["content"] for m in item["question"][0] if m["role"] == "user")


def model_calls(result: agent.AgentResult) -> list:
    """(tool name, arguments) of each tool_call action the model made, run or refused."""
    return [(s.action.name, s.action.arguments) for s in result.steps
            if s.action is not None and s.action.kind == "tool_call"]


def run_item(item: dict, llm, max_steps: int, options: dict) -> dict:
    ran: list = []
    started = time.monotonic()
    result = agent.Agent(llm, registry_for(item, ran), max_steps=max_steps, **options).run(question(item))
    calls = model_calls(result)
    ok, why = score(item, calls)
    usage = result.usage or {}
    return {"id": item["id"], "category": item["category"], "ok": ok, "why": why, "steps": len(result.steps),
            "calls": [[n, a] for n, a in calls], "stop": result.stop_reason,
            "tokens": int(usage.get("prompt_tokens", 0)) + int(usage.get("completion_tokens", 0)),
            "seconds": round(time.monotonic() - started, 1), "answer": (result.answer or "")[:80]}


def totals(rows: list) -> dict:
    out = {}
    for category in ("simple", "irrelevance"):
        mine = [r for r in rows if r["category"] == category]
        right = sum(r["ok"] for r in mine)
        out[category] = {"items": len(mine), "ok": right,
                         "percent": round(100 * right / len(mine), 1) if mine else None}
    return out


def _print_row(row: dict) -> None:
    call = f"{row['calls'][0][0]}({json.dumps(row['calls'][0][1], ensure_ascii=False)})" if row["calls"] else "-"
    print(f"{row['id']:<18} {'ok' if row['ok'] else '--'} {row['steps']} steps {len(row['calls'])} calls "
          f"{row['stop']:<12} {row['seconds']:>5.1f} s  {call[:80]}  ({row['why'][:60]})", flush=True)


def _concrete(value):
    """A value from a possible answer's allowed values: the first of each, in dicts and lists of dicts too."""
    if isinstance(value, dict):
        return {key: _concrete(values[0]) for key, values in value.items() if values and values[0] != ""}
    if isinstance(value, list) and value and isinstance(value[0], dict):
        return [_concrete(v) for v in value]
    return value


def answerable(item: dict) -> bool:
    """Whether the call made of the first allowed values passes the rule (one of BFCL's simple items,
    simple_python_200, requires a parameter its possible answer does not give: no call can pass)."""
    function_name, possible = next(iter(item["ground_truth"][0].items()))
    arguments = {key: _concrete(values[0]) for key, values in possible.items() if values and values[0] != ""}
    return score(dict(item, category="simple"), [(tool_name(function_name), arguments)])[0]


def make_sample(data_dir: str, path: str = SAMPLE_FILE, seed: int = SEED, per_category: int = PER_CATEGORY) -> None:
    """Draw the sample from BFCL's data directory (bfcl_eval/data) and write it to ``path``."""
    rng = random.Random(seed)
    chosen = []
    for category, (questions, answers) in SOURCE_FILES.items():
        items = load_items(os.path.join(data_dir, questions))
        if answers:
            truth = {a["id"]: a["ground_truth"] for a in load_items(os.path.join(data_dir, answers))}
            for item in items:
                item["ground_truth"] = truth[item["id"]]
        items = [item for item in items if category != "simple" or answerable(item)]
        picked = sorted(rng.sample(range(len(items)), per_category))
        chosen += [dict({"category": category}, **items[i]) for i in picked]
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        for item in chosen:
            registry_for(item, [])   # every sampled function must register
            handle.write(json.dumps(item, ensure_ascii=False) + "\n")
    print(f"{path}: {len(chosen)} items")


def main() -> int:
    parser = server_arguments(__doc__)
    parser.add_argument("--max-steps", type=int, default=3)
    parser.add_argument("--category", choices=["simple", "irrelevance"], help="run one category only")
    parser.add_argument("--only", help="comma-separated item ids to run")
    parser.add_argument("--json", metavar="FILE", help="also write the rows and totals as JSON")
    parser.add_argument("--make-sample", metavar="DIR", help="draw the sample from BFCL's data directory")
    args = parser.parse_args()
    if args.make_sample:
        make_sample(args.make_sample)
        return 0
    items = load_items()
    if args.category:
        items = [i for i in items if i["category"] == args.category]
    if args.only:
        items = [i for i in items if i["id"] in args.only.split(",")]
    options = {"constrain": args.constrain} if args.constrain else {}
    rows = []
    for item in items:
        llm = agent.OpenAICompatLLM(args.model, args.base_url, stream=not args.no_stream)
        rows.append(run_item(item, llm, args.max_steps, options))
        _print_row(rows[-1])
        if args.json:
            with open(args.json, "w", encoding="utf-8") as handle:
                json.dump({"rows": rows, "totals": totals(rows)}, handle, indent=1, ensure_ascii=False)
    for category, total in totals(rows).items():
        if total["items"]:
            print(f"{category}: {total['ok']}/{total['items']} ({total['percent']}%) "
                  f"{'right first calls' if category == 'simple' else 'with no call'}")
    print(f"tokens: {sum(r['tokens'] for r in rows)}, {sum(r['seconds'] for r in rows):.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

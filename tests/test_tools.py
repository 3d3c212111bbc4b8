"""Tools: schemas from plain functions, validation, and a call() that never raises."""
import json
import threading
import time
from typing import Any, Dict, List, Literal, Optional

import pytest

import agent
from agent import Agent, MockLLM, Tool, ToolError, ToolRegistry


def schema_of(func, **options):
    registry = ToolRegistry()
    registry.register(func, **options)
    return registry.get(options.get("name") or func.__name__).parameters


# -- schema inference ---------------------------------------------------------------

def test_each_hint_kind_becomes_json_schema():
    def f(s: str, i: int, x: float, b: bool, items: list, ints: List[int], names: list[str], d: dict,
          dd: Dict[str, int], maybe: Optional[int], unit: Literal["c", "f"], anything: Any, untyped):
        pass

    props = schema_of(f)["properties"]
    assert props["s"] == {"type": "string"}
    assert props["i"] == {"type": "integer"}
    assert props["x"] == {"type": "number"}
    assert props["b"] == {"type": "boolean"}
    assert props["items"] == {"type": "array"}
    assert props["ints"] == {"type": "array", "items": {"type": "integer"}}
    assert props["names"] == {"type": "array", "items": {"type": "string"}}
    assert props["d"] == {"type": "object"}
    assert props["dd"] == {"type": "object"}
    assert props["maybe"] == {"type": ["integer", "null"]}
    assert props["unit"] == {"enum": ["c", "f"], "type": "string"}
    assert props["anything"] == {}
    assert props["untyped"] == {}


def test_defaults_make_parameters_optional():
    def f(city: str, unit: Literal["c", "f"] = "c", days: Optional[int] = None):
        pass

    schema = schema_of(f)
    assert schema["required"] == ["city"]
    assert schema["additionalProperties"] is False
    assert schema["properties"]["days"] == {"type": ["integer", "null"]}


def test_docstring_gives_description_and_parameter_descriptions():
    def get_weather(city: str, unit: str = "c") -> str:
        """Current temperature of a city.

        Looks it up somewhere.

        Args:
            city: City name, e.g. "Paris".
            unit (str): "c" or "f",
                Celsius by default.

        Returns:
            The temperature.
        """

    registry = ToolRegistry()
    registry.register(get_weather)
    tool = registry.get("get_weather")
    assert tool.description == "Current temperature of a city."
    assert tool.parameters["properties"]["city"]["description"] == 'City name, e.g. "Paris".'
    assert tool.parameters["properties"]["unit"]["description"] == '"c" or "f", Celsius by default.'


def test_string_annotations_are_resolved():
    def f(n: "int", tags: "Optional[List[str]]" = None):
        pass

    props = schema_of(f)["properties"]
    assert props["n"] == {"type": "integer"}
    assert props["tags"] == {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]}


def test_optional_keeps_what_stands_beside_the_type():
    def f(unit: Optional[Literal["c", "f"]] = None, tags: Optional[List[int]] = None, n: Optional[int] = None):
        pass

    props = schema_of(f)["properties"]
    # a list of types only when nothing stands beside it: some consumers read such a list as bare types
    assert props["unit"] == {"anyOf": [{"enum": ["c", "f"], "type": "string"}, {"type": "null"}]}
    assert props["tags"] == {"anyOf": [{"type": "array", "items": {"type": "integer"}}, {"type": "null"}]}
    assert props["n"] == {"type": ["integer", "null"]}


# -- registration -------------------------------------------------------------------

def test_register_bare_with_options_direct_and_tool():
    registry = ToolRegistry()

    @registry.register
    def a(x: int) -> int:
        return x

    @registry.register(name="b-tool", timeout=5, confirm=True)
    def b() -> str:
        return "b"

    def c() -> str:
        return "c"

    returned = registry.register(c, description="see c")
    tool = Tool("d", "the d tool", {"type": "object", "properties": {}}, lambda: "d")
    assert registry.register(tool) is tool
    assert a(3) == 3 and b() == "b" and returned is c  # decorated functions stay callable
    assert [t.name for t in registry] == ["a", "b-tool", "c", "d"]
    assert registry.get("b-tool").timeout == 5 and registry.get("b-tool").confirm is True
    assert registry.get("c").description == "see c"
    assert "a" in registry and len(registry) == 4


def test_explicit_parameters_are_used_as_given():
    registry = ToolRegistry()
    params = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    registry.register(lambda **kw: kw["q"], name="search", parameters=params)
    assert registry.get("search").parameters is params
    assert registry.call("search", {"q": "hi"}) == "hi"


@pytest.mark.parametrize("make, words", [
    (lambda r: r.register(lambda x: x), "lambda"),
    (lambda r: r.register(lambda x: x, name="has space"), "invalid tool name"),
    (lambda r: r.register(lambda x: x, name=""), "invalid tool name"),
    (lambda r: r.register(lambda x: x, name="x" * 65), "invalid tool name"),
    (lambda r: r.register(lambda *args: 1, name="va"), "*args"),
    (lambda r: r.register(lambda **kw: 1, name="kw"), "**kwargs"),
    (lambda r: r.register(lambda x: x, name="p", parameters={"type": "array"}), "type"),
    (lambda r: r.register(lambda x: x, name="t", timeout=0), "timeout"),
    (lambda r: r.register(42), "callable"),
])
def test_bad_definitions_fail_at_registration(make, words):
    with pytest.raises(ToolError, match=None) as info:
        make(ToolRegistry())
    assert words in str(info.value)


def test_unsupported_hint_fails_at_registration():
    def f(pair: tuple):
        pass

    def g(x: "set[int]"):
        pass

    def h(u: "int | str"):
        pass

    for func in (f, g, h):  # on Python 3.9 "int | str" cannot even be evaluated: also a ToolError
        with pytest.raises(ToolError, match="unsupported type hint|cannot resolve the type hints"):
            ToolRegistry().register(func)


def test_positional_only_and_duplicate_names_fail():
    def pos(x, /):
        pass

    with pytest.raises(ToolError, match="positional-only"):
        ToolRegistry().register(pos)
    registry = ToolRegistry()
    registry.register(pos, name="dup", parameters={"type": "object"})
    with pytest.raises(ToolError, match="duplicate"):
        registry.register(pos, name="dup", parameters={"type": "object"})


def test_unresolvable_annotation_fails_at_registration():
    def f(x: "NoSuchType"):  # noqa: F821
        pass

    with pytest.raises(ToolError, match="type hints"):
        ToolRegistry().register(f)


# -- schemas ------------------------------------------------------------------------

def test_schemas_use_the_openai_tools_shape():
    registry = ToolRegistry()

    @registry.register
    def add(a: int, b: int = 0) -> int:
        """Add numbers."""
        return a + b

    assert registry.schemas() == [{"type": "function", "function": {
        "name": "add", "description": "Add numbers.",
        "parameters": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                       "required": ["a"], "additionalProperties": False}}}]


# -- validation ---------------------------------------------------------------------

@pytest.fixture
def registry():
    registry = ToolRegistry()

    @registry.register
    def weather(city: str, unit: Literal["c", "f"] = "c", days: int = 1, tags: Optional[List[str]] = None,
                scale: float = 1.0, flag: bool = False) -> dict:
        """Weather."""
        return {"city": city, "unit": unit, "days": days, "days_type": type(days).__name__, "tags": tags}

    @registry.register(parameters={"type": "object", "properties": {
        "point": {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"],
                  "additionalProperties": False}}, "required": ["point"]})
    def nested(point):
        return point

    return registry


@pytest.mark.parametrize("arguments, words", [
    ({}, "missing required parameter 'city'"),
    ({"city": "Paris", "town": "x"}, "unexpected parameter 'town' (allowed: city, unit, days, tags, scale, flag)"),
    ({"city": 5}, "parameter 'city' must be string, got integer 5"),
    ({"city": "Paris", "unit": "k"}, 'parameter \'unit\' must be one of ["c", "f"], got string "k"'),
    ({"city": "Paris", "days": True}, "parameter 'days' must be integer, got boolean true"),
    ({"city": "Paris", "days": 1.5}, "parameter 'days' must be integer, got number 1.5"),
    ({"city": "Paris", "scale": False}, "parameter 'scale' must be number, got boolean false"),
    ({"city": "Paris", "scale": "2"}, "parameter 'scale' must be number, got string"),
    ({"city": "Paris", "flag": 1}, "parameter 'flag' must be boolean, got integer 1"),
    ({"city": "Paris", "tags": ["a", 2]}, "parameter 'tags[1]' must be string, got integer 2"),
    ({"city": "Paris", "tags": "a"}, "parameter 'tags' must be array or null"),
])
def test_invalid_arguments_name_parameter_expected_and_got(registry, arguments, words):
    observation = registry.call("weather", arguments)
    assert observation.startswith("ERROR: invalid arguments for 'weather'")
    assert words in observation


def test_nested_properties_are_validated(registry):
    assert "missing required parameter 'point.x'" in registry.call("nested", {"point": {}})
    assert "unexpected parameter 'point.y'" in registry.call("nested", {"point": {"x": 1, "y": 2}})
    assert "parameter 'point.x' must be number" in registry.call("nested", {"point": {"x": "1"}})
    assert registry.call("nested", {"point": {"x": 1}}) == '{"x": 1}'


def test_integral_float_is_accepted_as_integer(registry):
    observation = registry.call("weather", {"city": "Paris", "days": 3.0})
    assert '"days": 3' in observation and '"days_type": "int"' in observation


def test_arguments_must_be_an_object(registry):
    assert registry.call("weather", ["Paris"]).startswith("ERROR: the arguments for 'weather' must be a JSON object")


# -- call failure paths -------------------------------------------------------------

def test_unknown_tool_lists_available_and_suggests_closest(registry):
    observation = registry.call("wether", {})
    assert observation.startswith("ERROR: unknown tool 'wether'.")
    assert "Did you mean 'weather'?" in observation
    assert "Available tools: weather, nested." in observation


def test_tool_exception_becomes_error_observation_without_traceback():
    registry = ToolRegistry()

    @registry.register
    def boom(x: int) -> int:
        raise RuntimeError(f"cannot handle {x}")

    observation = registry.call("boom", {"x": 3})
    assert observation == ("ERROR: 'boom' raised RuntimeError: cannot handle 3. "
                           "Check the arguments or try another approach.")
    assert "Traceback" not in observation


def test_system_exit_in_a_tool_does_not_escape():
    registry = ToolRegistry(default_timeout=None)

    @registry.register
    def quit_now() -> None:
        raise SystemExit(1)

    assert registry.call("quit_now", {}).startswith("ERROR: 'quit_now' raised SystemExit")


def test_timeout_abandons_the_tool_and_the_next_call_works():
    registry = ToolRegistry()
    release = threading.Event()

    @registry.register(timeout=0.05)
    def slow() -> str:
        release.wait(30)
        return "late"

    @registry.register
    def fast() -> str:
        return "quick"

    started = time.monotonic()
    observation = registry.call("slow", {})
    assert time.monotonic() - started < 10   # waiting for the tool takes 30 s: room for a busy machine
    assert observation == "ERROR: 'slow' did not finish within 0.05 s and was abandoned. " \
                          "Try smaller input or another approach."
    release.set()
    assert registry.call("fast", {}) == "quick"


def test_call_timeout_caps_the_tool_limit():
    registry = ToolRegistry(default_timeout=30)

    @registry.register
    def slow() -> str:
        time.sleep(0.5)
        return "late"

    assert "within 0.06 s" in registry.call("slow", {}, timeout=0.06)


def test_workers_are_reused_between_calls():
    registry = ToolRegistry()
    seen = set()

    @registry.register
    def where() -> str:
        seen.add(threading.get_ident())
        return "here"

    for _ in range(20):
        assert registry.call("where", {}) == "here"
    assert len(seen) == 1


def test_no_limit_runs_inline():
    registry = ToolRegistry(default_timeout=None)

    @registry.register
    def where() -> int:
        return threading.get_ident()

    assert registry.call("where", {}) == str(threading.get_ident())


def test_non_string_results_are_json_encoded():
    registry = ToolRegistry()
    registry.register(lambda: {"when": time.gmtime(0).tm_year, "text": "é"}, name="data")
    registry.register(lambda: {1, 2} and object(), name="odd")
    assert registry.call("data", {}) == '{"when": 1970, "text": "é"}'
    assert registry.call("odd", {}).startswith('"<object object at')


def test_unencodable_result_becomes_error():
    registry = ToolRegistry()
    loop = []
    loop.append(loop)
    registry.register(lambda: loop, name="loop")
    assert registry.call("loop", {}).startswith("ERROR: 'loop' returned a value that cannot be shown as JSON")


def test_long_output_keeps_head_and_tail_with_a_marker():
    registry = ToolRegistry()
    registry.register(lambda: "H" * 5000 + "T" * 5000, name="big")
    observation = registry.call("big", {}, max_chars=300)
    assert observation.startswith("H" * 200)
    assert observation.endswith("T" * 100)
    assert "[... 9,700 characters cut ...]" in observation


def test_confirm_tool_runs_only_when_confirmed():
    registry = ToolRegistry()
    ran = []

    @registry.register(confirm=True)
    def delete(path: str) -> str:
        ran.append(path)
        return f"deleted {path}"

    asked = []
    assert registry.call("delete", {"path": "/tmp/x"}).startswith("ERROR: the user declined to run 'delete'")
    assert registry.call("delete", {"path": "a"}, confirm=lambda n, a: asked.append((n, a)) or False) \
        .startswith("ERROR: the user declined")
    assert registry.call("delete", {"path": "b"}, confirm=lambda n, a: 1 / 0).startswith("ERROR: the user declined")
    assert ran == [] and asked == [("delete", {"path": "a"})]
    assert registry.call("delete", {"path": "c"}, confirm=lambda n, a: True) == "deleted c"
    assert ran == ["c"]


def test_tools_without_confirm_ignore_the_callback():
    registry = ToolRegistry()
    registry.register(lambda: "ok", name="safe")
    assert registry.call("safe", {}, confirm=lambda n, a: False) == "ok"


# -- the action schema ----------------------------------------------------------------

def test_action_schema_has_one_branch_per_tool_plus_final(registry):
    schema = registry.action_schema()
    assert set(schema) == {"anyOf"}  # anyOf, not oneOf: more backends support it, and xgrammar reads oneOf so
    branches = schema["anyOf"]
    assert len(branches) == 3
    for branch, tool in zip(branches, registry):
        assert branch["properties"]["type"] == {"const": "tool_call"}
        assert branch["properties"]["name"] == {"const": tool.name}
        assert branch["properties"]["arguments"] == tool.parameters
        assert branch["additionalProperties"] is False
    assert branches[-1]["properties"]["type"] == {"const": "final"}
    assert branches[-1]["required"] == ["type", "thought", "answer"]


def test_thought_is_bounded_so_a_looping_thought_ends(registry):
    thoughts = [branch["properties"]["thought"] for branch in registry.action_schema()["anyOf"]]
    assert thoughts == [{"type": "string", "maxLength": 300}] * 3
    assert registry.action_schema(max_thought_chars=80)["anyOf"][0]["properties"]["thought"]["maxLength"] == 80
    assert registry.action_schema(max_thought_chars=None)["anyOf"][0]["properties"]["thought"] == {"type": "string"}
    for bad in (0, -1, 2.5, True, "300"):
        with pytest.raises(ValueError, match="max_thought_chars"):
            registry.action_schema(max_thought_chars=bad)


# What llama.cpp's JSON-Schema-to-grammar converter drops without an error, read from
# ggml-org/llama.cpp common/json-schema-to-grammar.cpp (SchemaConverter::visit) and the
# "unsupported features" list of grammars/README.md:
# - these keywords are never turned into grammar rules:
LLAMA_CPP_IGNORES = {"not", "if", "then", "else", "dependentSchemas", "dependentRequired", "patternProperties",
                     "propertyNames", "uniqueItems", "contains", "minContains", "maxContains", "$anchor",
                     "prefixItems", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
                     "minProperties", "maxProperties"}
# - visit() takes the first matching branch in this order and reads nothing else of that schema:
#   $ref, anyOf/oneOf, a list of types, const, enum, ... so what stands beside them is lost;
# - minLength/maxLength only count on {"type": "string"}; a format only if it is one it knows.
ANNOTATIONS = {"description", "title", "default", "examples", "$comment"}
KNOWN_FORMATS = {"date", "time", "date-time", "uuid", "uuid1", "uuid2", "uuid3", "uuid4", "uuid5"}


def llama_cpp_drops(schema, path="$"):
    """Every constraint in schema that llama.cpp's grammar converter would silently ignore."""
    if not isinstance(schema, dict):
        return []
    drops = [f"{path}.{key}" for key in sorted(set(schema) & LLAMA_CPP_IGNORES)]
    constraints = set(schema) - ANNOTATIONS
    for first in ("$ref", "anyOf", "oneOf"):
        if first in schema:
            drops += [f"{path}.{key} (beside {first})" for key in sorted(constraints - {first})]
            break
    else:
        if isinstance(schema.get("type"), list):
            drops += [f"{path}.{key} (beside a list of types)" for key in sorted(constraints - {"type"})]
    lengths = {"minLength", "maxLength"} & constraints
    if lengths and (schema.get("type") != "string" or {"pattern", "format"} & constraints):
        drops.append(f"{path}.minLength/maxLength (not on a plain string)")
    if "format" in schema and schema["format"] not in KNOWN_FORMATS:
        drops.append(f"{path}.format {schema['format']}")
    for key, sub in schema.get("properties", {}).items():
        drops += llama_cpp_drops(sub, f"{path}.properties.{key}")
    for key in ("items", "additionalProperties"):
        drops += llama_cpp_drops(schema.get(key), f"{path}.{key}")
    for key in ("anyOf", "oneOf", "allOf"):
        for i, sub in enumerate(schema.get(key, [])):
            drops += llama_cpp_drops(sub, f"{path}.{key}[{i}]")
    return drops


def test_the_drop_checker_finds_what_llama_cpp_ignores():
    assert llama_cpp_drops({"type": ["string", "null"], "enum": ["a", None]}) == ["$.enum (beside a list of types)"]
    assert llama_cpp_drops({"anyOf": [{"type": "number", "minimum": 0}], "properties": {}}) == [
        "$.properties (beside anyOf)", "$.anyOf[0].minimum"]
    assert llama_cpp_drops({"type": "object", "properties": {"s": {"type": "string", "format": "email",
                                                                   "maxLength": 5}}}) == [
        "$.properties.s.minLength/maxLength (not on a plain string)", "$.properties.s.format email"]
    assert llama_cpp_drops({"oneOf": [{"type": "string"}], "description": "ok"}) == []


def test_action_schema_holds_nothing_llama_cpp_drops():
    registry = ToolRegistry()

    @registry.register
    def everything(s: str, i: int, x: float, b: bool, items: list, ints: List[int], d: dict, maybe: Optional[int],
                   unit: Literal["c", "f"], maybe_unit: Optional[Literal["c", "f"]] = None,
                   tags: Optional[List[str]] = None, nested: Optional[List[List[Literal[1, 2]]]] = None,
                   anything: Any = None) -> str:
        """Take every kind of parameter.

        Args:
            s: Some text.
            maybe_unit: A unit, or nothing.
        """
        return "ok"

    registry.register(lambda: "ok", name="no_arguments")
    assert llama_cpp_drops(registry.action_schema()) == []
    assert llama_cpp_drops(agent._tool_rung(registry)) == []   # the first call's, with its other name


def test_callable_objects_and_partials_can_be_tools():
    import functools

    class Multiplier:
        """Multiply by a fixed factor."""

        def __call__(self, x: int) -> int:
            return 3 * x

    def power(base: int, exponent: int) -> int:
        return base ** exponent

    registry = ToolRegistry()
    registry.register(Multiplier(), name="triple")
    registry.register(functools.partial(power, exponent=2), name="square")
    assert registry.get("triple").parameters["properties"] == {"x": {"type": "integer"}}
    assert registry.call("triple", {"x": 4}) == "12"
    assert registry.call("square", {"base": 5}) == "25"


# -- async tools -----------------------------------------------------------------------

def test_async_tool_schema_is_inferred_like_a_plain_function():
    async def fetch(url: str, retries: int = 2) -> str:
        """Fetch a page.

        Args:
            url: The address.
        """
        return url

    registry = ToolRegistry()
    registry.register(fetch)
    tool = registry.get("fetch")
    assert tool.description == "Fetch a page."
    assert tool.parameters["properties"] == {"url": {"type": "string", "description": "The address."},
                                             "retries": {"type": "integer"}}
    assert tool.parameters["required"] == ["url"]


@pytest.mark.parametrize("timeout, same_thread", [(5.0, False), (None, True)], ids=["on a worker", "inline"])
def test_async_tool_is_awaited(timeout, same_thread):
    import asyncio

    async def double(n: int) -> dict:
        """Double a number, after a pause."""
        await asyncio.sleep(0)
        return {"n": 2 * n, "thread": threading.get_ident()}

    registry = ToolRegistry(default_timeout=timeout)
    registry.register(double)
    result = json.loads(registry.call("double", {"n": 21}))
    assert result["n"] == 42
    assert (result["thread"] == threading.get_ident()) is same_thread


def test_async_tool_errors_and_timeouts_become_observations():
    import asyncio

    registry = ToolRegistry()

    @registry.register
    async def broken() -> str:
        raise ValueError("no such page")

    @registry.register(timeout=0.06)
    async def slow() -> str:
        await asyncio.sleep(0.5)
        return "late"

    assert registry.call("broken", {}).startswith("ERROR: 'broken' raised ValueError: no such page")
    assert "did not finish within 0.06 s" in registry.call("slow", {})


def test_async_tool_without_a_limit_works_inside_a_running_event_loop():
    import asyncio

    registry = ToolRegistry(default_timeout=None)

    @registry.register
    async def ping() -> str:
        return "pong"

    async def caller():  # e.g. agent.run() called from async code: asyncio.run cannot nest
        return registry.call("ping", {})

    assert asyncio.run(caller()) == "pong"


def test_agent_runs_an_async_tool():
    from agent import Agent, MockLLM

    async def shout(text: str) -> str:
        """Upper-case the text."""
        return text.upper()

    replies = ['{"type": "tool_call", "thought": "", "name": "shout", "arguments": {"text": "hi"}}',
               '{"type": "final", "thought": "", "answer": "HI"}']
    result = Agent(MockLLM(replies), [shout]).run("shout hi")
    assert result.steps[0].observation.startswith('[OBSERVATION] shout({"text":"hi"}) returned: HI')


def test_one_type_table_describes_hints_and_names_values():
    def f(a: str, b: bool, c: int, d: float, e: list, g: dict, h: None) -> None:
        """Every JSON type."""

    kinds = [schema["type"] for schema in Tool.from_function(f).parameters["properties"].values()]
    assert kinds == ["string", "boolean", "integer", "number", "array", "object", "null"]
    registry = ToolRegistry()
    registry.register(f)
    assert "must be null, got boolean true" in registry.call("f", dict(a="", b=True, c=1, d=1.0, e=[], g={}, h=True))


@pytest.mark.parametrize("schema, value, ok", [
    ({"const": 1}, True, False), ({"enum": [1]}, True, False),          # a boolean is never a number
    ({"const": 2.0}, 2, True), ({"enum": [2.0]}, 2, True),              # numbers compare by value
    ({"const": [1, {"a": True}]}, [1.0, {"a": True}], True), ({"const": [1]}, [True], False),
    ({"enum": ["1"]}, 1, False),
])
def test_enum_and_const_use_one_equality(schema, value, ok):
    registry = ToolRegistry()
    registry.register(lambda x: "ran", name="f", parameters={"type": "object", "properties": {"x": schema}})
    assert (registry.call("f", {"x": value}) == "ran") == ok


def test_a_tool_whose_extension_keyword_nests_too_deep_to_trim_is_listed_as_it_is():
    deep = {}
    for _ in range(450):                 # deeper than the trimmer goes; the schema check skips x-*
        deep = {"x": deep}
    tools = ToolRegistry()
    tools.register(lambda city: city, name="echo", description="Echo.",
                   parameters={"type": "object", "properties": {"city": {"type": "string"}},
                               "x-meta": deep})
    prompt = Agent(MockLLM([]), tools).system_prompt
    assert '- echo: Echo. {"type":"object","properties":{"city":{"type":"string"}},"x-meta":' in prompt

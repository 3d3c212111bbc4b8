"""Issue 18, items 9-11: a tool's schema never fails open.

Every keyword of the JSON Schema vocabulary (2020-12, and draft-07's older spellings) is either
enforced -- a violating argument is refused before the function runs -- or refused when the tool
is registered, with a ToolError naming the keyword and the tool. Annotations stay accepted.
"""
import copy
import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

import agent
from agent import Agent, MockLLM, ToolError, ToolRegistry

# The vocabulary, written out here and not read from agent.py, so that a keyword agent.py forgets shows up.
CORE = {"$schema", "$id", "$ref", "$anchor", "$dynamicRef", "$dynamicAnchor", "$vocabulary", "$comment", "$defs",
        "definitions", "$recursiveRef", "$recursiveAnchor"}
APPLICATOR = {"allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas", "prefixItems", "items",
              "contains", "properties", "patternProperties", "additionalProperties", "propertyNames",
              "additionalItems", "dependencies", "unevaluatedItems", "unevaluatedProperties"}
VALIDATION = {"type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
              "maxLength", "minLength", "pattern", "maxItems", "minItems", "uniqueItems", "maxContains",
              "minContains", "maxProperties", "minProperties", "required", "dependentRequired"}
OTHER = {"format", "contentEncoding", "contentMediaType", "contentSchema", "title", "description", "default",
         "deprecated", "readOnly", "writeOnly", "examples"}
VOCABULARY = CORE | APPLICATOR | VALIDATION | OTHER

# keyword: (the schema of parameter "x", a value it refuses, a value it accepts)
ENFORCED = {
    "type": ({"type": "integer"}, "3", 3),
    "enum": ({"enum": ["a", "b"]}, "c", "b"),
    "const": ({"const": 1}, 2, 1.0),
    "multipleOf": ({"type": "number", "multipleOf": 0.1}, 0.25, 0.3),
    "maximum": ({"maximum": 5}, 5.5, 5),
    "exclusiveMaximum": ({"exclusiveMaximum": 5}, 5, 4.99),
    "minimum": ({"minimum": 0}, -1, 0),
    "exclusiveMinimum": ({"exclusiveMinimum": 0}, 0, 0.001),
    "maxLength": ({"maxLength": 3}, "abcd", "abc"),
    "minLength": ({"minLength": 2}, "a", "ab"),
    "pattern": ({"pattern": "^[a-z]+$"}, "rm -rf /", "abc"),
    "maxItems": ({"maxItems": 2}, [1, 2, 3], [1, 2]),
    "minItems": ({"minItems": 1}, [], [1]),
    "uniqueItems": ({"uniqueItems": True}, [1, 1.0], [1, "1", True]),
    "maxProperties": ({"maxProperties": 1}, {"a": 1, "b": 2}, {"a": 1}),
    "minProperties": ({"minProperties": 1}, {}, {"a": 1}),
    "required": ({"type": "object", "required": ["a"]}, {"b": 1}, {"a": 1}),
    "properties": ({"properties": {"a": {"type": "string"}}}, {"a": 1}, {"a": "1"}),
    "additionalProperties": ({"properties": {"a": {}}, "additionalProperties": {"type": "integer"}},
                             {"a": 1, "b": "x"}, {"a": "x", "b": 2}),
    "items": ({"items": {"type": "string"}}, ["a", 1], ["a", "b"]),
    "allOf": ({"allOf": [{"minimum": 0}, {"maximum": 9}]}, 10, 9),
    "anyOf": ({"anyOf": [{"type": "string"}, {"type": "null"}]}, 1, None),
    "oneOf": ({"oneOf": [{"type": "integer"}, {"minimum": 5}]}, 7, 3),   # 7 matches both: not exactly one
    "not": ({"not": {"type": "string"}}, "x", 1),
    "$ref": ({"$ref": "#/$defs/small"}, 11, 10),
    "$defs": ({"$ref": "#/$defs/small"}, 11, 10),
    "definitions": ({"$ref": "#/definitions/small"}, 11, 10),
    "$anchor": ({"$ref": "#tiny"}, 11, 10),
    "if": ({"if": {"type": "integer"}, "then": {"minimum": 0}}, -1, "x"),
    "then": ({"if": {"minimum": 5}, "then": {"multipleOf": 2}}, 7, 8),
    "else": ({"if": {"type": "string"}, "else": {"type": "integer"}}, 1.5, "x"),
    "dependentSchemas": ({"dependentSchemas": {"a": {"required": ["b"]}}}, {"a": 1}, {"a": 1, "b": 2}),
    "dependentRequired": ({"dependentRequired": {"a": ["b"]}}, {"a": 1}, {"b": 1}),
    "dependencies": ({"dependencies": {"a": ["b"]}}, {"a": 1}, {"a": 1, "b": 1}),
    "prefixItems": ({"prefixItems": [{"type": "string"}]}, [1], ["a", 1]),
    "contains": ({"contains": {"type": "string"}}, [1], [1, "a"]),
    "minContains": ({"contains": {"type": "string"}, "minContains": 2}, [1, "a"], ["a", "b"]),
    "maxContains": ({"contains": {"type": "string"}, "maxContains": 1}, ["a", "b"], ["a", 1]),
    "patternProperties": ({"patternProperties": {"^n_": {"type": "integer"}}}, {"n_a": "x"}, {"n_a": 1, "b": "x"}),
    "propertyNames": ({"propertyNames": {"maxLength": 3}}, {"abcd": 1}, {"abc": 1}),
    "additionalItems": ({"items": [{}], "additionalItems": {"type": "integer"}}, [1, "x"], ["x", 1]),
    "unevaluatedItems": ({"prefixItems": [{}], "unevaluatedItems": False}, [1, 2], [1]),
    "unevaluatedProperties": ({"allOf": [{"properties": {"a": {}}}], "unevaluatedProperties": False},
                              {"a": 1, "b": 2}, {"a": 1}),
}
DEFS = {"$defs": {"small": {"type": "integer", "maximum": 10}, "tiny": {"$anchor": "tiny", "maximum": 10}},
        "definitions": {"small": {"maximum": 10}}}
REFUSED = {"$dynamicRef", "$dynamicAnchor", "$vocabulary", "$recursiveRef", "$recursiveAnchor"}
ANNOTATIONS = {"$schema", "$id", "$comment", "format", "title", "description", "default", "deprecated", "readOnly",
               "writeOnly", "examples", "contentEncoding", "contentMediaType", "contentSchema"}
REFUSED_VALUES = {"$dynamicRef": "#a", "$dynamicAnchor": "a", "$vocabulary": {},
                  "$recursiveRef": "#", "$recursiveAnchor": True}


def tool_with(schema, ran, name="f", **root):
    """A registry with tool name taking x (and only x) under schema; each run is appended to ran."""
    registry = ToolRegistry()
    parameters = {"type": "object", "properties": {"x": schema}, **root}
    registry.register(lambda x=None: ran.append(x) or "ran", name=name, parameters=parameters)
    return registry


def test_the_three_lists_cover_the_whole_vocabulary_once():
    assert set(ENFORCED) | REFUSED | ANNOTATIONS == VOCABULARY
    assert not set(ENFORCED) & REFUSED and not (set(ENFORCED) | REFUSED) & ANNOTATIONS


@pytest.mark.parametrize("keyword", sorted(ENFORCED))
def test_every_enforced_keyword_refuses_a_violating_argument_before_the_function_runs(keyword):
    schema, bad, good = ENFORCED[keyword]
    ran = []
    registry = tool_with(schema, ran, **DEFS)
    out = registry.call("f", {"x": bad})
    assert out.startswith("ERROR: invalid arguments for 'f'") and ran == [], out
    assert registry.call("f", {"x": good}) == "ran" and len(ran) == 1


@pytest.mark.parametrize("keyword", sorted(REFUSED))
def test_every_keyword_not_enforced_is_refused_at_registration_naming_it_and_the_tool(keyword):
    value = REFUSED_VALUES.get(keyword, {"type": "string"})
    with pytest.raises(ToolError) as info:
        tool_with({keyword: value}, [], name="weather")
    assert repr(keyword) in str(info.value) and "'weather'" in str(info.value), str(info.value)
    with pytest.raises(ToolError, match=re.escape(repr(keyword))):     # at the top, and in a Tool built directly
        agent.Tool("weather", "d", {"type": "object", keyword: value}, lambda: 1)


@pytest.mark.parametrize("keyword", sorted(ANNOTATIONS))
def test_annotations_are_accepted_and_change_nothing(keyword):
    ran = []
    value = {"examples": ["x"], "$schema": "https://json-schema.org/draft/2020-12/schema"}.get(keyword, "x")
    registry = tool_with({"type": "string", keyword: value}, ran)
    assert registry.call("f", {"x": "y"}) == "ran"
    assert registry.call("f", {"x": 1}).startswith("ERROR: invalid arguments")


@pytest.mark.parametrize("type_, words", [("int", ["'int'", "integer"]), ("str", ["'str'", "string"]),
                                          (["string", "nul"], ["'nul'", "null"]), ([], ["type"]),
                                          ("Integer", ["'Integer'", "integer"]), (3, ["type"])])
def test_a_misspelt_type_is_refused_at_registration(type_, words):
    with pytest.raises(ToolError) as info:
        tool_with({"type": type_}, [], name="calc")
    for word in words + ["'calc'"]:
        assert word in str(info.value), str(info.value)


def test_an_unknown_keyword_is_refused_with_the_one_meant():
    with pytest.raises(ToolError, match="'maxLenght'.*maxLength"):
        tool_with({"type": "string", "maxLenght": 3}, [])


@pytest.mark.parametrize("schema, words", [
    ({"pattern": "(unclosed"}, ["pattern"]),
    ({"minimum": "5"}, ["minimum"]),
    ({"exclusiveMinimum": True}, ["exclusiveMinimum"]),      # draft 4's boolean form
    ({"minLength": -1}, ["minLength"]),
    ({"maxItems": 1.5}, ["maxItems"]),
    ({"multipleOf": 0}, ["multipleOf"]),
    ({"uniqueItems": "yes"}, ["uniqueItems"]),
    ({"required": "a"}, ["required"]),
    ({"enum": "ab"}, ["enum"]),
    ({"anyOf": []}, ["anyOf"]),
    ({"prefixItems": []}, ["prefixItems"]),
    ({"$schema": "https://example.com/my-meta-schema"}, ["$schema"]),   # may turn vocabularies off
    ({"$ref": "#a", "$defs": {"b": {"$anchor": "a"}, "c": {"$anchor": "a"}}}, ["#a", "two schemas"]),
    ({"pattern": "a{20000}"}, ["pattern", "repeats too much"]),
    ({"properties": {f"p{i}": {"pattern": f"b{{{9000 + i}}}"} for i in range(30)}}, ["too large"]),
    ({"patternProperties": {"\\p{L}": {}}}, ["patternProperties", "p{L}"]),   # no equal in Python's re
    ({"properties": {"a": 1}}, ["properties"]),
    ({"$ref": "#/$defs/missing"}, ["$ref", "missing"]),
    ({"$ref": "https://example.com/s.json"}, ["$ref", "local"]),
    ({"$ref": "#/properties"}, ["$ref"]),                     # points to a map of schemas, not a schema
])
def test_a_keyword_with_a_value_it_cannot_have_is_refused_at_registration(schema, words):
    with pytest.raises(ToolError) as info:
        tool_with(schema, [], name="g")
    for word in words + ["'g'"]:
        assert word in str(info.value), str(info.value)


@pytest.mark.parametrize("keyword", ["prefixItems", "minContains"])
def test_a_later_keyword_that_would_loosen_a_draft_7_schema_is_refused(keyword):
    # draft 7 applies items to every item and asks contains for one match; these would loosen that
    with pytest.raises(ToolError, match=f"{keyword}.*draft 7"):
        tool_with({"prefixItems": [{}], "items": {"type": "integer"}} if keyword == "prefixItems"
                  else {"contains": {"type": "integer"}, "minContains": 0}, [],
                  **{"$schema": "http://json-schema.org/draft-07/schema#"})


def test_a_schema_that_is_not_json_is_refused_at_registration():
    looped = {"type": "object", "properties": {}}
    looped["properties"]["self"] = looped
    with pytest.raises(ToolError, match="'h'"):
        ToolRegistry().register(lambda self=None: 1, name="h", parameters=looped)
    with pytest.raises(ToolError, match="'h'"):
        ToolRegistry().register(lambda x=None: 1, name="h", parameters={"type": "object", "properties": {
            "x": {"enum": [{1, 2}]}}})


# -- pydantic's model_json_schema() ($ref, $defs, oneOf with a discriminator) --------------

# Person.model_json_schema() from pydantic 2.13 (trimmed): Address, a discriminated Cat | Dog, a recursive Tree.
PYDANTIC = {
    "$defs": {
        "Address": {"properties": {"street": {"minLength": 1, "title": "Street", "type": "string"},
                                   "zip": {"pattern": "^\\d{5}$", "title": "Zip", "type": "string"}},
                    "required": ["street", "zip"], "title": "Address", "type": "object"},
        "Cat": {"properties": {"kind": {"const": "cat", "type": "string"},
                               "lives": {"maximum": 9, "minimum": 0, "type": "integer"}},
                "required": ["kind", "lives"], "title": "Cat", "type": "object"},
        "Dog": {"properties": {"kind": {"const": "dog", "type": "string"}, "bark": {"type": "boolean"}},
                "required": ["kind", "bark"], "title": "Dog", "type": "object"},
        "Tree": {"properties": {"value": {"type": "integer"},
                                "children": {"default": [], "items": {"$ref": "#/$defs/Tree"}, "type": "array"}},
                 "required": ["value"], "title": "Tree", "type": "object"}},
    "properties": {
        "name": {"maxLength": 20, "title": "Name", "type": "string"},
        "age": {"exclusiveMaximum": 150, "exclusiveMinimum": 0, "multipleOf": 1, "type": "integer"},
        "home": {"$ref": "#/$defs/Address"},
        "work": {"anyOf": [{"$ref": "#/$defs/Address"}, {"type": "null"}], "default": None},
        "pet": {"discriminator": {"mapping": {"cat": "#/$defs/Cat", "dog": "#/$defs/Dog"}, "propertyName": "kind"},
                "oneOf": [{"$ref": "#/$defs/Cat"}, {"$ref": "#/$defs/Dog"}], "title": "Pet"},
        "tags": {"items": {"type": "string"}, "maxItems": 5, "minItems": 0, "type": "array"},
        "tree": {"anyOf": [{"$ref": "#/$defs/Tree"}, {"type": "null"}], "default": None},
        "ids": {"default": [], "items": {"type": "integer"}, "type": "array", "uniqueItems": True},
        "extra": {"additionalProperties": {"type": "integer"}, "default": {}, "type": "object"}},
    "required": ["name", "age", "home", "pet"], "title": "Person", "type": "object",
}
GOOD = {"name": "Ann", "age": 30, "home": {"street": "Main St", "zip": "12345"}, "pet": {"kind": "cat", "lives": 9},
        "tree": {"value": 1, "children": [{"value": 2}]}, "ids": [1, 2], "extra": {"a": 1}}


def person_tool(ran):
    registry = ToolRegistry()
    registry.register(lambda **kw: ran.append(kw) or "ran", name="save_person", parameters=PYDANTIC)
    return registry


def with_change(path, value):
    arguments = copy.deepcopy(GOOD)
    *parents, last = path
    target = arguments
    for key in parents:
        target = target[key]
    target[last] = value
    return arguments


@pytest.mark.parametrize("path, value", [
    (["home", "zip"], "1234x"), (["home", "street"], ""),
    (["pet"], {"kind": "cat", "lives": 10}), (["pet"], {"kind": "cow"}), (["age"], 150), (["age"], 0),
    (["name"], "x" * 21), (["tree", "children", 0, "value"], "2"), (["ids"], [1, 1]), (["extra", "b"], "x"),
    (["tags"], list("abcdef")),
])
def test_a_pydantic_schema_is_validated_through_its_references(path, value):
    """(A nested object without additionalProperties allows other keys, as JSON Schema says: only the
    arguments themselves are held to what the schema declares.)"""
    ran = []
    registry = person_tool(ran)
    assert registry.call("save_person", GOOD) == "ran"
    out = registry.call("save_person", with_change(path, value))
    assert out.startswith("ERROR: invalid arguments") and len(ran) == 1, out


def test_a_deep_recursive_value_is_validated_without_crashing():
    ran = []
    registry = person_tool(ran)
    tree = {"value": 0}
    for depth in range(1, 49):
        tree = {"value": depth, "children": [tree]}
    assert registry.call("save_person", {**GOOD, "tree": tree}) == "ran"
    bad = {"value": "x"}
    for depth in range(48):
        bad = {"value": depth, "children": [bad]}
    assert "must be integer" in registry.call("save_person", {**GOOD, "tree": bad})


def test_a_reference_cycle_that_reads_no_value_is_refused_not_crashed():
    registry = ToolRegistry()
    registry.register(lambda x=None: "ran", name="loop", parameters={
        "type": "object", "properties": {"x": {"$ref": "#/$defs/a"}},
        "$defs": {"a": {"anyOf": [{"$ref": "#/$defs/a"}, {"type": "null"}]}}})
    out = registry.call("loop", {"x": 1})
    assert out.startswith("ERROR: invalid arguments") and "inside the agent" not in out, out


def test_references_read_json_pointers_and_the_root():
    ran = []
    registry = ToolRegistry()
    registry.register(lambda **kw: ran.append(kw) or "ran", name="r", parameters={
        "type": "object", "$defs": {"a/b": {"type": "integer"}, "m~n": {"type": "string"}},
        "properties": {"i": {"$ref": "#/$defs/a~1b"}, "s": {"$ref": "#/$defs/m~0n"},
                       "same": {"$ref": "#/properties/i"}, "again": {"$ref": "#"}}})
    assert registry.call("r", {"i": 1, "s": "x", "same": 2, "again": {"i": 3}}) == "ran"
    for bad in ({"i": "1"}, {"s": 1}, {"same": "2"}, {"again": {"i": "3"}}, {"zzz": 1}):
        assert registry.call("r", bad).startswith("ERROR: invalid arguments"), bad


# -- item 10: arguments the schema does not declare never reach the function -------------------

def test_an_undeclared_argument_never_reaches_the_function():
    ran = []
    registry = ToolRegistry()
    registry.register(lambda **kw: ran.append(kw) or "ran", name="list_files", parameters={
        "type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]})
    out = registry.call("list_files", {"path": "/", "include_private": True})
    assert "unexpected parameter 'include_private'" in out and ran == []


def test_an_argument_the_schema_allows_reaches_the_function():
    ran = []
    registry = ToolRegistry()
    registry.register(lambda **kw: ran.append(kw) or "ran", name="any", parameters={
        "type": "object", "properties": {"path": {"type": "string"}}, "additionalProperties": True})
    registry.register(lambda **kw: ran.append(kw) or "ran", name="ints", parameters={
        "type": "object", "additionalProperties": {"type": "integer"}})
    assert registry.call("any", {"path": "/", "flag": True}) == "ran"
    assert registry.call("ints", {"a": 1}) == "ran" and registry.call("ints", {"a": "1"}).startswith("ERROR")
    assert ran == [{"path": "/", "flag": True}, {"a": 1}]


def test_arguments_declared_by_the_branches_of_the_top_are_declared():
    ran = []
    registry = ToolRegistry()
    registry.register(lambda **kw: ran.append(kw) or "ran", name="b", parameters={
        "type": "object", "$ref": "#/$defs/base", "$defs": {"base": {"properties": {"a": {"type": "integer"}}}},
        "anyOf": [{"properties": {"b": {"type": "string"}}}, {"properties": {"c": {"type": "string"}}}]})
    assert registry.call("b", {"a": 1, "b": "x"}) == "ran"
    assert "unexpected parameter 'd'" in registry.call("b", {"a": 1, "d": "x"})


def test_a_required_parameter_the_schema_does_not_declare_is_refused_at_registration():
    with pytest.raises(ToolError, match="'q'.*'search'|'search'.*'q'"):
        ToolRegistry().register(lambda **kw: 1, name="search", parameters={
            "type": "object", "properties": {"p": {}}, "required": ["q"]})


# -- item 11: boolean subschemas ----------------------------------------------------------

def test_boolean_subschemas_are_supported_everywhere():
    ran = []
    registry = ToolRegistry()
    registry.register(lambda **kw: ran.append(kw) or "ran", name="b", parameters={
        "type": "object", "properties": {"x": True, "never": False, "items": {"type": "array", "items": False},
                                         "obj": {"type": "object", "additionalProperties": False}}})
    Agent(MockLLM(["x"]), registry)                              # the prompt is built: no AttributeError
    registry.action_schema()
    assert registry.call("b", {"x": {"any": ["thing"]}, "items": [], "obj": {}}) == "ran"
    for bad in ({"never": 1}, {"items": [1]}, {"obj": {"a": 1}}):
        out = registry.call("b", bad)
        assert out.startswith("ERROR: invalid arguments") and "inside the agent" not in out, out
    assert len(ran) == 1


def test_a_run_with_a_boolean_subschema_calls_the_tool():
    ran = []
    registry = tool_with(True, ran)
    llm = MockLLM(['{"type": "tool_call", "name": "f", "arguments": {"x": [1]}}', '{"type": "final", "answer": "ok"}'])
    result = Agent(llm, registry).run("go")
    assert result.answer == "ok" and ran == [[1]]


# -- action_schema() and the prompt with references -----------------------------------------

def _validate(value, schema):
    return agent._Schema(schema).validate(value)


def reply(name, arguments):
    return {"type": "tool_call", "thought": "t", "name": name, "arguments": arguments}


def test_action_schema_keeps_references_resolvable_from_its_own_root():
    ran = []
    registry = person_tool(ran)
    registry.register(lambda **kw: "ok", name="other", parameters={
        "type": "object", "properties": {"a": {"$ref": "#/$defs/Address"}},
        "$defs": {"Address": {"type": "integer"}}})           # the same name, another schema
    schema = registry.action_schema()
    assert _validate(reply("save_person", GOOD), schema) is not None
    assert _validate(reply("other", {"a": 3}), schema) is not None
    for bad in [reply("save_person", with_change(["home", "zip"], "x")), reply("other", {"a": "x"})]:
        with pytest.raises(agent._ArgumentError):
            _validate(bad, schema)
    text = json.dumps(schema)
    refs = set(re.findall(r'"\$ref": "([^"]*)"', text))
    assert refs and all(ref.startswith("#/$defs/") and ref[8:] in schema["$defs"] for ref in refs)
    # llama.cpp names a grammar rule by a reference's last segment, with [^a-zA-Z0-9-] replaced: keep them apart
    rules = [re.sub(r"[^a-zA-Z0-9-]+", "-", name) for name in schema["$defs"]]
    assert len(set(rules)) == len(rules)


def test_a_tool_without_references_is_embedded_as_it_is():
    registry = tool_with({"type": "string"}, [])
    branch = registry.action_schema()["anyOf"][0]
    assert branch["properties"]["arguments"] is registry.get("f").parameters
    assert "$defs" not in registry.action_schema()


def test_the_prompt_shows_a_schema_with_references():
    registry = person_tool([])
    prompt = agent._render_prompt(None, registry)
    assert '"$defs"' in prompt and "save_person" in prompt


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner,
                                                                                max_size=3), max_leaves=10))
def test_any_argument_against_the_pydantic_schema_is_refused_or_matches_it(value):
    """Whatever the value, the call either runs with arguments the schema accepts, or is refused, never crashes."""
    ran = []
    out = person_tool(ran).call("save_person", {**GOOD, "tree": value})
    assert out == "ran" or out.startswith("ERROR: invalid arguments"), out
    if ran:
        assert value is None or (isinstance(value, dict) and "value" in value)


# -- pattern means what it means in JSON Schema (ECMA-262), not what Python's re would read ----------

@pytest.mark.parametrize("pattern, value, ok", [
    ("^[a-z]+$", "rm\n", False),          # Python's $ also matches before a final line break
    ("^[a-z]+$", "rm", True),
    ("^\\d{5}$", "١٢٣٤٥", False),          # Python's \d takes any script's digits
    ("^\\d{5}$", "12345", True),
    ("^[\\w.-]+$", "é.txt", False),        # and its \w any script's letters
    ("^[\\w.-]+$", "a_b.txt", True),
    ("^\\D+$", "abc", True),
    ("\\$HOME", "$HOME", True),
    ("[$]", "$", True),
    ("cat", "concatenate", True),          # unanchored: a search, not a full match
])
def test_a_pattern_is_read_as_json_schema_means_it(pattern, value, ok):
    ran = []
    out = tool_with({"type": "string", "pattern": pattern}, ran).call("f", {"x": value})
    assert (out == "ran") is ok, out


# -- bounded work: shared references and backtracking patterns ------------------------------

def shared_refs(levels, combinator, leaf):
    """d0 applies d1 twice, d1 applies d2 twice, ...: 2**levels paths through a schema of `levels` lines."""
    def uses(i):
        ref = {"$ref": f"#/$defs/d{i + 1}"}
        return {"not": {"not": ref}} if combinator == "not" else (
            {"if": ref, "then": ref, "else": ref} if combinator == "if" else {combinator: [ref, ref]})
    defs = {f"d{i}": uses(i) for i in range(levels)}
    defs[f"d{levels}"] = leaf
    return {"type": "object", "properties": {"x": {"$ref": "#/$defs/d0"}}, "$defs": defs}


def nodes(schema):
    """The subschemas (objects) in a schema's JSON: its size as validation walks it."""
    if isinstance(schema, list):
        return sum(nodes(item) for item in schema)
    return 1 + sum(nodes(value) for value in schema.values()) if isinstance(schema, dict) else 0


def positions(value):
    """The places in a value: each item, each key (propertyNames checks keys) and the value itself."""
    if isinstance(value, list):
        return 1 + sum(positions(item) for item in value)
    return 1 + sum(1 + positions(item) for item in value.values()) if isinstance(value, dict) else 1


def checks(parameters, arguments):
    """How many times validating arguments checks a subschema against a value: the work, counted, not timed."""
    schema, memo = agent._Schema(parameters), {}
    try:
        schema._check(arguments, schema.root, "", memo, 0)
    except (agent._ArgumentError, ValueError):
        pass
    return memo[None]


@pytest.mark.parametrize("combinator", ["allOf", "anyOf", "oneOf", "not", "if"])
def test_references_that_share_definitions_cost_the_schemas_size_not_its_paths(combinator):
    parameters = shared_refs(40, combinator, {"type": "integer", "minimum": 0})
    for x in (5, -5, "five", [1, 2]):
        assert checks(parameters, {"x": x}) <= 4 * nodes(parameters) * positions({"x": x})
    registry = ToolRegistry()
    registry.register(lambda x: "ran", name="deep", parameters=parameters)
    assert registry.action_schema()["$defs"]         # the action schema copies each definition once
    expected = "ERROR" if combinator == "oneOf" else "ran"   # 5 matches both of oneOf's branches
    assert registry.call("deep", {"x": 5}).startswith(expected)
    assert registry.call("deep", {"x": "five"}).startswith("ERROR")


def test_nested_branches_that_each_collect_what_they_evaluate_cost_their_size():
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    for _ in range(30):   # each level checks its branch again to learn what it evaluated
        schema = {"anyOf": [schema, {"type": "null"}], "unevaluatedProperties": False}
    parameters = {"type": "object", "properties": {"x": schema}}
    for x in ({"a": 1}, {"a": 1, "b": 2}):
        assert checks(parameters, {"x": x}) <= 4 * nodes(parameters) * positions({"x": x})


def test_a_nullable_branch_of_any_of_takes_null():
    ran = []
    registry = tool_with({"anyOf": [{"type": "string", "nullable": True}, {"type": "integer"}]}, ran)
    assert registry.call("f", {"x": None}) == "ran" and registry.call("f", {"x": 1}) == "ran"
    assert registry.call("f", {"x": [1]}).startswith("ERROR: invalid arguments") and ran == [None, 1]


def test_a_backtracking_pattern_is_searched_in_linear_time():
    # Python's re takes 2**41 steps on the 42 characters below; bench/schemas.py times these searches
    search, _ = agent._regex(r"^(\w+\s?)*$")
    assert not search("a" * 41 + "!") and search("ab cd ef") and not search("a b" * 5000 + "!")
    registry = ToolRegistry()
    registry.register(lambda x: "ran", name="p", parameters={
        "type": "object", "properties": {"x": {"type": "string", "pattern": r"^(\w+\s?)*$"}}})
    assert registry.call("p", {"x": "a" * 41 + "!"}).startswith("ERROR: invalid arguments")
    assert registry.call("p", {"x": "a" * 41}) == "ran"


def test_a_search_that_would_meet_too_many_states_refuses_the_argument_and_says_why():
    registry = ToolRegistry()
    registry.register(lambda x: "ran", name="p", parameters={   # a new set of states at almost every character
        "type": "object", "properties": {"x": {"type": "string", "pattern": "(a|b)*a(a|b){20}c"}}})
    # the search stops at a count of states, not a time: bench/schemas.py times it (the slowest of
    # these took 5.4 s beside two llama.cpp servers and a second run of this suite)
    windows = "".join(format(i, "021b") for i in range(10_000)).translate({48: "a", 49: "b"})
    with pytest.raises(ValueError, match="too long"):
        agent._regex("(a|b)*a(a|b){20}c")[0](windows)
    out = registry.call("p", {"x": windows})
    assert out.startswith("ERROR: invalid arguments") and "too long" in out, out
    registry.register(lambda x: "ran", name="keys", parameters={   # and so for a name patternProperties reads
        "type": "object", "properties": {"x": {"patternProperties": {"(a|b)*a(a|b){20}c": {}}}}})
    out = registry.call("keys", {"x": {windows: 1}})
    assert out.startswith("ERROR: invalid arguments") and "too long" in out, out
    registry.register(lambda x: "ran", name="negated", parameters={   # a search that gave up is no mismatch
        "type": "object", "properties": {"x": {"not": {"pattern": "(a|b)*a(a|b){20}c"}}}})
    out = registry.call("negated", {"x": windows})
    assert out.startswith("ERROR: invalid arguments") and "too long" in out, out


ATOMS = st.sampled_from(["a", "b", ".", "\\w", "\\s", "\\d", "[ab]", "[^a]", "\\b", "^", "$"])


@st.composite
def patterns(draw, depth=0):
    parts = []
    for _ in range(draw(st.integers(1, 3))):
        atom = f"({draw(patterns(depth + 1))})" if depth < 2 and draw(st.booleans()) else draw(ATOMS)
        quantifier = "" if atom in ("^", "$", "\\b") else draw(st.sampled_from(["", "*", "+", "?", "{1,3}"]))
        parts.append(atom + quantifier)
    branch = "".join(parts)
    return branch + "|" + draw(patterns(depth + 1)) if depth < 2 and draw(st.integers(0, 4)) == 0 else branch


@given(patterns(), st.text("ab !1", max_size=10), st.text("ab !1", min_size=500, max_size=2000))
def test_any_pattern_searches_as_re_does_on_plain_text_and_never_hangs(pattern, short, long):
    # on these characters ECMA's and Python's meanings agree, and 10 characters keep re fast
    search, _ = agent._regex(pattern)
    assert search(short) == bool(re.search(pattern, short)), (pattern, short)
    try:
        search(long)   # ends: the search is bounded by a count of states (bench/schemas.py times it)
    except ValueError:   # the search's own bound: the argument is refused, saying so
        pass


LEAVES = st.one_of(st.just({"type": "integer"}), st.just({"type": "string", "maxLength": 3}),
                   patterns().map(lambda p: {"type": "string", "pattern": p}),
                   st.just({"type": "array", "items": {"type": "integer"}}),
                   st.just({"type": "object", "propertyNames": {"pattern": "^[a-z]+$"},
                            "additionalProperties": {"type": "integer"}}))
VALUES = st.recursive(st.one_of(st.integers(-3, 3), st.text("ab !", max_size=6), st.none()),
                      lambda inner: st.one_of(st.lists(inner, max_size=3),
                                              st.dictionaries(st.text("ab", max_size=2), inner, max_size=3)),
                      max_leaves=8)


@given(st.integers(1, 30), st.lists(st.sampled_from(["allOf", "anyOf", "oneOf", "not", "if"]), min_size=1),
       LEAVES, VALUES)
def test_any_schema_with_shared_references_validates_in_work_linear_in_its_size(levels, combinators, leaf, x):
    parameters = shared_refs(levels, combinators[0], leaf)
    for i, combinator in enumerate(combinators[1:levels]):   # mixed combinators, still shared
        parameters["$defs"][f"d{i + 1}"] = shared_refs(levels, combinator, leaf)["$defs"][f"d{i + 1}"]
    assert checks(parameters, {"x": x}) <= 4 * nodes(parameters) * positions({"x": x})
    registry = ToolRegistry(default_timeout=None)
    registry.register(lambda x=None: "ran", name="t", parameters=parameters)
    out = registry.call("t", {"x": x})
    assert out == "ran" or out.startswith("ERROR: invalid arguments"), out

"""Schemas as libraries generate them register and are enforced; patterns mean what ECMA-262 means.

tests/data/generated_schemas.json holds each library's own output (its "source" names the version
and the call), with arguments it accepts and arguments it refuses.
"""
import json
import os

import pytest

from agent import ToolRegistry

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "generated_schemas.json")
GENERATED = json.load(open(DATA, encoding="utf-8"))


def tool(parameters, ran):
    registry = ToolRegistry(default_timeout=None)
    registry.register(lambda **kw: ran.append(kw) or "ran", name="t", parameters=parameters)
    return registry


@pytest.mark.parametrize("name", sorted(GENERATED))
def test_a_generated_schema_registers_and_is_enforced(name):
    case, ran = GENERATED[name], []
    registry = tool(case["schema"], ran)
    for arguments in case["valid"]:
        assert registry.call("t", arguments) == "ran", (name, arguments)
    for arguments in case["invalid"]:
        out = registry.call("t", arguments)
        assert out.startswith("ERROR: invalid arguments"), (name, arguments, out)
    assert len(ran) == len(case["valid"])


def test_a_tuple_of_integers_given_as_floats_reaches_the_tool_as_integers():
    ran = []
    tool(GENERATED["pydantic_tuple"]["schema"], ran).call("t", {"point": [1.0, "a"]})
    assert ran == [{"point": [1, "a"]}] and type(ran[0]["point"][0]) is int


@pytest.mark.parametrize("pattern, value, ok", [
    ("^.{1,200}$", "a\rb", False),          # ECMA's . matches no line terminator
    ("^.{1,200}$", "a\u2028b", False),
    ("^.{1,200}$", "a\u2029b", False),
    ("^.{1,200}$", "a b", True),
    ("^\\S+$", "a\ufeffb", False),           # U+FEFF is ECMA white space, not Python's
    ("^\\s$", "\ufeff", True),
    ("^\\s$", "\x1c", False),               # Python's \s takes the separators \x1c-\x1f
    ("^[^\\W_]+$", "\u00e9", False),         # "ASCII letters and digits": no é
    ("^[^\\W_]+$", "\u0430", False),         # nor Cyrillic а
    ("^[^\\W_]+$", "abc123", True),
    ("^[\\d]+$", "\u0661", False),
    ("\\bcat\\b", "\u00e9cat", True),        # é is no word character to ECMA: a boundary before c
    ("\\Bcat", "\u00e9cat", False),
    ("^\\cC$", "\x03", True),               # \cX, a control character
    ("^a|b$", "xb", True),
])
def test_a_pattern_means_what_ecma_262_means(pattern, value, ok):
    ran = []
    out = tool({"type": "object", "properties": {"x": {"type": "string", "pattern": pattern}}}, ran).call(
        "t", {"x": value})
    assert (out == "ran") is ok, out


@pytest.mark.parametrize("pattern", ["\\p{L}+", "^(a)\\1$", "(?=a)a", "(?i)a", "[]a]", "[^]", "\\u{1F600}",
                                     "(?<name>a)", "a\\Z"])
def test_a_pattern_that_python_cannot_read_as_ecma_means_it_is_refused_at_registration(pattern):
    with pytest.raises(Exception) as info:
        tool({"type": "object", "properties": {"x": {"type": "string", "pattern": pattern}}}, [])
    assert "'pattern'" in str(info.value) and "'t'" in str(info.value), str(info.value)

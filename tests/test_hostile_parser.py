"""parse_action under hostile and careless replies: no guessed call, no silently changed argument.

Each class of defect from issues #10 and #11 is reproduced by its example first, then attacked
with a property test. PARSER_EXAMPLES=2500 runs the property tests deeper than the default.
"""
import ast
import json
import os
import re

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from agent import ActionFormatError, _ActionScanner, parse_action

EXAMPLES = int(os.environ.get("PARSER_EXAMPLES", "0"))
DEEP = settings(max_examples=EXAMPLES or 200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

CALL = '{"type": "tool_call", "name": "read_file", "arguments": {"path": "/data/x"}}'
FINAL = '{"type": "final", "answer": "done"}'


def refused(reply, *words):
    """parse_action refuses reply with a message holding each of words; the message is returned."""
    with pytest.raises(ActionFormatError) as info:
        parse_action(reply)
    for word in words:
        assert word in str(info.value), str(info.value)
    return str(info.value)


def meaning(action):
    return action.kind, action.name, action.arguments, action.answer


# -- issue #10.1: a trailing comma before a line break or indentation --------------------

PRETTY_TRAILING = '''{"type": "tool_call", "name": "delegate", "arguments": {
    "task": "…",
    "context": {"stock": "SPAL", "horizon": "long",
   }
}}'''


@pytest.mark.parametrize("reply", [
    PRETTY_TRAILING,
    '{"type": "final", "answer": "x",\n}',
    '{"type": "final", "answer": "x",\r\n\t  }',
    '{"type": "tool_call", "name": "f", "arguments": {"ids": [1, 2,\n    ],\n  },\n}',
    '{\\n  "type": "final",\\n  "answer": "x",\\n}',             # literal \n between tokens, then the comma
    "{'type': 'final', 'answer': 'x',\n}",
])
def test_trailing_comma_before_whitespace_is_repaired(reply):
    action = parse_action(reply)
    assert "trailing_comma" in action.repairs
    assert action.kind in ("tool_call", "final")


def test_pretty_printed_trailing_commas_keep_the_arguments():
    action = parse_action(PRETTY_TRAILING)
    assert action.arguments == {"task": "…", "context": {"stock": "SPAL", "horizon": "long"}}


def test_a_comma_with_nothing_before_it_is_still_refused():
    refused('{"type": "final", "answer": "x", ,\n}', "invalid")
    refused('{"type": "final", "answer": [,\n]}', "invalid")


# -- issue #10.2: stray quotes around the reply --------------------------------------------

@pytest.mark.parametrize("reply, repairs", [
    ('"[{"type": "tool_call", "name": "read_file", "arguments": {"path": "/data/x"}}]"', ["stray_quote", "array"]),
    ('"' + CALL + '"', ["stray_quote"]),
    ('  "' + CALL + '"\n', ["stray_quote"]),
    ('```json\n"' + CALL + '"\n```', ["code_fence", "stray_quote"]),
    ('Sure: "' + CALL + '"', ["prose"]),
])
def test_stray_quotes_around_the_action_are_packaging(reply, repairs):
    action = parse_action(reply)
    assert meaning(action) == ("tool_call", "read_file", {"path": "/data/x"}, None)
    assert all(tag in action.repairs for tag in repairs), action.repairs
    assert "json_string" not in action.repairs


def test_a_reply_that_is_one_json_string_is_still_decoded():
    assert "json_string" in parse_action(json.dumps(CALL)).repairs
    assert "json_string" in parse_action("Here: " + json.dumps(CALL)).repairs


@pytest.mark.parametrize("reply", ['"{"type": "final", "answer": "hi"', '"[{"type": "final"', '{"type": "final"'])
def test_cut_off_is_said_only_when_the_text_ends_inside_the_object(reply):
    refused(reply, "not complete")


@DEEP
@given(st.sampled_from([CALL, FINAL, "[" + CALL + "]"]), st.text(max_size=30), st.text(max_size=30),
       st.sampled_from(['"', "'", "", "`"]))
def test_a_complete_action_is_never_called_cut_off(action, before, after, quote):
    assume("{" not in before and "[" not in before and "<think" not in before.lower())
    try:
        parse_action(before + quote + action + quote + after)
    except ActionFormatError as exc:
        assert "cut off" not in str(exc) and "not complete" not in str(exc)


# -- issue #10.3 and #11.13: the escape rule -----------------------------------------------

@pytest.mark.parametrize("reply, answer", [
    ('{"type": "final", "answer": "It\\\'s done"}', "It's done"),
    ('{"type": "final", "answer": "file\\_name"}', "file_name"),
    ('[{"type": "final", "answer": "don\\\'t"}]', "don't"),
    ('```json\n{"type": "final", "answer": "it\\\'s"}\n```', "it's"),
    ("{'type': 'final', 'answer': 'it\\'s \\x41 \\u00e9 \\101'}", "it's A é A"),
])
def test_escapes_that_mean_the_character_itself_are_repaired(reply, answer):
    action = parse_action(reply)
    assert action.answer == answer


@pytest.mark.parametrize("reply", [
    '{"type": "tool_call", "name": "sh", "arguments": {"cmd": "ls \\\n-la"}}',        # backslash, raw newline
    '{"type": "tool_call", "name": "sh", "arguments": {"cmd": "ls \\\t-la"}}',        # backslash, raw tab
    '{"type": "tool_call", "name": "grep", "arguments": {"pattern": "\\.py$"}}',
    '{"type": "tool_call", "name": "sh", "arguments": {"cmd": "echo \\$HOME"}}',
    '{"type": "final", "answer": "Use \\*bold\\*"}',
    '{"type": "final", "answer": "C:\\101", "x": True}',                                # Python escape, double quotes
    '{"type": "final", "answer": "\\x41", "x": None}',
    '{"type": "final", "answer": "C:\\Users"}',
])
def test_any_other_backslash_is_refused_asking_for_two(reply):
    refused(reply, "\\\\")


def test_a_raw_newline_alone_is_still_repaired():
    assert parse_action('{"type": "final", "answer": "a\nb\\\\"}').answer == "a\nb\\"


JSON_ESCAPES = set('"\\/bfnrt')


@DEEP
@given(st.characters(blacklist_categories=("Cs",)), st.sampled_from(['"', "'"]))
def test_every_backslash_either_means_one_thing_or_is_refused(char, quote):
    body = "a\\" + char + "b"
    reply = '{"type": "final", "answer": ' + quote + body + quote + "}"
    if char in "_'":
        assert parse_action(reply).answer == "a" + char + "b"
    elif quote == '"' and char in JSON_ESCAPES:
        assert parse_action(reply).answer == json.loads('"' + body + '"')
    elif quote == "'" and char in "\\\"abfnrtv\n01234567xNuU":  # Python's own escapes
        try:
            expected = ast.literal_eval("'" + body + "'")
        except (SyntaxError, ValueError):
            refused(reply, "could not be read")
        else:
            assert parse_action(reply).answer == expected
    else:
        refused(reply, "\\\\")


# -- issue #11.12: an unclosed think block holds no action --------------------------------

@pytest.mark.parametrize("reply", [
    '<think>Option 1: {"type": "tool_call", "name": "delete_file", "arguments": {"path": "/"}} -- no wait',
    '<think>Option 1: {"type": "tool_call", "name": "delete_file", "arguments": {"path": "/"}}',
    'Plan. <thinking>{"type": "final", "answer": "draft"}',
    '<reasoning>\n' + CALL,
])
def test_a_draft_inside_an_unclosed_think_block_is_never_run(reply):
    message = refused(reply, "never closes")
    assert "cut off" not in message


def test_a_refused_reply_stays_refused_when_split_by_the_scanner():
    """The streaming client's cut never turns a refusal into an accepted action that differs."""
    reply = '<think>' + CALL
    scanner = _ActionScanner()
    assert scanner.feed(reply) is None and scanner.opens_with_action is None
    assert re.search("never closes", refused(reply))

"""parse_action under hostile and careless replies: no guessed call, no silently changed argument.

Each class of defect from issues #10 and #11 is reproduced by its example first, then attacked
with a property test. PROPERTY_EXAMPLES=2500 runs the property tests deeper than the default (conftest.py).
"""
import ast
import json
import re

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import agent
from agent import ActionFormatError, _ActionScanner, _Keys, parse_action

DEEP = settings(suppress_health_check=[HealthCheck.too_slow])

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


@pytest.mark.parametrize("before", ["", "```json\n", "<tool_call>"])
def test_a_json_string_action_is_decoded_before_a_brace_in_the_tail_can_close_it(before):
    # Found by the packaging property test: the scanner read the escaped quotes as strings
    # and closed the "action" at the observation's brace.
    action = parse_action(before + json.dumps(CALL) + "\n[OBSERVATION] }")
    assert meaning(action) == meaning(parse_action(CALL))
    assert {"json_string", "observation_tail"} <= set(action.repairs)


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


# -- issue #11.9: duplicate keys ----------------------------------------------------------

DUPLICATE_KEYS = [  # (reply, the key it holds twice with different values)
    ('{"type": "tool_call", "name": "read_file", "name": "delete_file", "arguments": {"path": "/x"}}', "name"),
    ('{"type": "tool_call", "name": "read_file", "arguments": {"path": "/data/x", "path": "/"}}', "path"),
    ('{"type": "final", "answer": "yes", "answer": "no"}', "answer"),
    ('{"type": "final", "type": "tool_call", "name": "f", "answer": "x"}', "type"),
    ("{'type': 'tool_call', 'name': 'f', 'arguments': {'a': {'b': 1, 'b': 2}}}", "b"),
    ('{"type": "tool_call", "name": "f", "arguments": "{\\"p\\": 1, \\"p\\": 2}"}', "p"),
    ('[{"type": "final", "answer": 1, "answer": true}]', "answer"),
    # a "thought" twice is one thought only where it is the action's own, and text
    ('{"type": "tool_call", "name": "f", "arguments": {"thought": "a", "thought": "b"}}', "thought"),
    ('{"type": "tool_call", "name": "f", "arguments": "{\\"thought\\": \\"a\\", \\"thought\\": \\"b\\"}"}',
     "thought"),
    ('{"type": "final", "thought": "a", "thought": {"b": 1}, "answer": "x"}', "thought"),
    ('{"type": "final", "thought": "a", "answer": {"thought": "b", "thought": "c"}}', "thought"),
]


json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.sampled_from([0.5, 1.0, 2.0]),
                         st.text(max_size=5))
json_values = st.recursive(json_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=4), inner, min_size=1, max_size=3)), max_leaves=6)


def objects_in(value, path=()):
    """Every object in value (with its path), the value itself first."""
    if isinstance(value, dict):
        yield path, value
        for key, item in value.items():
            yield from objects_in(item, path + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from objects_in(item, path + (index,))


def dump_with_duplicate(value, target, key, extra):
    """JSON text of value, with key written a second time (holding extra) in the object at path target."""
    def inner(step, item):
        return dump_with_duplicate(item, target[1:] if target and target[0] == step else None, key, extra)
    if isinstance(value, dict):
        pairs = [f"{json.dumps(k)}: {inner(k, v)}" for k, v in value.items()]
        if target == ():
            pairs.append(f"{json.dumps(key)}: {json.dumps(extra)}")
        return "{" + ", ".join(pairs) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(inner(i, v) for i, v in enumerate(value)) + "]"
    return json.dumps(value)


@DEEP
@given(st.dictionaries(st.from_regex(r"[a-z]{1,6}", fullmatch=True), json_values, min_size=1, max_size=3),
       st.data())
def test_a_duplicate_key_at_any_depth_is_refused_unless_identical(arguments, data):
    action = {"type": "tool_call", "name": "f", "arguments": arguments}
    path, obj = data.draw(st.sampled_from(list(objects_in(action))))
    key = data.draw(st.sampled_from(sorted(obj)))
    extra = data.draw(json_values)
    reply = dump_with_duplicate(action, path, key, extra)
    same = json.dumps(extra, sort_keys=True) == json.dumps(obj[key], sort_keys=True)
    if same:
        assert meaning(parse_action(reply)) == ("tool_call", "f", arguments, None)
    else:
        refused(reply, json.dumps(key, ensure_ascii=False), "twice")


# -- issue #11.10: a second action, recognised by what it is ------------------------------

SECOND_ACTIONS = [
    '{"id": 2, "type": "tool_call", "name": "delete_file", "arguments": {"path": "/"}}',
    '{"reasoning": "then answer", "type": "final", "answer": "42"}',
    '{"x": 1, "tool": "delete_file", "args": {"path": "/"}}',
    '{"Name": "delete_file", "Arguments": {"path": "/"}}',
    '[{"id": 1, "name": "delete_file", "arguments": {}}]',
    '{"id": 3, "name": "delete_file", "arguments": {"path": "/"',                      # cut off
    '{"id": 4, "name": "delete_file" "arguments": {}}',                                 # broken
]


@pytest.mark.parametrize("second", SECOND_ACTIONS)
def test_a_second_action_after_an_opening_one_is_not_run_and_is_tagged(second):
    action = parse_action(CALL + "\n" + second)
    assert (action.name, action.arguments) == ("read_file", {"path": "/data/x"})
    assert "extra_actions" in action.repairs


@pytest.mark.parametrize("second", SECOND_ACTIONS)
def test_a_second_action_after_prose_is_refused(second):
    refused("I will read it.\n" + CALL + "\n" + second, "one action per reply")


@pytest.mark.parametrize("after", ['Note: sets look like {1, 2}.', 'The file has {"size": 3, "lines": [1]}.',
                                   "Braces { and ] stray."])
def test_objects_that_are_not_actions_are_prose(after):
    for reply in (CALL + "\n" + after, "Reading.\n" + CALL + "\n" + after):
        action = parse_action(reply)
        assert action.name == "read_file" and "extra_actions" not in action.repairs


action_keys = st.sampled_from(["type", "name", "arguments", "answer", "tool", "action", "args", "input",
                               "tool_name", "function", "final_answer", "Arguments", "Name"])
noise = st.dictionaries(st.from_regex(r"(id|step|reasoning|meta|n)[0-9]?", fullmatch=True),
                        st.one_of(st.integers(0, 9), st.text(max_size=8)), max_size=3)


@DEEP
@given(noise, action_keys, st.from_regex(r"[a-z_]{1,10}", fullmatch=True), st.booleans(), st.booleans())
def test_any_second_action_is_seen_whatever_key_it_opens_with(before, key, value, prose_first, indent):
    second = dict(before)
    second[key] = value
    text = json.dumps(second, indent=2 if indent else None)
    reply = ("Let me check.\n" if prose_first else "") + CALL + "\n" + text
    if prose_first:
        refused(reply, "one action per reply")
    else:
        assert "extra_actions" in parse_action(reply).repairs


# -- issue #11.11: arguments under a near-miss key ---------------------------------------

@pytest.mark.parametrize("key", ["Arguments", "argument", "Args", "kwargs", "inputs", "tool_args", "arguments ",
                                 "ARGUMENTS", "params", "payload", "data"])
@pytest.mark.parametrize("arguments", ["", ', "arguments": {}', ', "arguments": null', ', "arguments": ""'])
def test_arguments_under_another_key_are_refused_naming_arguments(key, arguments):
    reply = '{"type": "tool_call", "name": "read_file"' + arguments + ', ' + json.dumps(key) + ': {"path": "/x"}}'
    refused(reply, 'use "arguments" instead of ' + json.dumps(key))


def test_extra_keys_beside_real_arguments_or_a_final_answer_stay_ignored():
    action = parse_action('{"type": "tool_call", "name": "f", "arguments": {"a": 1}, "meta": {"b": 2}}')
    assert action.arguments == {"a": 1}
    assert parse_action('{"type": "final", "answer": "x", "meta": {"a": 1}}').answer == "x"
    assert parse_action('{"type": "tool_call", "name": "f", "meta": {}, "note": null, "answer": ""}').arguments == {}


@pytest.mark.parametrize("reply, words", [
    ('{"type": "tool_call", "Name": "f", "arguments": {}}', 'use "name" instead of "Name"'),
    ('{"type": "final", "Answer": "x"}', 'use "answer" instead of "Answer"'),
    ('{"Type": "final", "Answer": "x"}', 'use "answer" instead of "Answer"'),
])
def test_a_misspelled_key_is_named(reply, words):
    refused(reply, words)


def refused_beside_a_call(obj, key):
    """A value under key beside a call without arguments is refused, naming "arguments" and the key; under a
    look-alike of "answer" ("output", "Response") the answer-and-call check refuses it first."""
    if agent._Keys.meant(key) == "answer":
        refused(json.dumps(obj), "both an answer and a tool call")
    else:
        refused(json.dumps(obj), '"arguments"', json.dumps(key, ensure_ascii=False)[:20])


@pytest.mark.parametrize("key", ["index", "INDEX", "id", "call_id"])
def test_an_object_under_a_call_metadata_key_is_not_metadata(key):
    """OpenAI's id, index and call_id are text or numbers; an object there may be the arguments."""
    refused_beside_a_call({"type": "tool_call", "name": "f", "arguments": None, key: {"x": 1}}, key)
    assert parse_action(json.dumps({"type": "tool_call", "name": "f", key: 0})).arguments == {}


@DEEP
@given(st.text(min_size=1, max_size=12).filter(lambda k: k not in ("type", "name", "arguments", "answer", "thought")),
       st.dictionaries(st.text(max_size=4), st.integers(), min_size=1, max_size=2),
       st.sampled_from([None, {}, ""]), st.booleans())
def test_an_object_under_any_other_key_is_never_dropped(key, value, arguments, missing):
    obj = {"type": "tool_call", "name": "f"}
    if not missing:
        obj["arguments"] = arguments
    obj[key] = value
    refused_beside_a_call(obj, key)


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


# -- numbers that are not finite -----------------------------------------------------------

@pytest.mark.parametrize("number", ["1e999", "-1e999", "NaN", "Infinity", "-Infinity", "1E400"])
@pytest.mark.parametrize("template", [
    '{"type": "final", "answer": %s}',
    '{"type": "tool_call", "name": "f", "arguments": {"x": [1, {"y": %s}]}}',
    '{"type": "final", "answer": "a", "thought": %s}',
    '{"type": "final", "answer": "a", "confidence": %s, "other": True}',
    '{"type": "tool_call", "name": "f", "arguments": "{\\"x\\": %s}"}',
])
def test_a_number_that_is_not_finite_is_refused_anywhere(number, template):
    refused(template % number, "finite")


# -- review 1.6: the work after the action grows with the reply, not with its square ----------

def serialised_while_parsing(reply, monkeypatch):
    """How many characters parse_action serialises (json.dumps) while reading reply."""
    import agent
    total, dumps = [0], agent.json.dumps

    def counting(*args, **kwargs):
        text = dumps(*args, **kwargs)
        total[0] += len(text)
        return text
    monkeypatch.setattr(agent.json, "dumps", counting)
    try:
        parse_action(reply)
    except ActionFormatError:
        pass
    return total[0]


@pytest.mark.parametrize("follow", ['{"name": "a"}', '{"type": "final", "answer": "x"}'])
@pytest.mark.parametrize("array", [False, True])
def test_a_big_action_is_compared_once_however_many_objects_follow(follow, array, monkeypatch):
    big = '{"type": "final", "answer": "x", "k": [' + ",".join(["0"] * 5000) + "]}"
    reply = f"[{big}, {', '.join([follow] * 500)}]" if array else big + follow * 500
    assert serialised_while_parsing(reply, monkeypatch) < 4 * len(reply)


# -- review 1.1: only known tokens are packaging; think blocks nest ---------------------------

DELETE = '{"type": "tool_call", "name": "delete_file", "arguments": {"path": "/"}}'


@pytest.mark.parametrize("reply", [
    "<draft>" + DELETE + "</draft>" + CALL,
    "<thinking>ok</thinking><reflection>" + DELETE + " wrong</reflection><output>" + CALL + "</output>",
    "<example>" + DELETE + "</example>\nSo: " + CALL,
    "<scratchpad>\n" + DELETE + "\n</scratchpad>\n" + CALL,
    "<|im_start|>assistant\n<draft>" + DELETE + "</draft>" + CALL,
    "[EXAMPLE] " + DELETE + " [/EXAMPLE] " + CALL,
])
def test_a_draft_in_an_unknown_tag_is_prose_so_two_actions_are_refused(reply):
    refused(reply, "two different actions")
    assert _ActionScanner().feed(reply) is None


def test_think_blocks_nest_so_a_draft_inside_is_never_run():
    reply = "<think>Format: <think>...</think> " + DELETE + " -- no.</think>" + CALL
    assert meaning(parse_action(reply)) == meaning(parse_action(CALL))
    scanner = _ActionScanner()
    assert scanner.feed(reply) == len(reply)
    refused("<think>a <think>b</think> " + DELETE, "never closes")
    refused("Plan. <think>a <think>b</think> " + DELETE + " more", "never closes")


@pytest.mark.parametrize("token", ["<tool_call>", "</s>", "<s>", "[TOOL_CALLS]", "<|python_tag|>", "<|eot_id|>",
                                   "<|im_start|>assistant\n", "<｜Assistant｜>", "json\n", "<function_call>",
                                   "<tool_calls>", "<functioncall>", "[INST]", "</think>"])
def test_known_tokens_stay_packaging(token):
    reply = token + CALL + "\n" + DELETE
    action = parse_action(reply)
    assert action.name == "read_file" and "extra_actions" in action.repairs
    assert _ActionScanner().feed(reply) == len(token) + len(CALL)


tag_names = st.from_regex(r"[A-Za-z][\w-]{0,11}", fullmatch=True).filter(
    lambda t: t.lower() not in ("s", "think", "thinking", "reasoning", "tool_call", "tool_calls", "function_call",
                                "functioncall"))


@DEEP
@given(st.lists(st.one_of(tag_names.map(lambda t: f"<{t}>"), tag_names.map(lambda t: f"</{t}>"),
                          st.sampled_from(["<think>x</think>", "<|eot_id|>", " ", "\n", "<tool_call>"])),
                max_size=3),
       tag_names, st.sampled_from(["", "\n", " -- no. "]), st.booleans())
def test_a_draft_inside_any_unknown_tag_is_never_run(lead, tag, gap, nested_think):
    draft = f"<{tag}>" + DELETE + gap + f"</{tag}>"
    if nested_think:
        draft = "<think>x <think>y</think> " + DELETE + gap + "</think>"
    reply = "".join(lead) + draft + "\n" + CALL
    try:
        action = parse_action(reply)
    except ActionFormatError:
        return
    assert action.name == "read_file"
    cut = _ActionScanner().feed(reply)
    assert cut is None or meaning(parse_action(reply[:cut])) == meaning(action)


# -- review 1.2: one key under two spellings the parser reads as one ---------------------------

SPELLED_TWICE = [  # (reply, the key it holds under two spellings with different values)
    ('{"type": "tool_call", "name": "read_file", "Name": "delete_file", "arguments": {}}', "name"),
    ('{"type": "tool_call", "name": "rm", "arguments": {"path": "/tmp/x"}, "arguments ": {"path": "/"}}', "arguments"),
    ('{"type": "final", "answer": "yes", "ANSWER": "no"}', "answer"),
    ('{"type": "final", "Type": "tool_call", "name": "f", "answer": "x"}', "type"),
    ("{'name': 'read_file', ' name ': 'delete_file', 'arguments': {}}", "name"),
]


@pytest.mark.parametrize("reply, key", DUPLICATE_KEYS + SPELLED_TWICE)
def test_one_key_given_twice_with_different_values_is_refused_naming_the_key(reply, key):
    refused(reply, f'"{key}"', "twice")


@pytest.mark.parametrize("reply, name, arguments, answer", [
    ('{"type": "final", "answer": "x", "answer": "x"}', None, {}, "x"),
    ('{"type": "tool_call", "name": "f", "Name": "f", "arguments": {"a": 1}, "Arguments": {"a": 1}}', "f", {"a": 1},
     None),
], ids=["the same spelling", "two spellings"])
def test_one_key_given_twice_with_the_same_value_is_read_once_and_tagged(reply, name, arguments, answer):
    action = parse_action(reply)
    assert (action.name, action.arguments, action.answer) == (name, arguments, answer)
    assert "duplicate_key" in action.repairs


@pytest.mark.parametrize("reply, kind", [
    ('{"type": "final", "thought": "a", "thought": "b", "answer": "x"}', "final"),
    ("{'type': 'tool_call', 'thought': 'a', 'name': 'f', 'thought': 'b', 'arguments': {'p': 1}}", "tool_call"),
    ('[{"type": "final", "thought": "a", "answer": "x", "thought": "b"}]', "final"),
])
def test_the_actions_own_thought_written_twice_is_one_thought(reply, kind):
    action = parse_action(reply)
    assert (action.kind, action.thought) == (kind, "a b") and "duplicate_thought" in action.repairs


@pytest.mark.parametrize("reply", [
    # Qwen2.5-Coder-1.5B's final answer, with the right answer: a call to "final", the answer beside it
    '{"type": "tool_call", "thought": "Oslo is 21 °C, Cairo 8 °C.", "name": "final", "thought": "Oslo is '
    'warmer.", "answer": "Oslo"}',
    '{"name": "Final_Answer", "answer": "Oslo"}',
    '{"type": "final", "name": "final", "answer": "Oslo", "arguments": {}}',
])
def test_an_answer_beside_the_name_final_and_no_arguments_is_the_final_answer(reply):
    action = parse_action(reply)
    assert (action.kind, action.answer) == ("final", "Oslo") and "final_as_call" in action.repairs
    assert _Keys.spelling(action.name) in ("final", "final_answer")    # kept, for the loop to check


@pytest.mark.parametrize("reply", [
    '{"type": "tool_call", "name": "final", "answer": "Oslo", "arguments": {"city": "Oslo"}}',
    '{"type": "tool_call", "name": "final", "answer": "Oslo", "args": {"city": "Oslo"}}',
    '{"type": "tool_call", "name": "get_weather", "answer": "Oslo"}',
    '{"type": "tool_call", "name": "final", "answer": "3", "city": "Oslo"}',    # an argument, misplaced
])
def test_an_answer_beside_arguments_or_another_tool_is_still_refused(reply):
    refused(reply, "both an answer and a tool call")


def test_the_final_written_as_a_call_keeps_the_checks_of_type_and_its_name_stripped():
    refused('{"type": "get_weather", "name": "final", "answer": "x"}', 'unknown "type"')
    assert parse_action('{"type": "tool_call", "name": " final\n", "answer": "3"}').name == "final"
    joined = parse_action('{"type": "final", "thought": "", "thought": "a", "thought": "b", "answer": "x"}')
    assert joined.thought == "a b"
    # the tag names the action that is read: an array's first, not a later one
    first = parse_action('[{"type": "final", "answer": "x"}, {"type": "final", "thought": "a", "thought": "b", '
                         '"answer": "y"}]')
    assert first.answer == "x" and "duplicate_thought" not in first.repairs


def spellings(key):
    return st.tuples(st.sampled_from(["", " ", "\t"]), st.lists(st.booleans(), min_size=len(key), max_size=len(key)),
                     st.sampled_from(["", " ", "  "])).map(
        lambda t: t[0] + "".join(c.upper() if up else c for c, up in zip(key, t[1])) + t[2])


@DEEP
@given(st.sampled_from(["type", "name", "arguments", "answer"]), st.data(), st.booleans())
def test_any_spelling_of_an_action_key_conflicts_with_the_key(key, data, same):
    action = {"type": "tool_call", "name": "read_file", "arguments": {"path": "/x"}} if key != "answer" \
        else {"type": "final", "answer": "yes"}
    other = data.draw(spellings(key).filter(lambda k: k != key))
    values = {"type": "final", "name": "delete_file", "arguments": {"path": "/"}, "answer": "no"}
    text = json.dumps(action)[:-1] + f", {json.dumps(other)}: {json.dumps(action[key] if same else values[key])}}}"
    if same:
        assert meaning(parse_action(text)) == meaning(parse_action(json.dumps(action)))
    else:
        refused(text, f'"{key}"', "twice")


# -- review 1.3: arguments written beside the action's keys ------------------------------------

@pytest.mark.parametrize("reply, key", [
    ('{"type": "tool_call", "name": "list_files", "path": "/secret"}', "path"),
    ('{"type": "tool_call", "name": "list_files", "arguments": {}, "recursive": true}', "recursive"),
    ('{"type": "tool_call", "name": "f", "arguments": null, "limit": 0}', "limit"),
    ('{"type": "tool_call", "name": "f", "arguments": "", "ids": [1, 2]}', "ids"),
    ('{"name": "f", "step": 2}', "step"),
    ("{'type': 'tool_call', 'name': 'f', 'flag': False}", "flag"),
])
def test_flattened_arguments_are_refused_naming_arguments(reply, key):
    message = refused(reply, '"arguments"', f'"{key}"')
    assert "instead of" not in message  # the key is an argument, not a misspelling of "arguments"


non_empty = json_values.filter(lambda v: v not in (None, "", {}, []))


@DEEP
@given(st.text(min_size=1, max_size=12), non_empty, st.sampled_from([None, {}, "", "missing"]))
def test_any_other_key_holding_a_value_beside_missing_arguments_is_refused(key, value, arguments):
    # OpenAI's call metadata (id, index, call_id) is not an argument (issue 18.3): ignored
    assume(agent._Keys.spelling(key) not in ("type", "thought", "name", "arguments", "answer", *agent._Keys.CALL_METADATA))
    obj = {"type": "tool_call", "name": "f"}
    if arguments != "missing":
        obj["arguments"] = arguments
    obj[key] = value
    refused_beside_a_call(obj, key)


@DEEP
@given(st.dictionaries(st.text(max_size=8), st.sampled_from([None, "", {}, []]), max_size=3),
       st.sampled_from([None, {}, "", "missing"]))
def test_empty_extra_keys_beside_missing_arguments_are_ignored(extra, arguments):
    obj = {**extra, "type": "tool_call", "name": "f"}
    if arguments != "missing":
        obj["arguments"] = arguments
    assert parse_action(json.dumps(obj)).arguments == {}


# -- review 1.4: a second action written as a JSON string, or escaped -------------------------

SEARCH = '{"type": "tool_call", "name": "search", "arguments": {"q": "x"}}'


def escaped(text, times, quoted):
    for _ in range(times):
        text = json.dumps(text)
    return text if quoted else text[1:-1]


@pytest.mark.parametrize("second", [json.dumps(DELETE), json.dumps(DELETE)[1:-1], escaped(DELETE, 2, True),
                                    escaped(DELETE, 2, False)])
def test_an_escaped_second_action_after_prose_is_refused(second):
    refused("To search, send " + SEARCH + "; to delete, send " + second, "one action per reply")
    assert "extra_actions" in parse_action(SEARCH + "\nor " + second).repairs


@DEEP
@given(st.sampled_from([DELETE, FINAL, '{"tool": "rm", "args": {"p": 1}}', '{"Name": "rm"}']),
       st.integers(1, 3), st.booleans(), st.sampled_from(["", " ", "\n", "; or: ", " then "]), st.booleans())
def test_a_second_action_is_seen_however_often_it_was_escaped(second, times, quoted, gap, indent):
    second = json.dumps(json.loads(second), indent=2 if indent else None)
    reply = "Send " + SEARCH + gap + escaped(second, times, quoted)
    refused(reply, "one action per reply")


@pytest.mark.parametrize("after", [json.dumps('{"size": 3}'), '{\\"lines\\": [1, 2]}', json.dumps("{not json}")])
def test_an_escaped_object_that_is_not_an_action_is_prose(after):
    assert parse_action("Send " + SEARCH + " with " + after).name == "search"


# -- review 1.5: an unescaped quote is named, not called a cut-off -----------------------------

@pytest.mark.parametrize("reply, quote", [
    ('{"type": "final", "answer": "The board is 5" wide"}', '\\"'),
    ("{'answer': 'it's done'}", "\\'"),
    ('Here: {"type": "tool_call", "name": "sh", "arguments": {"cmd": "echo "hi""}} ok', '\\"'),
    ('```json\n{"type": "final", "answer": "a "quoted" word and a stray " }\n```', '\\"'),
])
def test_an_unescaped_quote_is_named_not_called_a_cut_off(reply, quote):
    message = refused(reply, "escape", quote)
    assert "cut off" not in message and "not complete" not in message


@pytest.mark.parametrize("reply", ['{"type": "final", "answer": "The board is 5', '{"answer": "a" wide',
                                   "{'answer': 'it's", '{"type": "tool_call", "arguments": {"code": "d = {}'])
def test_a_reply_that_ends_inside_the_object_is_still_called_cut_off(reply):
    refused(reply, "not complete")


words = st.text(alphabet=st.characters(blacklist_characters="\"'\\{}[]", blacklist_categories=("Cs", "Cc")),
                max_size=12)


@DEEP
@given(words, words, st.sampled_from(['"', "'"]), st.sampled_from(["", " ", "\n```", " Done."]),
       st.sampled_from(["", "Here: ", "```json\n"]))
def test_a_complete_reply_with_a_stray_quote_is_never_called_cut_off(before, after, quote, tail, lead):
    text = before + quote + after
    reply = lead + (f"{{'type': 'final', 'answer': '{text}'}}" if quote == "'" else
                    '{"type": "final", "answer": "' + text + '"}') + tail
    try:
        parse_action(reply)
    except ActionFormatError as exc:
        assert "cut off" not in str(exc) and "not complete" not in str(exc), str(exc)


# -- review 1.11: the library never prints a warning ------------------------------------------

@pytest.mark.parametrize("reply", ["{'type':'final','answer':'\\777'}", "{'type':'final','answer':'\\400 \\1234'}",
                                   "{'type': 'final', 'answer': '\\d'}"])
def test_reading_a_reply_emits_no_warning(reply):
    import warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            parse_action(reply)
        except ActionFormatError:
            pass
    assert [str(w.message) for w in caught] == []


def test_an_octal_escape_past_0o377_reads_as_python_reads_it():
    assert parse_action("{'type':'final','answer':'\\777\\400'}").answer == "\u01ff\u0100"


@DEEP
@given(st.text(alphabet="\\01234567xuUN{}abfnrtv'\"89 ", max_size=12))
def test_no_escape_in_a_single_quoted_string_emits_a_warning(body):
    import warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            parse_action("{'type': 'final', 'answer': '" + body + "'}")
        except ActionFormatError:
            pass
    assert [str(w.message) for w in caught] == []


def test_a_quote_before_the_action_is_not_taken_for_an_unescaped_one():
    # Found by the arbitrary-text property: the search for the open string's quote ran past the action's start.
    refused("'{\\'", "not complete")


# -- one answer-and-call check, whatever "type" says ---------------------------------------

_KIND_VALUES = {"name": ("f",), "arguments": ({"x": 1},), "answer": ("42",)}


@pytest.mark.parametrize("kind", [None, "tool_call", "final"])
@pytest.mark.parametrize("name", ["absent", None, "value"])
@pytest.mark.parametrize("arguments", ["absent", None, "value"])
@pytest.mark.parametrize("answer", ["absent", None, "value"])
def test_both_an_answer_and_a_call_is_refused_whatever_the_type_says(kind, name, arguments, answer):
    # (its twin below checks other spellings and look-alikes of the keys)
    obj = {} if kind is None else {"type": kind}
    for key, state in (("name", name), ("arguments", arguments), ("answer", answer)):
        if state != "absent":
            obj[key] = _KIND_VALUES[key][0] if state == "value" else None
    both = (name == "value" or arguments == "value") and answer == "value"
    try:
        action = parse_action(json.dumps(obj))
    except ActionFormatError as exc:
        assert ("both an answer and a tool call" in str(exc)) == both, obj
        return
    assert not both, obj
    assert action.kind == (kind or ("final" if answer == "value" or (name == arguments == "absent") else "tool_call"))


@pytest.mark.parametrize("reply", [
    '{"name": "f", "Answer": "x"}',                                  # the call would run, the answer be dropped
    '{"Name": "f", "answer": "x"}',
    '{"type": "final", "answer": "x", "Arguments": {"a": 1}}',
    '{"type": "tool_call", "name": "f", "arguments": {}, "final_answer": "x"}',
    '{"name": "calculator", "arguments": {"expression": "2*3"}, "Final Answer": "6"}',
    '{"type": "tool_call", "name": "f", "arguments": {"a": 1}, "output": "invented"}',
])
def test_both_an_answer_and_a_call_under_any_spelling_of_their_keys_is_refused(reply):
    refused(reply, "both an answer and a tool call")


@pytest.mark.parametrize("reply", [
    '{"type": "final", "answer": "Paris", "input": "capital of France?"}',   # echoes the question
    '{"tool": "f", "answer": "x"}',
])
def test_a_look_alike_of_a_calls_key_beside_an_answer_runs_nothing_and_is_left_to_it(reply):
    action = parse_action(reply)
    assert (action.kind, action.name) == ("final", None)


@pytest.mark.parametrize("opening", ["", "Here: "])
def test_data_beside_the_action_is_judged_alike_in_an_array_and_after_it(opening):
    call = '{"name": "f", "arguments": {}}'
    for reply in (f"{opening}{call} {{\"x\": 1}}", f"{opening}[{call}, {{\"x\": 1}}]"):
        action = parse_action(reply)
        assert action.name == "f" and "extra_actions" not in action.repairs, reply
    other = json.dumps(json.dumps({"type": "final", "answer": "6"}))   # an action written as a JSON string
    for reply in (f'{opening}{call} {{"name": "g"}}', f'{opening}[{call}, {{"name": "g"}}]',
                  f'{opening}{call} {other}', f'{opening}[{call}, {other}]'):
        if opening:
            refused(reply, "action")   # "two different actions", or "more than one action" when escaped
        else:
            assert "extra_actions" in parse_action(reply).repairs


@pytest.mark.parametrize("reply", [
    '{"type": "' + "abcdefghij" * 6 + '"}',
    '{"type": "tool_call", "name": "f", "' + "k" * 80 + '": 1}',
])
def test_a_value_cut_short_in_a_refusal_shows_the_cut(reply):
    """A long value quoted in a refusal is cut with an ellipsis, so the model sees it was shortened."""
    message = refused(reply)
    assert "\u2026" in message

"""The action-key rule read in one place (issue 19): the new reading against the old one.

Until issue 19 the rule that decides an object's kind and which of its keys mean what lived in seven
places in agent.py. The old rule is frozen below, as it was at main b11e690 (the parts that did not
change until agent.py folded them into its key reader are copied as they were then), and a property test compares it with
agent.py's one reading on generated objects: both give the same Action or the same refusal, except
the disagreements that were fixed, each found by fixes() and tested on its own (FIXES).
"""
import json
import re
from typing import Any, Optional

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import agent
from agent import (_CALL_SHAPE, _FINAL_SHAPE, Action, ActionFormatError, _canonical, _cut, _note,
                   _read_value, _refuse, _shown, parse_action)

# -- the old rule, frozen (agent.py at b11e690) --------------------------------------------

_LOOKALIKES = {
    **dict.fromkeys(("action", "tool", "tool_name", "function"), "name"),
    **dict.fromkeys(("args", "argument", "kwargs", "parameters", "params", "input", "inputs",
                     "action_input", "tool_input", "tool_args"), "arguments"),
    **dict.fromkeys(("final_answer", "response", "output"), "answer"),
}
_OWN_KEYS = ("type", "name", "arguments", "answer", "thought")
_CALL_METADATA = ("id", "index", "call_id")


def _meant_key(key: Any) -> Optional[str]:
    """The action key that key stands for: the key itself, another spelling of it (case, spaces), or
    a look-alike's."""
    normal = _spelling(key)
    return normal if normal in _OWN_KEYS else _LOOKALIKES.get(normal)


def _spelling(word: Any) -> Optional[str]:
    """A key or a "type" as the parser compares it: lower-cased, stripped, inner spaces and hyphens
    as underscores (``"Name "`` is ``name``, ``"Final Answer"`` is ``final_answer``, ``"tool-call"``
    is ``tool_call``)."""
    return (word.strip().lower().replace(" ", "_").replace("-", "_") if isinstance(word, str)
            else None)


def _interpret(obj: dict, repairs: list) -> Action:
    """Turn the action object into an Action, refusing anything whose meaning is not certain."""
    _check_spellings(obj, repairs)
    _check_one_kind(obj)
    kind = _action_kind(obj, repairs)
    thought = obj.get("thought")
    if thought is not None and not isinstance(thought, str):
        thought = json.dumps(thought, ensure_ascii=False)
    if kind == "final":
        return Action("final", answer=_answer(obj, repairs), thought=thought,
                      repairs=tuple(repairs))
    name = _tool_name(obj, repairs)
    return Action("tool_call", name=name, arguments=_arguments(obj, repairs), thought=thought,
                  repairs=tuple(repairs))


def _check_spellings(obj: dict, repairs: list) -> None:
    """An action key written under two spellings (``name`` and ``Name``), both holding a value, must
    hold the same value: one of them would silently win. Refused, naming the key."""
    if all(key in _OWN_KEYS for key in obj):
        return  # the common case: each key once, spelled as the action's own
    # the rest was the same then (its fast path is above)
    spelled: dict = {}
    for key in obj:
        meant = _spelling(key)
        if meant in _OWN_KEYS and meant != "thought" and _present(obj, key):
            spelled.setdefault(meant, []).append(key)
    for meant, keys in spelled.items():
        if len(keys) < 2:
            continue
        if len({_canonical(obj[key]) for key in keys}) > 1:
            shown = " and ".join(json.dumps(key, ensure_ascii=False) for key in keys)
            raise _refuse(f'the key "{meant}" appears twice with different values (as '
                          f'{_cut(shown, 80)}); write each key once')
        _note(repairs, "duplicate_key")


def _present(obj: dict, key: str) -> bool:
    return obj.get(key) not in (None, "", {}, [])


def _check_one_kind(obj: dict) -> None:
    """The one check that an action is a call or an answer, never both, whatever "type" says: a name
    or arguments (under any spelling of the key) and an answer (under any spelling, or a look-alike
    such as "final_answer" or "output"), each holding a value, are refused. A look-alike of a call's
    key beside an answer ("input" echoing the question) runs nothing, so it is left to the final
    answer."""
    if "answer" not in obj and all(key in _OWN_KEYS for key in obj):
        return  # the common call: the action's own keys and no answer
    call = any(_spelling(key) in ("name", "arguments") and _present(obj, key) for key in obj)
    if call and any(_meant_key(key) == "answer" and _present(obj, key) for key in obj):
        raise _refuse("your reply has both an answer and a tool call; send one of them")


def _action_kind(obj: dict, repairs: list) -> str:
    """"tool_call" or "final": from "type", else from the keys a call or an answer has."""
    is_call = "name" in obj or "arguments" in obj
    if "type" not in obj and (is_call or "answer" in obj):
        _note(repairs, "missing_type")
        return "final" if _present(obj, "answer") or not is_call else "tool_call"
    # the rest ("type" itself, or no key of an action's own) was the same then
    if "type" in obj:
        kind = obj["type"]
        normal = _spelling(kind)
        if normal not in ("tool_call", "final"):
            raise _refuse(f'unknown "type" {_cut(json.dumps(kind, ensure_ascii=False), 40)}: use '
                          '"tool_call" or "final"')
        if normal != kind:
            _note(repairs, "type_spelling")
        return normal
    names = [key for key in obj if _meant_key(key) not in (None, "thought", key)]
    if names:
        fixes = "; ".join(f'use "{_meant_key(key)}" instead of '
                          f'{json.dumps(key, ensure_ascii=False)}' for key in names)
        raise _refuse(f'"type" is missing and the keys are wrong: {fixes}')
    raise _refuse('the object has no "type", "name" or "answer" (keys: '
                  f'{_cut(", ".join(map(str, obj)), 80) or "none"})')


def _answer(obj: dict, repairs: list) -> str:
    answer = obj.get("answer")
    if answer is None:
        raise _refuse(_missing(obj, "answer"), _FINAL_SHAPE)
    if not isinstance(answer, str):
        _note(repairs, "answer_not_text")
        answer = json.dumps(answer, ensure_ascii=False)
    return answer


def _missing(obj: dict, key: str) -> str:
    """What the model is told of a missing key: the look-alike it wrote instead, if there is one."""
    alt = _lookalike(obj, key)
    if not alt:
        return f'"{key}" is missing'
    return f'use "{key}" instead of {json.dumps(alt, ensure_ascii=False)}'


def _lookalike(obj: dict, key: str) -> Optional[str]:
    """A key of obj, other than key itself, that stands for key and holds a value."""
    return next((other for other in obj if other != key and _meant_key(other) == key
                 and _present(obj, other)), None)


def _tool_name(obj: dict, repairs: list) -> str:
    name = obj.get("name")
    if name is None:
        raise _refuse(f"{_missing(obj, 'name')} for the tool to call", _CALL_SHAPE)
    # the rest was the same then
    if not isinstance(name, str) or not name.strip():
        raise _refuse(f'"name" must be the tool name as text, got {_shown(name)}', _CALL_SHAPE)
    if re.search(r"[()\[\]{}\"'=\n\r]", name.strip()):
        raise _refuse(f'"name" must be only the tool name, got {name[:60]!r}; put the arguments in '
                      '"arguments"',
                      _CALL_SHAPE)
    if name != name.strip():
        _note(repairs, "name_whitespace")
    return name.strip()


def _arguments(obj: dict, repairs: list) -> dict:
    """The old choice of the key that holds arguments in the wrong place, and the reading of
    "arguments" (unchanged since)."""
    stray = _lookalike(obj, "arguments") or next(
        (key for key in obj if _spelling(key) not in _OWN_KEYS + _CALL_METADATA
         and _present(obj, key)), None)
    arguments = obj.get("arguments")
    if isinstance(arguments, str):
        _note(repairs, "arguments_string")
        text = arguments.strip()
        if text and text[0] != "{":
            raise _refuse(f'"arguments" must be a JSON object, got the string {text[:40]!r}',
                          _CALL_SHAPE)
        arguments, end = _read_value(text, 0, repairs) if text else ({}, 0)
        if text[end:].strip():
            raise _refuse('"arguments" holds text after its JSON object', _CALL_SHAPE)
    if arguments is None or arguments == {}:
        if stray is not None:
            shown = _cut(json.dumps(stray, ensure_ascii=False), 60)
            if _meant_key(stray) == "arguments" or isinstance(obj[stray], dict):
                raise _refuse(f'use "arguments" instead of {shown}', _CALL_SHAPE)
            raise _refuse(f'the tool call has no "arguments" but has {shown} beside them; put the '
                          f'tool\'s arguments inside "arguments", as in "arguments": {{{shown}: '
                          '...}', _CALL_SHAPE)
        if arguments is None:
            _note(repairs, "missing_arguments")
        return {}
    if not isinstance(arguments, dict):
        raise _refuse(f'"arguments" must be a JSON object, got {_shown(arguments)}', _CALL_SHAPE)
    return arguments


# -- the comparison -----------------------------------------------------------------

# every kind of key the rule tells apart: the action's own, other spellings of them, look-alikes
# (also spelled otherwise), OpenAI's call metadata, other keys, and a key that is not text
KEYS = ["type", "name", "arguments", "answer", "thought",
        "Type", " type", "TYPE", "Name", "name ", "NAME", "Arguments", "arguments ", "Answer",
        "ANSWER ", "Thought",
        *_LOOKALIKES, "Tool", "Final Answer", "final-answer", "Args", "OUTPUT",
        "id", "index", "call_id", "ID", "Call-Id",
        "path", "meta", "x", "", 1]
VALUES = [None, "", {}, [], "f", " f ", "f(x=1)", "  ", "final", "tool_call", "Final", "tool-call",
          "bogus", {"x": 1}, {"x": 2}, '{"x": 1}', "{bad", 0, 1, True, False, [1], 1.5]

objects = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=6)
# objects that look like actions more often: an action's own keys first, then anything
actions = st.builds(lambda own, more: {**own, **more},
                    st.dictionaries(st.sampled_from(_OWN_KEYS), st.sampled_from(VALUES), max_size=4),
                    objects)


def verdict(interpret, obj):
    """What a reading makes of obj: the Action's fields, or the refusal's message."""
    try:
        action = interpret(dict(obj), [])
    except ActionFormatError as exc:
        return "refused", str(exc)
    return "read", (action.kind, action.name, action.arguments, action.answer, action.thought,
                    action.repairs)


def test_the_frozen_copy_reads_as_the_old_rule_did():
    obj = {"type": "final", "answer": "", "output": "42"}
    assert verdict(_interpret, obj) == ("read", ("final", None, {}, "", None, ()))




def stand_ins(obj, key):
    """The keys of obj other than key that stand for it (another spelling, or a look-alike) and hold a
    value, in order (the old rule's reading, from the frozen copy)."""
    return [other for other in obj if other != key and _meant_key(other) == key and _present(obj, other)]


def fixes(obj):
    """The refusals agent.py now gives where the old rule read obj otherwise (FIXES below, by input)."""
    found = []
    if "type" not in obj and stand_ins(obj, "type") and any(k in obj for k in ("name", "arguments", "answer")):
        found.append(f'use "type" instead of {json.dumps(stand_ins(obj, "type")[0])}')   # 1
    for key in ("answer", "name"):   # 2, and 3 (answer)
        if not _present(obj, key) and stand_ins(obj, key):
            found.append(f'use "{key}" instead of {json.dumps(stand_ins(obj, key)[0])}')
    for k, v in obj.items():   # 4: an object is read as misplaced arguments, anything else as a stray
        if _spelling(k) in _CALL_METADATA and isinstance(v, (dict, list)) and _present(obj, k):
            found += ['the tool call has no "arguments" but has', f'use "arguments" instead of {json.dumps(k)}']
    # 5: a call with an answer and no tool name, no arguments: asked for "type": "final" (2026-12-07)
    empty = (None, "", {}, [])
    if (not stand_ins(obj, "name") and not stand_ins(obj, "arguments") and obj.get("answer") not in empty
            and obj.get("arguments") in empty):
        found.append('the reply holds an "answer" and no tool to call')
    # 6: the final answer written as a call (final_as_call below) is read, or refused for its "type"
    if final_as_call(obj):
        found.append('unknown "type"')
    return found


def final_as_call(obj):
    """The one reading that was a refusal: an answer (under any spelling) beside "name": "final" or
    "final_answer" and no arguments (under any spelling) is the final answer written as a call
    (Qwen2.5-Coder-1.5B, 2026-12-07)."""
    answer = _present(obj, "answer") or stand_ins(obj, "answer")
    arguments = _present(obj, "arguments") or stand_ins(obj, "arguments")
    return bool(answer) and not arguments and _spelling(obj.get("name")) in ("final", "final_answer")


@settings(max_examples=1000, suppress_health_check=[HealthCheck.too_slow])
@given(objects | actions)
def test_the_one_reading_decides_as_the_old_rule_did_except_the_fixes(obj):
    old, new = verdict(_interpret, obj), verdict(agent._interpret, obj)
    if old != new and new[0] == "read":
        assert final_as_call(obj) and new[1][0] == "final" and "final_as_call" in new[1][5], (obj, old, new)
    elif old != new:
        assert new[0] == "refused", (obj, old, new)       # no other fix reads what was refused
        assert any(new[1].startswith(fix) for fix in fixes(obj)), (obj, old, new)


# -- the disagreements fixed: each input, what the old rule did, and what agent.py does now --------

FIXES = [
    # 1. "Type" was ignored, so the kind came from the other keys: the call ran, while its twin
    #    with "type": "final" is refused for its missing answer. Now read as "Name" is: refused.
    ({"Type": "final", "name": "delete_file", "arguments": {"path": "/"}},
     ("read", ("tool_call", "delete_file", {"path": "/"}, None, None, ("missing_type",))),
     'use "type" instead of "Type"'),
    ({"Type": "bogus", "answer": "x"}, ("read", ("final", None, {}, "x", None, ("missing_type",))),
     'use "type" instead of "Type"'),
    # 2. An empty answer or name ("", {}, []) beside another key standing for it and holding a
    #    value: the answer was read as "", the model's own dropped, and the name refused as not
    #    text; their twins with null are refused naming the key. Now alike.
    ({"type": "final", "answer": "", "output": "42"}, ("read", ("final", None, {}, "", None, ())),
     'use "answer" instead of "output"'),
    ({"answer": "", "Answer": "42"}, ("read", ("final", None, {}, "", None, ("missing_type",))),
     'use "answer" instead of "Answer"'),
    ({"type": "tool_call", "name": "", "tool": "search", "arguments": {"q": "x"}},
     ("refused", '"name" must be the tool name as text, got string ""'), 'use "name" instead of "tool"'),
    # 3. With no "type", an answer under a look-alike or another spelling, beside an empty call key,
    #    was taken for a call, and the model asked for a tool name; without the empty key it is
    #    asked for "answer". The kind now counts an answer as the answer-and-call check does.
    ({"name": None, "final_answer": "42"},
     ("refused", '"name" is missing for the tool to call'), 'use "answer" instead of "final_answer"'),
    ({"arguments": {}, "Answer": "42"},
     ("refused", '"name" is missing for the tool to call'), 'use "answer" instead of "Answer"'),
    # 4. An object or array under a call-metadata key (OpenAI's id, index, call_id are text or a
    #    number) was ignored as metadata, and the call ran with {}: it may be the arguments. Now a
    #    stray (a7ba331).
    ({"type": "tool_call", "name": "f", "id": [1]},
     ("read", ("tool_call", "f", {}, None, None, ("missing_arguments",))),
     'the tool call has no "arguments" but has "id"'),
    # 5. A call with an answer and no tool name or arguments was asked for a tool name, and a model
    #    that meant to answer (Qwen2.5-Coder-1.5B) started the task over. Still refused, now asking
    #    for "type": "final".
    ({"type": "tool_call", "thought": "The total is 2165.", "answer": "2165"},
     ("refused", '"name" is missing for the tool to call'), 'the reply holds an "answer" and no tool'),
]


def test_a_call_with_an_answer_and_arguments_under_another_key_is_asked_for_its_name():
    with pytest.raises(ActionFormatError) as info:
        parse_action('{"type": "tool_call", "answer": "x", "args": {"q": 1}}')
    assert str(info.value).startswith('"name" is missing for the tool to call'), str(info.value)


@pytest.mark.parametrize("obj, old, now", FIXES, ids=[str(i) for i in range(1, len(FIXES) + 1)])
def test_each_disagreement_fixed_is_refused_naming_the_key(obj, old, now):
    before = verdict(_interpret, obj)
    assert before[0] == old[0] and (before == old or before[1].startswith(old[1])), before
    with pytest.raises(ActionFormatError) as info:
        parse_action(json.dumps(obj))
    assert str(info.value).startswith(now), str(info.value)


def test_the_twins_of_the_fixes_get_the_same_verdict():
    # "type" and "Type"; an empty answer or name and a missing one: each pair is refused alike now
    twins = [({"type": "final", "name": "f", "arguments": {"a": 1}}, '"answer" is missing'),
             ({"type": "final", "answer": None, "output": "42"}, 'use "answer" instead of "output"'),
             ({"final_answer": "42"}, 'use "answer" instead of "final_answer"'),
             ({"type": "tool_call", "name": None, "tool": "search"}, 'use "name" instead of "tool"')]
    for obj, message in twins:
        with pytest.raises(ActionFormatError) as info:
            parse_action(json.dumps(obj))
        assert message in str(info.value), (obj, str(info.value))


def test_a_type_spelled_otherwise_beside_type_itself_is_read_once():
    action = parse_action('{"type": "final", "Type": "final", "answer": "x"}')
    assert (action.kind, action.answer, action.repairs) == ("final", "x", ("duplicate_key",))

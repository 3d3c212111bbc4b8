"""parse_action and the system prompt: repairs that are certain, refusals that teach."""
import json
import os
import time

import pytest
from conftest import make_tools
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import agent as agent_module
from agent import Action, ActionFormatError, Agent, MockLLM, _ActionScanner, parse_action


CORPUS_PATH = os.path.join(os.path.dirname(__file__), "data", "replies.jsonl")
with open(CORPUS_PATH, encoding="utf-8") as handle:
    CORPUS = [json.loads(line) for line in handle if line.strip()]


def check_parse(reply, kind, name=None, arguments=None, answer=None, repairs=None):
    action = parse_action(reply)
    assert (action.kind, action.name, action.arguments, action.answer) == \
        (kind, name, arguments if arguments is not None else {}, answer)
    if repairs is not None:
        assert list(action.repairs) == repairs
    return action


# -- the corpus -----------------------------------------------------------------------

def test_the_parser_accepts_thirty_corpus_replies_and_refuses_thirty_as_labelled():
    outcomes = []
    for entry in CORPUS:
        try:
            parse_action(entry["reply"])
            outcomes.append("expect")
        except ActionFormatError:
            outcomes.append("refuse")
        assert outcomes[-1] in entry, entry["label"]
    assert outcomes.count("expect") >= 30 and outcomes.count("refuse") >= 30


@pytest.mark.parametrize("entry", CORPUS, ids=[e["label"] for e in CORPUS])
def test_corpus_reply(entry):
    if "refuse" in entry:
        with pytest.raises(ActionFormatError) as info:
            parse_action(entry["reply"])
        assert entry["refuse"] in str(info.value)
        assert info.value.text == entry["reply"]
        assert "Reply with exactly one JSON object" in str(info.value)
        return
    expect = entry["expect"]
    action = parse_action(entry["reply"])
    assert action.kind == expect["kind"]
    if expect["kind"] == "tool_call":
        assert (action.name, action.arguments) == (expect["name"], expect["arguments"])
    else:
        assert action.answer == expect["answer"]
    for tag in expect["repairs"]:
        assert tag in action.repairs, f"missing repair {tag!r}: {action.repairs}"
    if not expect["repairs"]:
        assert action.repairs == ()


# -- specific rules -------------------------------------------------------------------

def test_clean_reply_has_no_repairs():
    check_parse('{"type": "final", "thought": "t", "answer": "42"}', "final", answer="42", repairs=[])


def test_thought_is_kept():
    assert parse_action('{"type": "final", "thought": "easy", "answer": "1"}').thought == "easy"


def test_action_is_the_first_object_even_if_a_later_one_is_valid():
    with pytest.raises(ActionFormatError):
        parse_action('{"type": "final" "answer": "a"} {"type": "final", "answer": "b"}')


def test_braces_in_prose_after_the_action_are_ignored():
    check_parse('{"type": "final", "answer": "x"}\nNote: sets look like {1, 2}.', "final", answer="x")


def test_first_fenced_block_is_searched():
    reply = 'Plan: call it.\n```json\n{"type": "final", "answer": "a"}\n```\nThen maybe ```{"x": 1}```'
    check_parse(reply, "final", answer="a")


def test_second_fenced_action_after_an_opening_action_is_not_run():
    reply = '```json\n{"type": "final", "answer": "a"}\n```\n```json\n{"type": "final", "answer": "b"}\n```'
    assert "extra_actions" in check_parse(reply, "final", answer="a").repairs


def test_second_fenced_action_after_prose_means_several_actions():
    reply = 'Either\n```json\n{"type": "final", "answer": "a"}\n```\nor\n```json\n{"type": "final", "answer": "b"}\n```'
    with pytest.raises(ActionFormatError, match="two different actions"):
        parse_action(reply)


def test_arguments_look_alike_beside_empty_arguments_is_refused():
    with pytest.raises(ActionFormatError, match='instead of "params"'):
        parse_action('{"type": "tool_call", "name": "f", "arguments": {}, "params": {"x": 1}}')


def test_look_alike_beside_real_arguments_is_an_ignored_extra_key():
    check_parse('{"type": "tool_call", "name": "f", "arguments": {"x": 1}, "input": "x"}', "tool_call", "f", {"x": 1})


def test_arguments_string_with_python_literal():
    check_parse("""{"type": "tool_call", "name": "f", "arguments": "{'x': True}"}""", "tool_call", "f", {"x": True})


def test_spaces_inside_name_are_allowed():
    check_parse('{"type": "tool_call", "name": "get weather", "arguments": {}}', "tool_call", "get weather")


def test_non_text_reply_is_refused():
    with pytest.raises(ActionFormatError, match="as text"):
        parse_action(None)


def test_error_is_a_value_error_with_the_shape():
    with pytest.raises(ValueError) as info:
        parse_action("hello")
    assert '{"type": "final", "thought": "<why>", "answer": "<the answer>"}' in str(info.value)


# -- bounded work ---------------------------------------------------------------------

PATHOLOGICAL = [
    "x" * 1_000_000,
    "{" * 10_000,
    "[" * 10_000 + "{",
    '{"a": "' + "\\" * 150_000,
    '{"type": "final", "answer": "' + "a" * 190_000,
    '{"a": ' + '"x", ' * 30_000,
    "<think>" * 20_000,
    "```" * 50_000,
    "'" * 150_000,
    "{'" * 50_000,
    '{"type": "final", "answer": "x"}' + " {" * 80_000,
    "Observation:" * 10_000,
    "\\n" * 90_000,
    '"' * 150_000,
]


@pytest.mark.parametrize("text", PATHOLOGICAL, ids=[repr(t[:20]) + f"x{len(t)}" for t in PATHOLOGICAL])
def test_pathological_input_is_handled_quickly(text):
    started = time.perf_counter()
    try:
        parse_action(text)
    except ActionFormatError:
        pass
    assert time.perf_counter() - started < 10.0  # hang detector; bench/parse.py measures


def test_deep_nesting_is_refused_not_a_recursion_error():
    with pytest.raises(ActionFormatError, match="nested more than 100"):
        parse_action('{"a": ' + "[" * 5000 + "]" * 5000 + "}")


def test_megabyte_reply_is_refused_with_the_limit():
    with pytest.raises(ActionFormatError, match="limit 200,000"):
        parse_action('{"type": "final", "answer": "' + "a" * 1_000_000 + '"}')


# -- properties -----------------------------------------------------------------------

json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6),
                         st.floats(allow_nan=False, allow_infinity=False, width=32), st.text(max_size=20))
json_values = st.recursive(json_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)), max_leaves=8)
tool_names = st.from_regex(r"[a-z][a-z0-9_]{0,15}", fullmatch=True)
arguments = st.dictionaries(st.from_regex(r"[a-z][a-z_]{0,9}", fullmatch=True), json_values, max_size=4)


@st.composite
def actions(draw):
    thought = draw(st.one_of(st.none(), st.text(max_size=30)))
    if draw(st.booleans()):
        return {"type": "final", "thought": thought, "answer": draw(st.text(max_size=40))}
    return {"type": "tool_call", "thought": thought, "name": draw(tool_names), "arguments": draw(arguments)}


LAYOUTS = {  # name: (indent unit or None for one line, line break, colon, comma first, closer on the last line)
    "compact": (None, "", ": ", False, False), "tight": (None, "", ":", False, False),
    "indent1": (" ", "\n", ": ", False, False), "indent2": ("  ", "\n", ": ", False, False),
    "indent4": ("    ", "\n", ": ", False, False), "tabs": ("\t", "\n", ": ", False, False),
    "crlf": ("  ", "\r\n", ": ", False, False), "spaced colon": ("  ", "\n", " : ", False, False),
    "comma first": ("  ", "\n", ": ", True, False), "closer inline": ("  ", "\n", ": ", False, True),
}


def dump_string(text, quotes, defect):
    """A string literal: double or single quotes, optionally with raw control characters or needless escapes."""
    body = json.dumps(text, ensure_ascii=False)[1:-1]
    if quotes == "'":
        body = body.replace('\\"', '"').replace("'", "\\'")
    elif defect == "escaped apostrophe":
        body = body.replace("'", "\\'")
    if defect == "raw controls" and "\\\\" not in body:
        body = body.replace("\\n", "\n").replace("\\t", "\t")
    if defect == "markdown":
        body = body.replace("_", "\\_")
    return quotes + body + quotes


def dump(value, layout="compact", quotes='"', defect=None, trailing=False, depth=0):
    """Text of value in a layout, with single or double quotes, a string defect and trailing commas."""
    def again(item):
        return dump(item, layout, quotes, defect, trailing, depth + 1)
    if isinstance(value, str):
        return dump_string(value, quotes, defect)
    if not isinstance(value, (dict, list)):
        return {True: "True", False: "False", None: "None"}.get(value, json.dumps(value)) \
            if quotes == "'" and (value is None or isinstance(value, bool)) else json.dumps(value)
    indent, newline, colon, comma_first, inline = LAYOUTS[layout]
    items = [f"{again(k)}{colon}{again(v)}" for k, v in value.items()] if isinstance(value, dict) \
        else [again(v) for v in value]
    opener, closer = "{}" if isinstance(value, dict) else "[]"
    if not items:
        return opener + closer
    if indent is None:
        return opener + ", ".join(items) + ("," if trailing else "") + closer
    inner, outer = newline + indent * (depth + 1), newline + indent * depth
    if comma_first:
        text = opener + " " + (outer + ", ").join(items) + (outer + "," if trailing else "")
    else:
        text = opener + inner + ("," + inner).join(items) + ("," if trailing else "")
    return text + (" " if inline else outer) + closer


@pytest.mark.parametrize("layout, indent", [("indent1", 1), ("indent2", 2), ("indent4", 4), ("tabs", "\t"),
                                           ("compact", None)])
def test_json_dumps_own_indentation_is_read_without_repairs(layout, indent):
    action = {"type": "tool_call", "thought": "t", "name": "f", "arguments": {"a": [1, {"b": None}], "c": "x"}}
    text = json.dumps(action, indent=indent)
    assert dump(action, layout) == text   # so the packaging property below tries what json.dumps writes
    parsed = parse_action(text)
    assert (parsed.kind, parsed.name, parsed.arguments, parsed.repairs) == ("tool_call", "f", action["arguments"], ())


prose = st.text(alphabet=st.characters(blacklist_characters="{[`<\\\"'", blacklist_categories=("Cs",)),
                max_size=30).filter(lambda s: "observation" not in s.lower())


@st.composite
def packaged(draw):
    """A valid action and a reply holding it, laid out in any style, under a random mix of packaging defects."""
    action = draw(actions())
    obj = dict(action)
    if obj["thought"] is None:
        del obj["thought"]
    if obj["type"] == "tool_call" and draw(st.booleans()):
        obj["arguments"] = json.dumps(obj["arguments"])          # arguments as a JSON string
    if draw(st.booleans()) and (obj["type"] == "final" or action["arguments"]):
        obj["confidence"] = 0.5                                  # an extra key (beside empty arguments: refused)
    if draw(st.booleans()):
        del obj["type"]                                          # kind certain from the keys
    quotes = draw(st.sampled_from(['"', "'"]))
    defect = draw(st.sampled_from([None, "raw controls", "markdown", "escaped apostrophe"]))
    text = dump(obj, draw(st.sampled_from(sorted(LAYOUTS))), quotes, defect, trailing=draw(st.booleans()))
    if draw(st.booleans()):
        text = f"[{text}]"                                       # one-element array
    wrapper = draw(st.sampled_from([None, "json string", "stray quotes"]))
    if wrapper == "json string" and quotes == '"' and defect is None:
        text = json.dumps(text)                                  # the reply is a JSON string
    elif wrapper == "stray quotes":
        text = f'"{text}"'
    if draw(st.booleans()):
        text = f"```{draw(st.sampled_from(['', 'json', 'JSON']))}\n{text}\n```"
    if draw(st.booleans()):
        text = f"{draw(prose)}\n{text}\n{draw(prose)}"            # prose around
    if draw(st.booleans()):
        text = f"{text}\n[OBSERVATION] {draw(st.text(max_size=20))}"
    if draw(st.booleans()):
        text = f"<think>{draw(st.text(max_size=40)).replace('<', '')}</think>\n{text}"
    if draw(st.booleans()):
        text = draw(st.sampled_from(["<tool_call>", "[TOOL_CALLS] ", "<|python_tag|>", "json\n"])) + text
    if draw(st.booleans()):
        text = "\ufeff  " + text + "\n\n"
    return action, text


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(packaged())
def test_any_valid_action_survives_any_mix_of_packaging(case):
    action, text = case
    parsed = parse_action(text)
    assert parsed.kind == action["type"]
    if parsed.kind == "final":
        assert parsed.answer == action["answer"]
    else:
        assert (parsed.name, parsed.arguments) == (action["name"], action["arguments"])
    if action["thought"] is not None:
        assert parsed.thought == action["thought"]


@given(st.text(max_size=300) | st.text(alphabet='{}[]"\':,\\ntrue<>/`', max_size=200))
def test_parse_returns_an_action_or_raises_action_format_error(text):
    try:
        result = parse_action(text)
    except ActionFormatError as exc:
        assert str(exc)
    else:
        assert isinstance(result, Action) and result.kind in ("tool_call", "final")


# -- action schema and system prompt ------------------------------------------------------

def test_actions_built_from_each_schema_branch_parse_back_unchanged():
    registry = make_tools()
    samples = {"echo": {"text": "hi"}, "add": {"a": 2, "b": 40}, "fail": {}, "delete": {"path": "/tmp/x"}}
    for branch in registry.action_schema()["anyOf"]:
        props = branch["properties"]
        kind = props["type"]["const"]
        if kind == "final":
            obj = {"type": "final", "thought": "t", "answer": "42"}
        else:
            obj = {"type": "tool_call", "thought": "t", "name": props["name"]["const"],
                   "arguments": samples[props["name"]["const"]]}
        assert set(obj) == set(branch["required"])
        action = parse_action(json.dumps(obj))
        assert action.repairs == ()
        assert (action.kind, action.name, action.arguments, action.answer) == \
            (kind, obj.get("name"), obj.get("arguments", {}), obj.get("answer"))


def test_system_prompt_states_both_shapes_lists_tools_and_is_short():
    prompt = Agent(MockLLM([]), make_tools()).system_prompt
    assert '"type": "tool_call"' in prompt and '"type": "final"' in prompt
    assert "- add: Add two integers. {" in prompt
    assert '"required":["a","b"]' in prompt
    assert "[OBSERVATION]" in prompt and "exactly one JSON object" in prompt
    assert len(prompt) < 1700


def test_custom_system_prompt_gets_the_tool_listing():
    agent = Agent(MockLLM([]), make_tools(), system_prompt="Be brief. {tools} JSON like {\"a\": 1}.")
    assert agent.system_prompt.startswith("Be brief. - echo: Echo text back.")
    assert agent.system_prompt.endswith('JSON like {"a": 1}.')


def test_system_prompt_without_tools_says_so():
    assert "(none: answer directly with the final shape)" in Agent(MockLLM([])).system_prompt


@pytest.mark.parametrize("before", [" " * 5000 + "x", "\n \t" * 3000 + "Here:", "<|eot_id|> " * 5000 + "y",
                                    "json " * 8000 + "z", "[A] " * 9000],
                         ids=["spaces", "mixed whitespace", "tokens", "labels", "bracket tokens"])
def test_long_prose_before_the_action_is_linear(before):
    started = time.perf_counter()
    action = parse_action(before + '\n{"type": "final", "answer": "ok"}')
    assert action.answer == "ok" and ("prose" in action.repairs or "special_tokens" in action.repairs)
    assert time.perf_counter() - started < 5.0  # hang detector: was exponential in the whitespace run


FRAGMENTS = [" ", "  ", "\n", "\t", "x", "json", "<|eot_id|>", "<think>", "</think>", "```", "{", "}", "[", "]",
             '"', "'", "\\", ":", ",", "Observation:", '"type"', '"final"', "[TOOL_CALLS]", "True", "\\n"]


@given(st.lists(st.tuples(st.sampled_from(FRAGMENTS), st.integers(1, 400)), min_size=1, max_size=8))
def test_long_runs_of_any_fragment_are_handled_quickly(runs):
    text = "".join(fragment * count for fragment, count in runs)
    started = time.perf_counter()
    try:
        parse_action(text)
    except ActionFormatError:
        pass
    assert time.perf_counter() - started < 5.0  # hang detector: a backtracking blow-up takes hours


def test_a_bracket_counts_only_when_an_object_follows():
    check_parse('Step [1] of [2]: {"type": "final", "answer": "x"}', "final", answer="x")


# -- the action scanner (shared with the streaming client) -----------------------------

def scan(reply, pieces=None):
    """Feed reply to a fresh scanner (whole, or cut at the given indices); the first cut it returns."""
    scanner = _ActionScanner()
    bounds = [0, *sorted(set(pieces or [])), len(reply)]
    cuts = [scanner.feed(reply[a:b]) for a, b in zip(bounds, bounds[1:])]
    return next((cut for cut in cuts if cut is not None), None), scanner


ACTION = '{"type": "final", "answer": "a } ] \\" \' {"}'
CLOSED = [  # (the reply up to the end of its action, what follows)
    (ACTION, " and more"),
    ("  \n" + ACTION, ""),
    ("```json\n" + ACTION, "\n```"),
    ('<think>Maybe {"type": "x"}?</think>\n' + ACTION, ""),
    ("<THINKING>a</thinking>" + ACTION, ""),
    ("<tool_call>\n" + ACTION, "</tool_call>"),
    ("[TOOL_CALLS] [" + ACTION + "]", " tail"),
    ("[TOOL_CALLS][\n  " + ACTION + ',\n  {"b": 1}\n]', " x"),
    ("<|python_tag|>" + ACTION, ""),
    ("<|im_start|>assistant\n" + ACTION, "<|im_end|>"),
    ("json\n" + ACTION, ""),
    ('"' + ACTION, '"'),
    ("{'answer': 'it\\'s }', \"b\": \"'\"}", "x"),
]
OPEN = [  # (a reply with no cut, opens_with_action)
    ("[OBSERVATION] 42\n" + ACTION, False),
    ("Here it is: " + ACTION, False),
    ("Step [1]: " + ACTION, False),
    ("jsonl " + ACTION, False),
    ("I think.</think>\n" + ACTION, False),
    ("<think>still thinking " + ACTION, None),
    ("```json\n", None),
    ("", None),
    ('{"type": "final", "answer": "cut off', True),
    ('{"type": "final"]', True),
]
SCANNED = [(a + b, True, len(a)) for a, b in CLOSED] + [(reply, opens, None) for reply, opens in OPEN]


@pytest.mark.parametrize("reply, opens, cut", SCANNED, ids=[repr(r[:30]) for r, _, _ in SCANNED])
def test_scanner_finds_where_an_opening_action_ends(reply, opens, cut):
    found, scanner = scan(reply)
    assert (scanner.opens_with_action, found) == (opens, cut)
    one_by_one, scanner = scan(reply, range(len(reply)))
    assert (scanner.opens_with_action, one_by_one) == (opens, cut)


def test_scanner_reports_a_mismatched_bracket_and_stops():
    scanner = _ActionScanner()
    assert scanner.feed('{"a": [1}') is None and "mismatched '}'" in scanner.problem
    assert scanner.feed("]}") is None


def test_scanner_keeps_little_text_between_pieces():
    """An open think block or a run of packaging is not kept whole: the next piece is not rescanned."""
    scanner = _ActionScanner()
    for piece in ["<think>"] + ["reasoning, " * 3] * 2000 + ["</thi", "nk>", "<|eot_id|> " * 500, "{", '"a": 1}']:
        cut = scanner.feed(piece)
        assert len(scanner._pending) <= 12
    assert cut == scanner._fed


lead_tokens = st.sampled_from(["\n", "  ", "\t", "\ufeff", "```", "```json\n", "```JSON ", "<tool_call>", "</s>",
                               "[TOOL_CALLS]", "<|python_tag|>", "<|im_start|>assistant\n", "json\n", "JSON ",
                               "<｜Assistant｜>", "</think>"])
think_blocks = st.builds(lambda tag, text: f"<{tag}>{text}</{tag}>",
                         st.sampled_from(["think", "thinking", "reasoning"]),
                         # no tag inside: "[THINK]" in a block opens a nested one (they nest), left open
                         st.text(max_size=40).map(lambda s: s.replace("<", "").replace("[", "")))
tails = st.sampled_from(["", "\n```", " Done.", '"', "\nObservation: 4", "<|eot_id|>", ' {"type": "final", '])


@st.composite
def opening_replies(draw):
    """(lead, action text, tail, action): a reply that opens with its action, in one of several styles."""
    action = draw(actions())
    style = draw(st.sampled_from(["compact", "indented", "python", "array"]))
    if style == "python":
        text = dump(action, quotes="'")
    elif style == "indented":
        text = json.dumps(action, indent=draw(st.sampled_from([1, 2, 4, "\t"])), ensure_ascii=False)
    else:
        text = json.dumps([action] if style == "array" else action, ensure_ascii=False)
    lead = "".join(draw(st.lists(st.one_of(lead_tokens, think_blocks), max_size=4)))
    lead += draw(st.sampled_from(["", " ", "\n", '"']))
    return lead, text, draw(tails) + draw(st.text(max_size=20)), action


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(opening_replies(), st.lists(st.integers(0, 400), max_size=12))
def test_any_split_of_a_reply_gives_the_cut_parse_action_reads_to(case, splits):
    lead, text, tail, action = case
    reply = lead + text + tail
    whole, scanner = scan(reply)
    assert scanner.opens_with_action and whole == len(lead) + len(text)
    assert scan(reply, [i for i in splits if i < len(reply)])[0] == whole
    streamed, full = parse_action(reply[:whole]), parse_action(reply)  # the streaming client reads only to the cut
    assert (streamed.kind, streamed.name, streamed.arguments, streamed.answer) == \
        (full.kind, full.name, full.arguments, full.answer) == \
        (action["type"], action.get("name"), action.get("arguments", {}), action.get("answer"))


@given(prose.map(lambda s: s.replace("\ufeff", "").strip()).filter(
    lambda s: s and not s.startswith(("json", "JSON", "assistant"))), actions(),
       st.lists(st.integers(0, 200), max_size=8))
def test_prose_first_never_gives_a_cut(before, action, splits):
    reply = before + json.dumps(action)
    cut, scanner = scan(reply, [i for i in splits if i < len(reply)])
    assert cut is None and scanner.opens_with_action is False


@given(st.text(), st.integers(1, 50), st.integers(1, 50))
def test_an_observation_reads_back_as_the_text_it_carries(text, step, max_steps):
    message = agent_module._observation(text, step, max_steps)
    assert message.startswith("[OBSERVATION] ")
    assert agent_module._observation_result(message) == text.strip()
    assert agent_module._observation_result(text if not text.startswith("[OBSERVATION]") else "x") is None


def test_an_argument_beside_no_arguments_is_refused_with_a_balanced_example():
    with pytest.raises(ActionFormatError) as caught:
        parse_action('{"name": "f", "step": 2}')
    assert 'as in "arguments": {"step": ...}. Reply' in str(caught.value)

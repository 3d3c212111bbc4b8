"""Issue 18, items 1-4 (what the model only drafted never runs), and issue 19's one table of think tags.

Each item is reproduced by the issue's example first, then attacked over its siblings: every
reasoning-block spelling the parser knows (agent._THINK_BLOCKS), in parse_action and in the
streaming scanner, and a local streaming server that applies the request's "stop" as llama.cpp does.
"""
import json

import pytest
from _http_servers import chunk, client, event
from hypothesis import given
from hypothesis import strategies as st

import agent
from agent import ActionFormatError, Agent, ToolRegistry, _ActionScanner, parse_action

DELETE = '{"type":"tool_call","name":"delete_file","arguments":{"path":"a"}}'
FINAL = '{"type":"final","answer":"done"}'
SPELLINGS = agent._THINK_BLOCKS            # (opening, closing) for every reasoning block the parser knows
MARKERS = ["[OBSERVATION]", "Observation:", "observation:"]


def meaning(action):
    return action.kind, action.name, action.arguments, action.answer


def never_runs_the_draft(reply):
    """parse_action reads reply as anything but the drafted delete_file call: the final, or a refusal."""
    try:
        action = parse_action(reply)
    except ActionFormatError:
        return None
    assert action.name != "delete_file", reply
    return action


def scan(reply, cut_every=None):
    """Feed reply to a fresh scanner, whole or in pieces of cut_every characters; (the cut, the scanner)."""
    scanner = _ActionScanner()
    step = cut_every or max(1, len(reply))
    cuts = [scanner.feed(reply[i:i + step]) for i in range(0, len(reply), step)]
    return next((cut for cut in cuts if cut is not None), None), scanner


# -- item 1: everything before a lone closing tag is reasoning ------------------------------

ISSUE_1 = ('I could send ' + DELETE + ' and an [OBSERVATION] would come back, but no. </think> ' + FINAL)


def test_the_issue_example_reads_as_the_final_answer():
    action = parse_action(ISSUE_1)
    assert meaning(action) == ("final", None, {}, "done") and "think" in action.repairs


@pytest.mark.parametrize("marker", MARKERS)
@pytest.mark.parametrize("opening, closing", SPELLINGS)
def test_a_draft_before_any_lone_closing_tag_never_runs_whatever_the_reasoning_mentions(opening, closing, marker):
    for reply in [f"I could send {DELETE} and an {marker} would come back. {closing} {FINAL}",
                  f"{marker} {DELETE}\n{closing}\n{FINAL}",
                  f"Draft: {DELETE}\n{marker} deleted\n{closing}{FINAL}"]:
        assert meaning(parse_action(reply)) == ("final", None, {}, "done"), reply


@pytest.mark.parametrize("opening, closing", SPELLINGS)
def test_reasoning_with_a_draft_and_no_action_after_its_closing_tag_is_refused(opening, closing):
    """The draft was the only object: before, the lone tag did not count without an action after it."""
    for reply in [f"Maybe {DELETE}. {closing}", f"Maybe {DELETE}. {closing} I will not do that."]:
        with pytest.raises(ActionFormatError):
            parse_action(reply)


def test_a_closing_tag_quoted_inside_a_draft_is_not_the_end_of_the_reasoning():
    draft = '{"type":"tool_call","name":"delete_file","arguments":{"path":"</think>"}}'
    assert meaning(parse_action(f"I could send {draft} -- no. </think> {FINAL}")) == ("final", None, {}, "done")
    # a tag inside the action after prose is the action's text, not a closing tag
    action = parse_action('Sure: {"type":"final","answer":"close it with </think>"}')
    assert action.answer == "close it with </think>"


def test_a_closing_tag_inside_a_draft_that_never_closes_leaves_nothing_to_run():
    never_runs_the_draft('I could send {"type":"tool_call","name":"delete_file","arguments":{"path":"a </think> '
                         + FINAL)


@given(st.text(alphabet="ab {}[]\"':,\n", max_size=30), st.sampled_from(MARKERS), st.sampled_from(SPELLINGS))
def test_no_reasoning_before_a_lone_closing_tag_runs(noise, marker, spelling):
    """Reasoning starts with prose: a reply that opens with its action ends there (the streaming client stops
    reading at that point, so no later tag could change it)."""
    never_runs_the_draft(f"Plan: {noise} {DELETE} {marker} {noise} {spelling[1]} {FINAL}")


# -- item 1, on the wire: a streaming server that applies "stop" --------------------------

def applies_stop(reply, size=5):
    """A script that streams reply as llama.cpp does, cut before the first of the request's stop strings
    (llama.cpp sends neither the stop string nor anything after it, and reports finish_reason "stop")."""
    def script(ex):
        text = reply
        for stop in ex.body.get("stop") or []:
            text = text.split(stop, 1)[0]
        ex.head()
        ex.write(event(chunk({"role": "assistant", "content": None})))
        for i in range(0, len(text), size):
            if not ex.write(event(chunk({"content": text[i:i + size]}))):
                return
        ex.write(event(chunk({}, finish="stop")))
        ex.write(event("[DONE]"))
        ex.end()
    return script


def delete_tools(ran):
    tools = ToolRegistry()

    @tools.register
    def delete_file(path: str) -> str:
        """Delete a file."""
        ran.append(path)
        return "deleted"
    return tools


@pytest.mark.parametrize("reply", [ISSUE_1, ISSUE_1.replace("[OBSERVATION]", "Observation:")])
def test_a_server_that_applies_the_default_stop_never_runs_a_drafted_call(serve, reply):
    server = serve(applies_stop(reply))
    ran = []
    result = Agent(client(server), delete_tools(ran), max_steps=2).run("clean up")
    assert ran == [] and (result.stop_reason, result.answer) == ("final", "done")
    assert server.requests[0]["body"].get("stop") in (None, [])   # the client lets the whole reply arrive


def test_a_stop_the_user_asks_for_is_still_sent(serve):
    server = serve(applies_stop(FINAL))
    assert client(server, stop=["END"]).chat([{"role": "user", "content": "x"}]) == FINAL
    assert server.requests[0]["body"]["stop"] == ["END"]


# -- item 2: after prose, an example, a marker and the real action never run the example ---------

@pytest.mark.parametrize("marker", MARKERS)
def test_after_prose_an_example_then_a_marker_then_the_action_is_two_actions(marker):
    reply = (f"A deletion would be sent as {DELETE} and the result would come back as an {marker} message. "
             f"My reply: {FINAL}")
    with pytest.raises(ActionFormatError, match="two different actions"):
        parse_action(reply)
    with pytest.raises(ActionFormatError, match="two different actions"):   # the same without the marker
        parse_action(reply.replace(marker, "observation"))


def test_after_prose_a_marker_still_ends_the_reply_when_no_action_follows():
    action = parse_action(f"Calling it: {DELETE}\n[OBSERVATION] deleted, and the result is fine.")
    assert action.name == "delete_file" and "observation_tail" in action.repairs


def test_a_reply_that_opens_with_its_action_still_ends_there():
    action = parse_action(f"{DELETE}\n[OBSERVATION] deleted\n{FINAL}")
    assert action.name == "delete_file" and "observation_tail" in action.repairs


# -- item 3: OpenAI call metadata beside a call is ignored ---------------------------------

@pytest.mark.parametrize("reply", [
    "{'type': 'tool_call', 'name': 'orderStatus', 'arguments': None, 'id': 'chatcmpl-tool-8f2c'}",
    "[{'id': '...', 'type': 'tool_call', 'name': 'get_state', 'arguments': {}}]",
])
def test_the_issue_examples_read_as_the_call_with_no_arguments(reply):
    action = parse_action(reply)
    assert action.kind == "tool_call" and action.arguments == {}


@pytest.mark.parametrize("key", ["id", "index", "call_id", "ID", "Call_Id"])
@pytest.mark.parametrize("arguments", [None, {}, "missing"])
def test_call_metadata_is_not_a_misplaced_argument(key, arguments):
    obj = {"type": "tool_call", "name": "f", key: "call_1" if key != "index" else 0}
    if arguments != "missing":
        obj["arguments"] = arguments
    action = parse_action(json.dumps(obj))
    assert (action.name, action.arguments) == ("f", {})


def test_any_other_key_beside_a_call_without_arguments_is_still_refused():
    with pytest.raises(ActionFormatError, match='"path"'):
        parse_action('{"type": "tool_call", "name": "f", "id": "c1", "path": "/"}')


# -- item 4 and issue 19: one table of reasoning-block spellings ----------------------------

def test_mistral_think_blocks_hold_no_action():
    reply = f"[THINK]Maybe {DELETE}? No.[/THINK]{FINAL}"
    assert meaning(parse_action(reply)) == ("final", None, {}, "done")


@pytest.mark.parametrize("opening, closing", SPELLINGS)
def test_every_spelling_is_a_think_block_in_parse_action(opening, closing):
    for o, c in [(opening, closing), (opening.lower(), closing.lower()), (opening.upper(), closing.upper())]:
        action = parse_action(f"{o}Maybe {DELETE}? No.{c}\n{FINAL}")
        assert meaning(action) == ("final", None, {}, "done") and "think" in action.repairs
        with pytest.raises(ActionFormatError, match="never closes") as info:
            parse_action(f"{o}Maybe {DELETE}")
        assert closing.lower() in str(info.value).lower()     # the message names the closing tag to write


@pytest.mark.parametrize("opening, closing", SPELLINGS)
@pytest.mark.parametrize("case", [str, str.lower, str.upper])
def test_every_spelling_is_a_think_block_in_the_streaming_scanner(opening, closing, case):
    """The scanner skips the block and cuts at the action's end, whatever the pieces: as parse_action reads it."""
    opening, closing = case(opening), case(closing)
    nested = f"{opening}a{opening}b{closing}c{closing}"
    for lead in [f"{opening}Maybe {DELETE}? No.{closing}\n", f"{closing}\n", nested]:
        reply = lead + FINAL + " and then " + DELETE
        for size in [None, 1, 2, 3, 5]:
            cut, scanner = scan(reply, size)
            assert cut == len(lead) + len(FINAL) and "think" in scanner.packaging, (reply, size)
        assert meaning(parse_action(reply[:cut])) == meaning(parse_action(reply)) == ("final", None, {}, "done")


@pytest.mark.parametrize("opening, closing", SPELLINGS)
def test_an_open_block_of_every_spelling_keeps_the_scanner_waiting(opening, closing):
    for size in [None, 1, 4]:
        cut, scanner = scan(f"{opening}still thinking {DELETE}", size)
        assert cut is None and scanner.opens_with_action is None


def test_the_scanner_keeps_no_more_than_the_longest_tag_of_an_open_block():
    longest = max(len(tag) for block in SPELLINGS for tag in block)
    assert agent._ActionScanner.THINK_TAIL == longest - 1
    scanner = _ActionScanner()
    for piece in [SPELLINGS[0][0]] + ["reasoning " * 50] * 20:
        scanner.feed(piece)
        assert len(scanner._pending) < longest

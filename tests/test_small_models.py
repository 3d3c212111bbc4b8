"""What the loop does for small models: the worked example, the answer rung, the unknown-tool rung, copies
of the prompt refused, and the checks of a final answer. Each test runs the agent against a scripted local
server and reads the request bodies it sent, so what is tested is what a real server would receive."""
import json
import re
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st
from _http_servers import chat_answer, client
from conftest import call, final, make_tools

import agent
from agent import Agent, MockLLM, ToolRegistry


def run_on_server(serve, replies, tools=None, **options):
    """Run one task against a server that answers replies in order; the result and the request bodies."""
    server = serve(*[chat_answer(reply) for reply in replies])
    llm = client(server, stream=False)
    result = Agent(llm, make_tools() if tools is None else tools, **options).run("What is 2 + 3?")
    return result, [r["body"] for r in server.requests]


def final_only(body):
    """Whether a request's response_format allows only the final shape."""
    schema = body.get("response_format", {}).get("json_schema", {}).get("schema", {})
    return schema.get("properties", {}).get("type") == {"const": "final"}


def action_schema(body):
    schema = body.get("response_format", {}).get("json_schema", {}).get("schema", {})
    return "anyOf" in schema


# -- the prompt ------------------------------------------------------------------------

def test_the_prompt_teaches_two_calls_their_observations_and_an_answer_from_both():
    prompt = Agent(MockLLM([]), make_tools()).system_prompt
    example = prompt[prompt.index("Example"):prompt.index("Tools (")]
    lines = [line for line in example.splitlines() if line.startswith(("user:", "you:"))]
    assert [line.split(":")[0] for line in lines] == ["user", "you", "user", "you", "user", "you"]
    first, second, answered = (json.loads(lines[i][4:]) for i in (1, 3, 5))
    assert {first["name"], second["name"]} == {"lookup"} and "lookup" not in make_tools()
    assert first["arguments"] != second["arguments"]
    assert lines[2] == "user: [OBSERVATION] 29 EUR" and lines[4] == "user: [OBSERVATION] 22 EUR"
    assert "2 * 29 EUR + 22 EUR" in answered["thought"] and "80 EUR" in answered["answer"]


def test_the_example_tool_is_never_one_the_registry_has():
    registry = agent.ToolRegistry()
    registry.register(lambda query: query, name="lookup", description="Look up.")
    assert {call["name"] for call, _ in agent._example(registry).calls} == {"look_up"}
    for name in ("look_up", "search_facts", "find_fact"):
        registry.register(lambda query: query, name=name, description="Look up.")
    assert "lookup_2" in Agent(MockLLM([]), registry).system_prompt


@pytest.mark.parametrize("count", [3, 5])
def test_the_first_request_stays_a_third_of_smolagents_prompt(serve, count):
    """smolagents' ToolCallingAgent sends 5,213 characters of system prompt for 3 tools (issue 24)."""
    tools = agent._demo_tools()
    for name in ("get_price", "get_weather", "get_stock")[:count - 2]:
        tools.register(lambda item: item, name=name, description=f"The {name[4:]} of an item, e.g. of \"milk\".")
    _, bodies = run_on_server(serve, [final("5")], tools=tools, constrain="never")
    system = bodies[0]["messages"][0]["content"]
    assert len(system) <= {3: 1740, 5: 2100}[count]


def test_the_listing_leaves_out_what_every_schema_says_and_annotations():
    registry = agent.ToolRegistry()
    registry.register(lambda item: item, name="price", description="Price.",
                      parameters={"type": "object", "title": "Args", "additionalProperties": False,
                                  "properties": {"title": {"type": "string", "title": "Title", "examples": ["x"]}},
                                  "required": ["title"]})
    line = Agent(MockLLM([]), registry).system_prompt.splitlines()[-1]
    assert line == '- price: Price. {"properties":{"title":{"type":"string"}},"required":["title"]}'


# -- copies of the prompt ----------------------------------------------------------------

@pytest.mark.parametrize("reply, copied", [
    ('{"type": "final", "thought": "<why>", "answer": "<the answer>"}', "'<the answer>'"),
    ('{"type": "final", "thought": "t", "answer": "<the answer>"}', "'<the answer>'"),
    ('{"type": "final", "thought": "...", "answer": "..."}', "'...'"),
    ('{"type": "tool_call", "thought": "t", "name": "echo", "arguments": {"text": "..."}}', "'...'"),
    (agent._FINAL_SHAPE, "a placeholder"),   # the repair message's own shape, sent back as it is
], ids=["both placeholders", "answer", "dots", "an argument", "the repair shape"])
def test_a_reply_that_copies_a_placeholder_is_a_format_error_that_says_so(serve, reply, copied):
    result, bodies = run_on_server(serve, [reply, final("5")], constrain="never")
    assert result.steps[0].action is None and copied in result.steps[0].error
    assert "copied from the instructions" in bodies[1]["messages"][-1]["content"]
    assert result.answer == "5" and result.steps[1].action.answer == "5"


def test_the_examples_answer_and_each_of_its_calls_are_refused_as_copies(serve):
    example = agent._example(make_tools())
    replies = [json.dumps(c) for c, _ in example.calls] + [json.dumps(example.final), final("5")]
    result, bodies = run_on_server(serve, replies, constrain="never")
    assert all("example" in step.error for step in result.steps[:3])
    assert "copied the call of the instructions' example" in bodies[1]["messages"][-1]["content"]
    assert "copied the call of the instructions' example" in bodies[2]["messages"][-1]["content"]
    assert "the one of the instructions' example" in bodies[3]["messages"][-1]["content"]
    assert result.answer == "5"



def test_an_examples_thought_written_as_the_answer_is_refused_as_a_copy(serve):
    # a small model answered "2 * 29 EUR + 22 EUR = 80 EUR." after its calls failed (a new-user trial)
    example = agent._example(make_tools())
    thoughts = [example.final["thought"]] + [c["thought"] for c, _ in example.calls]
    replies = [final(f" {thought} ") for thought in thoughts] + [final("5")]
    result, bodies = run_on_server(serve, replies, constrain="never", max_format_errors=5)
    assert [step.action is None for step in result.steps] == [True, True, True, False]
    assert "the one of the instructions' example" in bodies[1]["messages"][-1]["content"]
    assert result.answer == "5"
    assert Agent(MockLLM([final("2 * 29 EUR + 22 EUR = 80 EUR, as the task says.")])).run("t").answer \
        == "2 * 29 EUR + 22 EUR = 80 EUR, as the task says."   # the thought within an answer is the model's


def test_a_final_answer_on_a_wrong_sum_is_sent_back_once_with_the_right_result(serve):
    # a larger model answered "The expression 17 * 23 + 4 equals 417." (it had added 22 to the 395 it got)
    replies = [final("The expression 17 * 23 + 4 equals 417."), final("It is 395.")]
    result, bodies = run_on_server(serve, replies)
    told = bodies[1]["messages"][-1]["content"]
    assert "your answer says 17 * 23 + 4 = 417, but 17 * 23 + 4 is 395" in told
    assert final_only(bodies[1])        # the next call may only answer
    assert result.steps[0].action is None and result.answer == "It is 395." and result.stop_reason == "final"
    # in the thought; the same answer again stands, and so does another wrong sum: once a run
    thought = "24 + 21 + 6 + 8 = 79 kilometers."
    for again in (final("79 kilometers", thought=thought), final("2 + 2 = 5")):
        result, bodies = run_on_server(serve, [final("79 kilometers", thought=thought), again])
        assert "your thought says 24 + 21 + 6 + 8 = 79, but 24 + 21 + 6 + 8 is 59" in bodies[1]["messages"][-1]["content"]
        assert result.stop_reason == "final" and len(result.steps) == 2


def test_an_answer_that_copies_the_refusal_after_the_right_result_is_cut_and_a_lost_answer_stands():
    replies = [final("The product is 690,908.", thought="1234 * 5678 = 690,908."),
               final("The product is 7006652. Reply with exactly one JSON object: {")]
    result = Agent(MockLLM(replies), make_tools()).run("What is 1234 * 5678?")
    assert result.answer == "The product is 7006652" and "own words" in result.steps[-1].notes[-1]
    # no other answer came: the first one is the run's, every step kept, and the history ends with it
    result = Agent(MockLLM([final("2 + 2 = 5")] + ["not json"] * 4), make_tools()).run("What is 2 + 2?")
    assert (result.stop_reason, result.answer, len(result.steps)) == ("final", "2 + 2 = 5", 4)
    assert result.steps[-1].error is not None and result.messages[-1] == {"role": "assistant",
                                                                           "content": final("2 + 2 = 5")}
    assert result.summary.startswith("answered in step 1, whose sum was wrong; then more than max_format_errors")
    result = Agent(MockLLM([final("2 + 2 = 5"), call("echo", text="x")]), make_tools(), max_steps=2).run("2 + 2?")
    assert (result.stop_reason, result.answer) == ("final", "2 + 2 = 5")
    assert result.messages[-1] == {"role": "assistant", "content": final("2 + 2 = 5")}
    # the ask is cut where a shape, or nothing, follows it
    quoted = "The tool returned 'Reply with exactly one JSON object: {}'"
    result = Agent(MockLLM([final("2 + 2 = 5"), final(quoted)]), make_tools()).run("What is 2 + 2?")
    assert result.answer == quoted
    copied = '4. Reply with exactly one JSON object: {"type": "final", "answer": "4"}'
    result = Agent(MockLLM([final("2 + 2 = 5"), final(copied)]), make_tools()).run("What is 2 + 2?")
    assert result.answer == "4"
    # on the next turn the same wrong sum is sent back again: only the task counts as given
    again = Agent(MockLLM([final("2 + 2 = 5"), final("4")]), make_tools()).run("And 2 + 2?", history=result.messages)
    assert again.answer == "4" and again.steps[0].action is None


def test_a_sum_on_its_own_line_or_a_bullet_is_read_and_one_the_task_holds_is_not():
    assert "but 391 + 4 is 395" in agent._miscalculated("17 * 23 = 391\n391 + 4 = 396", "answer", "")
    assert "but 17 * 23 + 4 is 395" in agent._miscalculated("Steps:\n* 17 * 23 + 4 = 417", "answer", "")
    assert "but 17 * 23 is 391" in agent._miscalculated("* 17 * 23 = 401\n* then add 4: 405", "answer", "")
    # a small value is not read as rounded to thousands ("= 1" for 4 is no "1 thousand")
    assert "but 2 + 2 is 4" in agent._miscalculated("2 + 2 = 1", "answer", "")
    assert "but 0 - 3 is -3" in agent._miscalculated("So 0 - 3 = -1.", "answer", "")
    for right in ("Total: 1,200 + 350 + 80 +\n45 + 25 = 1,700", "Balance: 1,000\n- 250 - 100 = 650",
                  "- 5 + 3 = -2"):    # a sum over two lines; a leading "-" may be a minus
        assert agent._miscalculated(right, "answer", "") is None
    replies = [final("No", thought="The user claims 17 * 23 + 4 = 417, but the calculator gave 395.")]
    result = Agent(MockLLM(replies), make_tools()).run("Is 17 * 23 + 4 = 417? Answer yes or no.")
    assert (result.answer, len(result.steps)) == ("No", 1)


@pytest.mark.parametrize("reply, options", [
    (final("59 kilometers", thought="24 + 21 + 6 + 8 = 79, no: 59."), {}),   # the answer shows the right result
    (final("The sum 2 + 2 = 5."), {"max_steps": 1}),                         # a refusal would end the run
    (final("1234 * 5678 = 7 million, about; 12345 * 6789 = 83,800,000."), {}),   # rounded
    (final("1/3 = 0.33, so 100 / 7 = 14.28 and 10 - 2.5 = 7.5."), {}),      # cut or rounded to its decimals
    (final("x * 3 + 4 = 10 gives x = 2; 2026-12-08 = today; 3 + 4 = 7 + 1 = 8."), {}),  # part of something else
    (final("0.25 * 100 = 25%, 5 / 0 = 1, 300000 * 2 = 6e5, 10:30 + 45 = 11:15."), {}),
    (final(r"3 times 4 + 2 = 14, 20% of 50 + 10 = 20, $24 \times 3 + 5 = 77$, ages 18-25 = 120."), {}),
    (final("The statement 17 * 23 + 4 = 417 is false. Is 2 + 2 = 5? No."), {}),   # said to be wrong
    (final("395", thought="17 * 23 = 401. Wait, 17 * 23 = 391, so 391 + 4 = 395."), {}),  # put right after
    (final("45 / 60 = 75 percent; Gesamt: 1.000 + 500 = 1.500 Euro; 45 + 30 + 50 = 2 h 5 min."), {}),
    (final("2 + 2 = 5"), {"max_format_errors": 0}),                       # no attempt would be left
])
def test_a_sum_that_is_right_or_not_alone_is_let_be(serve, reply, options):
    result, _ = run_on_server(serve, [reply], **options)
    assert result.stop_reason == "final" and len(result.steps) == 1


@pytest.mark.parametrize("replies, options", [
    (["not json"] * 2 + [final("2 + 2 = 5")] + ["not json"], {}),      # after other unusable replies
    ([final("2 + 2 = 5")], {"max_steps": 1}),
    ([call("echo", text="a"), call("echo", text="b"), final("2 + 2 = 5"), call("echo", text="c")],
     {"max_steps": 3}),                                                 # at the last step
    ([call("echo", text="a"), final("2 + 2 = 5", thought="2 + 2 = 5 as a guess")] + ["not json"] * 4, {}),
])
def test_a_wrong_sum_is_not_sent_back_where_that_could_lose_the_answer(replies, options):
    result = Agent(MockLLM(replies), make_tools(), **options).run("What is 2 + 2?")
    assert result.stop_reason == "final" and result.answer == "2 + 2 = 5"


def test_a_wrong_sum_in_a_thought_of_a_huge_number_does_not_raise():
    result = Agent(MockLLM([final("ok", thought="9" * 400 + " * 1 = 5")]), make_tools()).run("t")
    assert result.stop_reason == "final" and result.answer == "ok"


@given(st.integers(0, 10**6), st.integers(1, 10**4), st.sampled_from("+-*/"), st.integers(0, 4))
def test_a_sum_rounded_to_its_own_decimals_is_never_refused_and_one_off_by_a_unit_is(a, b, op, decimals):
    value = agent.safe_eval(f"{a} {op} {b}")
    shown = f"{value:.{decimals}f}"
    assert agent._miscalculated(f"So {a} {op} {b} = {shown}.", "answer", "") is None
    wrong = f"{float(shown) + 2 * 10 ** -decimals:.{decimals}f}"
    # "= 50" for 48 may be rounded to tens, and "= 1.002" may be a thousand and two
    if (decimals or not wrong.endswith("0")) and decimals != 3:
        assert agent._miscalculated(f"So {a} {op} {b} = {wrong}.", "answer", "") is not None


@given(st.text(alphabet="0123456789 +-*/=().,x%:?e", max_size=300))
def test_any_text_of_sum_characters_is_read_without_error(text):
    problem = agent._miscalculated(text, "answer", "")
    assert problem is None or problem.startswith("your answer says ")


def price_tools(result="29 EUR"):
    tools = make_tools()
    tools.register(lambda item: result, name="get_price", description="A price.")
    tools.register(lambda query: "The Louvre has the most visitors.", name="search", description="Search.")
    return tools


def run_copy(serve, replies, task, history=None):
    server = serve(*[chat_answer(reply) for reply in replies])
    result = Agent(client(server, stream=False), price_tools(), constrain="never").run(task, history=history)
    return result, [r["body"] for r in server.requests]


def test_an_examples_argument_in_a_registered_tool_is_refused_as_a_copy(serve):
    result, bodies = run_copy(serve, [call("get_price", item="Eiffel Tower ticket price"), final("5")], "What is 2 + 3?")
    assert result.steps[0].action is None
    told = bodies[1]["messages"][-1]["content"]
    assert 'your argument "item" is copied from the instructions\' example' in told
    assert "Eiffel" not in told and result.answer == "5"


@pytest.mark.parametrize("task, history", [
    ("Combien coûte un billet pour la tour Eiffel ?", None),          # the task names it, in French
    ("What does a ticket cost?", [{"role": "user", "content": "I am planning a visit to the Louvre."}]),
], ids=["the task", "the history"])
def test_an_examples_argument_is_no_copy_where_the_conversation_names_its_subject(serve, task, history):
    result, bodies = run_copy(serve, [call("get_price", item="Louvre ticket price"), final("29 EUR")], task, history)
    assert [s.error for s in result.steps] == [None, None]
    assert "29 EUR" in bodies[1]["messages"][-1]["content"] and result.answer == "29 EUR"


def test_an_examples_argument_is_no_copy_after_a_tool_result_names_its_subject(serve):
    replies = [call("search", query="most visited museum in Paris"), call("get_price", item="Louvre ticket price"),
               final("29 EUR")]
    result, _ = run_copy(serve, replies, "Which museum in Paris has the most visitors, and what is a ticket?")
    assert [s.error for s in result.steps] == [None, None, None] and result.answer == "29 EUR"


def test_answers_and_other_arguments_may_name_the_examples_subjects(serve):
    replies = [call("search", query="Gustave Eiffel"), final("Gustave Eiffel's company; louvre blinds.")]
    result, _ = run_copy(serve, replies, "Who built the frame of the Statue of Liberty?")
    assert [s.error for s in result.steps] == [None, None]


def test_a_system_prompt_of_the_history_shows_no_example_to_copy(serve):
    history = [{"role": "system", "content": "You are a guide. {tools}"}]
    result, _ = run_copy(serve, [call("get_price", item="Eiffel Tower ticket price"), final("29 EUR")],
                         "What is 2 + 3?", history)
    assert [s.error for s in result.steps] == [None, None]


def test_a_custom_prompt_has_no_example_to_copy(serve):
    example = agent._example(make_tools())
    result, _ = run_on_server(serve, [json.dumps(example.final)], system_prompt="Answer. {tools}",
                              constrain="never")
    assert result.answer == example.final["answer"]


# -- the answer rung ---------------------------------------------------------------------

def test_a_repeat_of_a_call_that_succeeded_asks_for_the_answer_with_the_final_shape_alone(serve):
    result, bodies = run_on_server(serve, [call("add", a=2, b=3), call("add", a=2, b=3), final("5")])
    assert not any(final_only(b) for b in bodies[:2]) and final_only(bodies[2])
    # no thought to write: after a copied "thought": "<why>", SmolLM2 went on to "<the answer>"
    schema = bodies[2]["response_format"]["json_schema"]["schema"]
    assert list(schema["properties"]) == ["type", "answer"] and schema["required"] == ["type", "answer"]
    told = bodies[2]["messages"][-1]["content"]
    # the result, then the ask: no step number or "not run again" that SmolLM2 answered with
    assert told == "[OBSERVATION] The result of your call is:\n5\nYou already have it. Give the final answer " \
                   "now, from this result.\n(step 2 of 10)"
    assert any("decoding ladder" in n and "final answer" in n for n in result.steps[1].notes)
    assert result.answer == "5" and len(result.steps) == 3


def test_a_tool_fed_its_own_result_a_second_time_is_not_run_and_the_chains_first_result_is_asked_for(serve):
    # Qwen2.5-Coder-1.5B on "What is 17 * 23 + 4?": (17*23)+4 gave 395, then 395+22, 417+29, … to max_steps
    ran = []
    result, bodies = run_on_server(serve, [call("add", a=2, b=3), call("add", a=5, b=22), call("add", a=27, b=29),
                                           final("5")], tools=make_tools(ran))
    assert ran == [("add", 2, 3), ("add", 5, 22)]
    assert not any(final_only(b) for b in bodies[:3]) and final_only(bodies[3])
    assert bodies[3]["messages"][-1]["content"] == ("[OBSERVATION] The result of your call is:\n5\nYou already have "
                                                    "it. Give the final answer now, from this result.\n(step 3 of 10)")
    assert any(agent._PAST_TASK in n for n in result.steps[2].notes)
    assert f"→ {agent._PAST_TASK} (" in agent._cli_progress(result.steps[2])   # not the rung's words
    assert agent._digest_line(result.steps[2], {}, 80).endswith(f"→ {agent._PAST_TASK}")
    assert result.answer == "5" and result.stop_reason == "final"


@pytest.mark.parametrize("replies", [
    [call("add", a=2, b=3), call("add", a=5, b=4), final("9")],                          # fed once: a step
    [call("add", a=2, b=3), call("add", a=1, b=1), call("add", a=2, b=7), final("9")],  # 1+1 is not fed 5
    [call("add", a=2, b=3), call("echo", text="5"), call("add", a=5, b=4), final("9")],   # another tool between
    [call("add", a=2, b=3), call("add", a=5, b="x"), call("add", a=5, b=4), final("9")],  # one failed
])
def test_a_call_outside_a_chain_of_one_tool_on_its_own_results_runs(serve, replies):
    ran = []
    result, bodies = run_on_server(serve, replies, tools=make_tools(ran))
    assert len(ran) == sum('"tool_call"' in r and '"x"' not in r for r in replies)
    assert not any(final_only(b) for b in bodies) and result.answer == "9"


def test_an_answer_that_repeats_the_refusal_of_an_earlier_reply_is_refused():
    # Qwen2.5-Coder-1.5B, refused for a reply with a key written twice, answered with the refusal
    twice = '{"type": "final", "thought": "a", "answer": "Oslo", "answer": "Cairo"}'
    copied = final("The key 'answer' appears twice with different values; write each key once.")
    llm = MockLLM([twice, copied, final("Oslo")])
    result = Agent(llm, make_tools()).run("Which city is warmer, Oslo or Cairo?")
    assert result.steps[1].error.startswith("your answer repeats what you were told about an earlier reply")
    assert result.answer == "Oslo" and len(result.steps) == 3


@pytest.mark.parametrize("first, answer", [
    ("no JSON here", "The reply contains no JSON object, so I answer: 5"),   # a few of its words
    ("", "The server answered 204: the reply was empty."),                   # a short refusal, whole
])
def test_an_answer_that_shares_words_with_a_refusal_or_holds_a_short_one_is_kept(first, answer):
    llm = MockLLM([first, final(answer)])
    result = Agent(llm, make_tools()).run("What is 2 + 3?")
    assert result.answer == answer and len(result.steps) == 2


def test_a_lookup_or_a_step_by_step_computation_is_no_chain(serve):
    registry, ran = ToolRegistry(), []

    @registry.register
    def page(n: int) -> str:
        """A numbered listing."""
        ran.append(("page", n))
        return "1. a 2. b 3. c"              # the next page is among its numbers: not one number

    @registry.register
    def convert(amount: float, unit: str) -> str:
        """Convert units."""
        ran.append(("convert", amount))
        return f"{amount:g} {unit} = {amount * 10:g} dm"

    @registry.register
    def add(a: int, b: int) -> int:
        """Add two integers."""
        ran.append(("add", a, b))
        return a + b
    replies = [call("page", n=1), call("page", n=2), call("page", n=3),
               call("convert", amount=4, unit="m"), call("convert", amount=40, unit="dm"),
               call("convert", amount=400, unit="dm"),
               # "What is 2 + 3?" one step at a time: the first call leaves out the task's 3
               call("add", a=2, b=1), call("add", a=3, b=2), call("add", a=5, b=0), final("5")]
    result, _ = run_on_server(serve, replies, tools=registry, max_steps=12)
    assert len(ran) == 9 and result.answer == "5"


def test_a_cut_call_sent_again_is_a_repeat_and_is_not_run(serve):
    ran = []
    result, _ = run_on_server(serve, [call("add", a=2, b=3), call("add", a=5, b=22), call("add", a=27, b=29),
                                      call("add", a=27, b=29), final("5")], tools=make_tools(ran))
    assert ran == [("add", 2, 3), ("add", 5, 22)]
    assert result.steps[3].observation.startswith("[OBSERVATION] The result of your call is:\n5\n")
    assert result.answer == "5"


def test_with_constrain_never_a_chain_runs_on(serve):
    ran = []
    result, _ = run_on_server(serve, [call("add", a=2, b=3), call("add", a=5, b=22), call("add", a=27, b=29),
                                      final("56")], tools=make_tools(ran), constrain="never")
    assert len(ran) == 3 and result.answer == "56"


@pytest.mark.parametrize("answer, own", [
    # Qwen2.5-Coder-0.5B, streaming from the CLI, after clock() twice
    ("The result of your call is: 5. You already have it. Give the final answer now, from this result.", "5."),
    ("The result of your call is:\n5", "5"),
    ("the result of your call is: 5 apples", "5 apples"),
])
def test_an_answer_wrapped_in_the_answer_rungs_words_keeps_only_its_own(serve, answer, own):
    result, bodies = run_on_server(serve, [call("add", a=2, b=3), call("add", a=2, b=3), final(answer)])
    assert final_only(bodies[2]) and bodies[2]["messages"][-1]["content"].startswith("[OBSERVATION] The result of")
    assert result.answer == own == result.steps[-1].action.answer and result.steps[-1].raw == final(answer)
    assert "the agent's own words" in result.steps[-1].notes[-1]


def test_a_placeholder_wrapped_in_the_answer_rungs_words_is_still_a_copy(serve):
    replies = [call("add", a=2, b=3), call("add", a=2, b=3), final("The result of your call is: <the answer>"),
               final("5")]
    result, bodies = run_on_server(serve, replies)
    assert result.steps[2].action is None and "'<the answer>', a placeholder" in result.steps[2].error
    assert "copied from the instructions" in bodies[3]["messages"][-1]["content"] and result.answer == "5"


@pytest.mark.parametrize("replies", [
    [call("add", a=2, b=3), final("The result of your call is: 5")],             # no rung was taken
    [call("add", a=2, b=3), call("add", a=2, b=3),
     final("The result of your call is:\nYou already have it. Give the final answer now, from this result.")],
])
def test_the_rungs_words_are_left_in_an_answer_without_the_rung_or_with_nothing_else(serve, replies):
    result, _ = run_on_server(serve, replies)
    assert result.answer == json.loads(replies[-1])["answer"] and not result.steps[-1].notes


def test_a_repeat_of_a_failed_call_gets_no_answer_rung(serve):
    result, bodies = run_on_server(serve, [call("fail"), call("fail"), final("gave up")])
    assert not any(final_only(b) for b in bodies)
    assert "Do not repeat it" in bodies[2]["messages"][-1]["content"]


def test_the_last_repeat_allowed_of_a_failed_call_asks_for_an_answer_with_the_models_own_thought(serve):
    replies = [call("fail", thought="Paris is the capital.")] * 3 + [final("Paris")]
    result, bodies = run_on_server(serve, replies, max_repeats=2)
    assert [final_only(b) for b in bodies] == [False, False, False, True]
    told = bodies[3]["messages"][-1]["content"]
    assert "failed again and will not work" in told and "from what you know" in told
    assert told.index("Your thought was: Paris is the capital.") > told.index("from what you know")
    assert any("repeated for the last time" in n for n in result.steps[2].notes)
    assert result.stop_reason == "final" and result.answer == "Paris"


def test_the_answer_rung_is_sampled_at_the_clients_temperature_even_after_the_hot_rung(serve):
    """SmolLM2-135M, asked for the final answer at 0.7, answered "True" or "{{value}}" where at 0 it answered
    from its thought; the hot rung is for breaking a loop of calls, and a final answer does not loop."""
    replies = [call("fail", thought="Paris is the capital.")] * 3 + [final("<why>"), final("Paris")]
    result, bodies = run_on_server(serve, replies, max_repeats=2)
    assert bodies[2]["temperature"] == 0.7                      # the hot rung, after the first repeat
    assert final_only(bodies[3]) and bodies[3]["temperature"] == 0.0   # the answer rung: the client's own
    assert bodies[4]["temperature"] == 0.7 and result.answer == "Paris"   # then hot again
    assert any("at the client's own temperature" in n for n in result.steps[2].notes)


def test_constrain_never_gives_the_last_repeat_of_a_failed_call_no_rung(serve):
    result, bodies = run_on_server(serve, [call("fail")] * 3 + [final("x")], constrain="never")
    assert not any("response_format" in b for b in bodies)
    assert "Do not repeat it" in bodies[3]["messages"][-1]["content"]


def test_a_failed_call_repeated_past_the_limit_still_stops_the_run(serve):
    result, bodies = run_on_server(serve, [call("fail", thought="")] * 4, max_repeats=2)
    assert "Your thought was" not in bodies[3]["messages"][-1]["content"]
    assert result.stop_reason == "repeat_limit" and len(result.steps) == 4


def test_the_last_allowed_call_sends_the_final_shape_alone(serve):
    result, bodies = run_on_server(serve, [call("echo", text="a"), call("echo", text="b"), final("ab")],
                                   max_steps=3)
    assert [final_only(b) for b in bodies] == [False, False, True]
    assert "your next reply is the last" in bodies[2]["messages"][-1]["content"]
    assert result.answer == "ab"


def test_constrain_never_takes_no_answer_rung(serve):
    result, bodies = run_on_server(serve, [call("add", a=2, b=3), call("add", a=2, b=3), final("5")],
                                   constrain="never")
    assert not any("response_format" in b for b in bodies)
    assert "Do not repeat it" in bodies[2]["messages"][-1]["content"]


def test_a_client_without_response_schema_still_gets_the_words():
    class Plain:
        def __init__(self):
            self.seen = []
            self.replies = [call("add", a=2, b=3), call("add", a=2, b=3), final("5")]

        def chat(self, messages):
            self.seen.append(messages[-1]["content"])
            return self.replies[len(self.seen) - 1]

    llm = Plain()
    result = Agent(llm, make_tools()).run("What is 2 + 3?")
    assert "Give the final answer now" in llm.seen[2] and result.answer == "5"
    assert any("final answer" in n and "response_schema" not in n for n in result.steps[1].notes)


# -- an unknown tool -----------------------------------------------------------------------

def test_an_unknown_tool_sends_the_action_schema_from_the_next_call(serve):
    # the second call: the tool rung asks again after a name that is no tool (above)
    result, bodies = run_on_server(serve, [call("add", a=2, b=3), call("calculate", x=1), call("add", a=2, b=2),
                                           final("5")])
    assert "response_format" not in bodies[1]
    assert action_schema(bodies[2]) and not tool_calls_only(bodies[2]) and action_schema(bodies[3])
    names = [b["properties"]["name"]["const"] for b in
             bodies[2]["response_format"]["json_schema"]["schema"]["anyOf"] if "name" in b["properties"]]
    assert names == ["echo", "add", "fail", "delete"]
    assert "unknown tool 'calculate'" in result.steps[1].observation
    assert any("does not exist" in n for n in result.steps[1].notes)


def test_constrain_never_keeps_the_free_text_after_an_unknown_tool(serve):
    _, bodies = run_on_server(serve, [call("calculate", x=1), final("5")], constrain="never")
    assert not any("response_format" in b for b in bodies)


# -- the tool rung ---------------------------------------------------------------------------

def tool_calls_only(body):
    schema = body.get("response_format", {}).get("json_schema", {}).get("schema", {})
    kinds = [b["properties"]["type"]["const"] for b in schema.get("anyOf", [])]
    return bool(kinds) and set(kinds) == {"tool_call"}


def test_the_first_call_may_only_call_a_tool_and_later_ones_are_free(serve):
    result, bodies = run_on_server(serve, [call("add", a=2, b=3), final("5")])
    assert tool_calls_only(bodies[0]) and "response_format" not in bodies[1]
    assert result.steps[0].notes == [
        "decoding ladder: the first call of a run may only call a tool (a response_schema of the tool calls)"]


def rung_names(body):
    """The names a request's tool rung allows: each registered tool's, and the pattern of any other."""
    schema = body["response_format"]["json_schema"]["schema"]
    return [b["properties"]["name"].get("const") or b["properties"]["name"]["pattern"] for b in schema["anyOf"]]


def test_the_tool_rung_also_takes_a_name_that_is_no_tool_with_no_arguments(serve):
    _, bodies = run_on_server(serve, [call("add", a=2, b=3), final("5")])
    *names, other = rung_names(bodies[0])
    assert names == ["echo", "add", "fail", "delete"]
    free = bodies[0]["response_format"]["json_schema"]["schema"]["anyOf"][-1]["properties"]
    assert free["arguments"] == {"type": "object", "properties": {}, "additionalProperties": False}
    assert free["name"]["pattern"] == other
    assert [n for n in ["echo", "add", "fail", "delete", "", "ad", "adds", "get_sum", "echo2", "delete-me"]
            if re.fullmatch(other, n)] == ["ad", "adds", "get_sum", "echo2", "delete-me"]


@given(st.sets(st.text("ab_-9Z", min_size=1, max_size=4), min_size=1, max_size=6),
       st.text("ab_-9Zx \"\\(=\n", max_size=6))
def test_the_other_names_pattern_takes_every_tool_name_but_the_registered_ones(names, text):
    # only a name's characters: " search" would be repaired into search and run with no arguments
    is_a_name = re.fullmatch(r"[A-Za-z0-9_-]+", text) is not None
    assert bool(re.fullmatch(agent._none_of(names), text)) == (is_a_name and text not in names)


def test_with_one_tool_the_tool_rung_names_only_it(serve):
    _, bodies = run_weather(serve, [call("get_weather", city="Oslo"), final("18 C")], "What is the weather in Oslo?",
                            one_weather_tool())
    assert rung_names(bodies[0]) == ["get_weather"]


@pytest.mark.parametrize("name, names", [
    ("get_employee", ["find_employee"]),        # its own word, not the "get_" of the other tools
    ("employeeAge", ["find_employee"]),         # a part of a camelCase name; "age" is in the description
    ("get_temperatures", ["get_weather"]),      # "temperature" in a parameter's description, plural
    ("lookup", ["echo", "add", "fail", "delete", "get_price", "get_weather", "find_employee"]),   # none: all
    ("get_thing", ["echo", "add", "fail", "delete", "get_price", "get_weather", "find_employee"]),  # "get": common
])
def test_a_tool_rung_call_to_no_tool_is_asked_again_with_the_tools_that_share_a_word_with_its_name(serve, name, names):
    # Qwen2.5-Coder-1.5B wants get_employee; under the registered names alone, "get_" leaves it the get_ tools
    tools = staff_tools()
    unknown = call(name, person="Ann Smith")
    result, bodies = run_weather(serve, [unknown, call("find_employee", person="Ann Smith"), final("41")],
                                 "What is the age of Ann Smith?", tools)
    assert bodies[1]["messages"] == bodies[0]["messages"]        # nothing run, the same question again
    assert rung_names(bodies[1]) == names                        # registered names only
    assert result.steps[0].discarded_raw == [unknown] and result.steps[0].raw == call("find_employee", person="Ann Smith")
    assert f"named '{name}', which is not a tool" in result.steps[0].notes[1]
    assert result.answer == "41" and len(result.steps) == 2 and "response_format" not in bodies[2]
    assert result.usage["completion_tokens"] == 3 * 2           # every reply counts


def test_a_name_that_is_no_tool_then_a_copied_example_each_ask_again_and_the_trace_replays_both(serve, tmp_path):
    unknown, copy = call("weather", city="Rome"), call("get_weather", city="Rome")
    result, bodies = run_weather(serve, [unknown, copy, final("merci")], "How do you say 'weather' in French?")
    assert rung_names(bodies[1]) == ["get_weather"] and action_schema(bodies[2]) and not tool_calls_only(bodies[2])
    assert result.steps[0].discarded_raw == [unknown, copy] and result.answer == "merci" and len(result.steps) == 1
    result.save(tmp_path / "run.json")
    replayed = Agent(MockLLM.from_trace(str(tmp_path / "run.json")), weather_tools()).run(
        "How do you say 'weather' in French?")
    assert replayed.answer == "merci" and replayed.steps[0].discarded_raw == [unknown, copy]


def test_tools_without_a_text_description_or_with_odd_keys_still_share_words():
    tools = staff_tools()
    tools.register(agent.Tool(name="odd", description=None, func=lambda: "x",
                              parameters={"type": "object", "properties": {1: {"type": "string"}}}))
    assert agent._sharing("get_employee", tools) == ["find_employee"]


def test_with_one_step_the_first_call_takes_no_tool_rung_and_is_not_asked_again():
    llm = MockLLM([call("get_age", person="Ann Smith"), final("41")])
    result = Agent(llm, staff_tools(), constrain="always", max_steps=1).run("What is the age of Ann Smith?")
    assert len(llm.calls) == 1 and "final" in json.dumps(llm.options[0]["response_schema"])
    assert "unknown tool 'get_age'" in result.steps[0].observation and not result.steps[0].discarded_raw


def test_after_the_first_call_a_call_to_no_tool_is_an_error_the_model_is_told_of(serve):
    tools = staff_tools()
    result, bodies = run_weather(serve, [call("find_employee", person="Ann Smith"), call("get_age", person="Ann Smith"),
                                         final("41")], "What is the age of Ann Smith?", tools)
    assert "unknown tool 'get_age'" in result.steps[1].observation and len(bodies) == 3


def one_weather_tool():
    tools = ToolRegistry()
    tools.register(lambda city: f"{city}: 18 C", name="get_weather", description="The weather in a city.",
                   parameters={"type": "object", "required": ["city"], "properties": {"city": {"type": "string"}}})
    return tools


def staff_tools():
    """make_tools' four, and three more whose names share a "get_" or a word with what a model may call."""
    tools = make_tools()
    tools.register(lambda item: "2 EUR", name="get_price", description="The price of an item.",
                   parameters={"type": "object", "required": ["item"], "properties": {"item": {"type": "string"}}})
    tools.register(lambda city: "18 C", name="get_weather", description="The weather in a city.",
                   parameters={"type": "object", "required": ["city"], "properties": {
                       "city": {"type": "string", "description": "Where to read the temperature."}}})
    tools.register(lambda person: f"{person}: 41", name="find_employee", description="An employee's age and office.",
                   parameters={"type": "object", "required": ["person"], "properties": {"person": {"type": "string"}}})
    return tools


@pytest.mark.parametrize("task", [
    "What is 2 + 3?",                    # a digit: arithmetic, or data to look up by
    "Please add these numbers up.",      # shares "add" with the tool add ("Add two integers.")
    "Echo the word hello back to me.",   # "echo", the tool's name
    "Which integers are there?",         # "integers", cut to "integ" like "integers" in add's description
    "¿Cuál es la capital de Italia?",    # no common English word: shared words cannot be judged, so the rung
    "Combien de côtés a un hexagone ?",
])
def test_a_task_with_a_digit_a_word_of_a_tool_or_in_another_language_takes_the_tool_rung(task):
    llm = MockLLM([call("add", a=2, b=3), final("5")])
    Agent(llm, make_tools()).run(task)
    assert llm.options[0]["response_schema"] == agent._tool_rung(make_tools())


@pytest.mark.parametrize("task", ["What is the capital of France?", "Who wrote the play Romeo and Juliet?",
                                  "How many legs does a spider have?"])
def test_an_english_task_that_shares_no_word_with_any_tool_may_answer_at_once_in_json(task):
    llm = MockLLM([final("Paris")])
    result = Agent(llm, make_tools()).run(task)
    # the tool rung's calls and the final shape, so a model that writes prose without a schema still sends JSON
    assert llm.options[0]["response_schema"] == free_schema(make_tools())
    assert result.steps[0].notes == ["decoding ladder: the task, in English, shares no word with any tool, so "
                                     "the first call may call a tool or answer (a response_schema of the tool "
                                     "calls and the final shape)"]
    assert result.answer == "Paris" and len(result.steps) == 1


def free_schema(registry):
    calls = agent._tool_rung(registry)
    return dict(calls, anyOf=calls["anyOf"] + registry.action_schema()["anyOf"][-1:])


def test_a_free_first_call_may_still_call_a_tool_and_one_that_is_no_tool_is_asked_again():
    llm = MockLLM([call("lookup", text="Paris"), call("echo", text="Paris"), final("Paris")])
    result = Agent(llm, make_tools()).run("What is the capital of France?")
    # asked again as the tool rung asks: "lookup" shares no word with a tool, so with every tool's call
    assert llm.options[1]["response_schema"]["anyOf"] == make_tools().action_schema()["anyOf"][:-1]
    assert result.steps[0].discarded_raw == [call("lookup", text="Paris")]
    assert result.steps[0].observation.startswith('[OBSERVATION] echo({"text":"Paris"}) returned: Paris')
    assert result.answer == "Paris" and "response_schema" not in llm.options[2]


def test_a_free_first_call_is_free_text_for_a_client_without_a_schema_and_with_never():
    class PlainClient:   # its chat takes no per-call options
        def chat(self, messages):
            return final("Paris")

    assert Agent(PlainClient(), make_tools()).run("What is the capital of France?").answer == "Paris"
    llm = MockLLM([final("Paris")])
    Agent(llm, make_tools(), constrain="never").run("What is the capital of France?")
    assert llm.options == [{}]


def test_the_words_a_task_and_a_tool_share_are_cut_and_split_alike():
    registry = agent.ToolRegistry()
    registry.register(lambda: "1%", name="CalculateTax", description="")           # BFCL's names
    registry.register(lambda city: "ok", name="air_quality", description="",
                      parameters={"type": "object", "properties": {"city": {"type": "string",
                                                                              "description": "A city's name"}}})
    assert not agent._fits_no_tool("How are taxes calculated?", registry)          # tax, calcu
    assert not agent._fits_no_tool("Which cities are the largest?", registry)      # "cities" is "city"
    assert agent._fits_no_tool("What are the primary colours?", registry)
    assert agent._words("What are the prices of cities?") == {"what", "are", "price", "citie", "city", "the"}


@pytest.mark.parametrize("task", ["Describe a sunset in one sentence.", "Type a haiku about spring, please.",
                                  "Translate this string into French for me.", "Explain the properties of gold."])
def test_the_schemas_own_keywords_are_no_words_of_a_tool(task):
    registry = agent.ToolRegistry()
    registry.register(lambda city: city, name="get_weather", description="The weather in a city.",
                      parameters={"type": "object", "additionalProperties": False, "required": ["city"],
                                  "properties": {"city": {"type": "string", "description": "The city's name."}}})
    assert agent._fits_no_tool(task, registry)


def test_the_tool_rung_is_judged_on_the_task_alone():
    # a run that stopped on max_steps ends in an observation with a digit: the next turn's task has none
    first = Agent(MockLLM([call("echo", text="a"), call("echo", text="b")]), make_tools(), max_steps=2).run("Echo a")
    llm = MockLLM([final("Paris")])
    result = Agent(llm, make_tools()).run("What is the capital of France?", history=first.messages)
    assert llm.options[0]["response_schema"] == free_schema(make_tools())
    assert "shares no word" in result.steps[0].notes[0]


def test_a_tool_whose_parameters_are_no_schema_does_not_stop_the_run():
    registry = make_tools()
    registry.register(lambda: "ok", name="odd", description="Odd.")
    runner = Agent(MockLLM([final("Paris")]), registry)
    # replaced after the prompt was written: no longer JSON (a set), checked when the tool is called
    registry.get("odd").parameters = {"type": "object", "properties": {"x": {"enum": {1, 2}}}}
    result = runner.run("What is the capital of France?")
    assert result.stop_reason == "final" and result.answer == "Paris"


def test_a_task_that_needs_no_tool_costs_one_step_more(serve):
    result, _ = run_on_server(serve, [call("echo", text="Paris"), final("Paris")])
    assert result.answer == "Paris" and len(result.steps) == 2


def weather_tools(description='The city\'s name, e.g. "Rome".', **schema):
    tools = make_tools()
    tools.register(lambda city: f"{city}: 18 C", name="get_weather", description="The weather in a city.",
                   parameters={"type": "object", "required": ["city"],
                               "properties": {"city": dict({"type": "string", "description": description}, **schema)}})
    return tools


def run_weather(serve, replies, task, tools=None):
    server = serve(*[chat_answer(reply) for reply in replies])
    result = Agent(client(server, stream=False), tools or weather_tools()).run(task)
    return result, [r["body"] for r in server.requests]


def test_a_tool_rung_call_that_only_copies_its_descriptions_example_is_asked_again_with_the_action_schema(serve):
    # Qwen2.5-Coder-0.5B, made to call a tool for "thank you" in French, sent get_weather("Rome");
    # asked again with no schema, SmolLM2-135M wrote prose: the action schema allows the final shape
    copy = call("get_weather", city="Rome")
    result, bodies = run_weather(serve, [copy, final("merci")], "How do you say 'weather' in French?")
    assert tool_calls_only(bodies[0]) and action_schema(bodies[1]) and not tool_calls_only(bodies[1])
    assert bodies[1]["messages"] == bodies[0]["messages"]          # the same question, nothing run
    assert result.answer == "merci" and len(result.steps) == 1 and result.steps[0].raw == final("merci")
    assert 'copied get_weather\'s example "Rome"' in result.steps[0].notes[-1] and result.steps[0].discarded_raw == [copy]
    assert (result.usage["prompt_tokens"], result.usage["completion_tokens"]) == (10, 4)   # both calls count


@pytest.mark.parametrize("tools", [weather_tools("The city, e.g. Rome."), weather_tools("The city.", examples=["Rome"])],
                         ids=["bare word", "examples keyword"])
def test_an_example_unquoted_or_in_the_schemas_examples_counts_too(serve, tools):
    result, bodies = run_weather(serve, [call("get_weather", city="rome"), final("merci")], "'Weather' in French?", tools)
    assert len(bodies) == 2 and not tool_calls_only(bodies[1]) and result.answer == "merci"


@pytest.mark.parametrize("task", ["How warm is it in Rome?", "Is it raining in rome today?"])
def test_the_example_is_run_where_the_task_names_it(serve, task):
    result, bodies = run_weather(serve, [call("get_weather", city="Rome"), final("18 C")], task)
    assert result.steps[0].observation.startswith(
        '[OBSERVATION] get_weather({"city":"Rome"}) returned: Rome: 18 C') and result.answer == "18 C"
    assert "messages" in bodies[1] and bodies[1]["messages"][-1]["content"].startswith("[OBSERVATION]")


def test_a_call_with_a_value_of_its_own_beside_an_example_is_run(serve):
    tools = weather_tools()
    tools.register(lambda city, unit: f"{city}: 18 {unit}", name="get_temp", description="A temperature.",
                   parameters={"type": "object", "required": ["city", "unit"], "properties": {
                       "city": {"type": "string"}, "unit": {"type": "string", "description": "e.g. celsius"}}})
    result, bodies = run_weather(serve, [call("get_temp", city="Oslo", unit="celsius"), final("18")], "Is it cold?", tools)
    assert result.steps[0].observation.startswith(
        '[OBSERVATION] get_temp({"city":"Oslo","unit":"celsius"}) returned: Oslo: 18 celsius') and len(bodies) == 2


def test_the_second_ask_gets_what_is_left_of_max_seconds():
    seen = []

    class Client:
        replies = [call("get_weather", city="Rome"), final("merci")]

        def chat(self, messages, response_schema=None, max_seconds=None):
            seen.append((response_schema is not None, max_seconds))
            time.sleep(0.05)   # the first call takes time: the second may take only what is left
            return self.replies.pop(0)

    result = Agent(Client(), weather_tools(), max_seconds=60).run("'Weather' in French?")
    assert result.answer == "merci" and [s for s, _ in seen] == [True, True]
    assert seen[1][1] < seen[0][1] - 0.04 and seen[0][1] <= 60


def test_with_constrain_always_the_second_ask_sends_the_action_schema(serve):
    server = serve(chat_answer(call("get_weather", city="Rome")), chat_answer(final("merci")))
    result = Agent(client(server, stream=False), weather_tools(), constrain="always").run("'Weather' in French?")
    bodies = [r["body"] for r in server.requests]
    assert tool_calls_only(bodies[0]) and action_schema(bodies[1]) and not tool_calls_only(bodies[1])
    assert result.answer == "merci"


def test_only_the_tool_rungs_call_is_checked_for_a_description_copy(serve):
    replies = [call("get_weather", city="Oslo"), call("get_weather", city="Rome"), final("both")]
    result, _ = run_weather(serve, replies, "Compare Oslo with another city.")
    assert [s.observation.split("\n")[0] for s in result.steps[:2]] == [
        '[OBSERVATION] get_weather({"city":"Oslo"}) returned: Oslo: 18 C',
        '[OBSERVATION] get_weather({"city":"Rome"}) returned: Rome: 18 C']


def refs(value):
    if isinstance(value, dict):
        yield from ([value["$ref"]] if "$ref" in value else [])
        for item in value.values():
            yield from refs(item)
    elif isinstance(value, list):
        for item in value:
            yield from refs(item)


def test_the_tool_rung_keeps_the_definitions_its_calls_refer_to(serve):
    tools = agent.ToolRegistry()
    tools.register(lambda point: str(point), name="place", description="Place a point.", parameters={
        "type": "object", "properties": {"point": {"$ref": "#/$defs/Point"}}, "required": ["point"],
        "$defs": {"Point": {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]}}})
    _, bodies = run_on_server(serve, [call("place", point={"x": 1}), final("placed")], tools=tools)
    schema = bodies[0]["response_format"]["json_schema"]["schema"]
    targets = list(refs(schema))
    assert tool_calls_only(bodies[0]) and targets
    assert all(t.split("/")[-1] in schema.get("$defs", {}) for t in targets)


@pytest.mark.parametrize("options", [{"constrain": "never"}, {"tools": agent.ToolRegistry()}],
                         ids=["never", "no tools"])
def test_no_tool_rung_with_constrain_never_or_without_tools(serve, options):
    result, bodies = run_on_server(serve, [final("4")], **options)
    assert result.answer == "4" and not tool_calls_only(bodies[0]) and result.steps[0].notes == []


def test_constrain_always_sends_the_action_schema_after_the_tool_rung(serve):
    _, bodies = run_on_server(serve, [call("add", a=2, b=3), final("5")], constrain="always")
    assert tool_calls_only(bodies[0]) and action_schema(bodies[1]) and not tool_calls_only(bodies[1])


def test_a_copied_thought_is_let_through(serve):
    result, _ = run_on_server(serve, [call("add", thought="<why>", a=2, b=3), final("5")])
    assert result.steps[0].action.name == "add" and result.answer == "5"


def test_a_template_of_the_models_own_is_not_taken_for_a_copy(serve):
    """SmolLM2 writes "{{item}}" of its own; our prompt has no such text, and refusing it ended runs."""
    result, _ = run_on_server(serve, [call("echo", text="{{text}}"), final("hi")])
    assert result.steps[0].action.name == "echo" and result.answer == "hi"



def test_a_repeat_of_a_failed_call_samples_hotter(serve):
    result, bodies = run_on_server(serve, [call("fail"), call("fail"), final("gave up")])
    assert bodies[1]["temperature"] != 0.7 and bodies[2]["temperature"] == 0.7
    assert any("a call that failed was repeated" in n for n in result.steps[1].notes)


def test_a_run_of_one_step_may_answer(serve):
    result, bodies = run_on_server(serve, [final("5")], max_steps=1)
    assert not tool_calls_only(bodies[0]) and result.answer == "5"


@pytest.mark.parametrize("answer", ["<The Answer>", "....", "\u2026\u2026", " <TOOL NAME> "])
def test_a_placeholder_in_another_case_or_a_longer_ellipsis_is_a_copy(answer):
    result = Agent(MockLLM([final(answer), final("5")]), make_tools(), constrain="never").run("t")
    assert "a placeholder copied" in result.steps[0].error and result.answer == "5"


@pytest.mark.parametrize("value", ["...", "\u2026", "<the answer>"])
def test_a_placeholder_the_task_names_is_its_value_not_a_copy(value):
    ran = []
    task = f'Call echo with the text "{value}", then answer with what it returned.'
    result = Agent(MockLLM([call("echo", text=value), final(value)]), make_tools(ran), constrain="never").run(task)
    assert ran == [("echo", value)] and result.answer == value and result.stop_reason == "final"


def test_a_placeholder_quoted_by_a_refusal_is_still_a_copy():
    result = Agent(MockLLM([final("..."), final("..."), final("5")]), make_tools(), constrain="never").run("t")
    assert ["a placeholder copied" in (step.error or "") for step in result.steps] == [True, True, False]


@pytest.mark.parametrize("answer", ["", "  ", "\n"])
def test_an_empty_answer_is_refused_and_the_next_one_taken(answer):
    # Qwen2.5-Coder-1.5B ended a run with "answer": "" after a format error, a final answer of nothing
    result = Agent(MockLLM([final(answer), final("5")]), make_tools(), constrain="never").run("t")
    assert result.steps[0].error.startswith('your "answer" is empty') and result.answer == "5"
    assert '"answer": "<the answer>"' in result.steps[0].observation and result.stop_reason == "final"


def test_the_schemas_that_allow_an_answer_do_not_allow_an_empty_one(serve):
    # Qwen2.5-Coder-0.5B, held to the answer rung after a final with no "answer", sent "" three times
    result, bodies = run_on_server(serve, [call("add", a=2, b=3), call("add", a=2, b=3), final("5")])
    rung = bodies[2]["response_format"]["json_schema"]["schema"]
    branch = make_tools().action_schema()["anyOf"][-1]
    for schema, reply in [(rung, {"type": "final", "answer": ""}),
                          (branch, {"type": "final", "thought": "t", "answer": ""})]:
        with pytest.raises(agent._ArgumentError, match="at least 1 character"):
            agent._Schema(schema).validate(reply)
        assert agent._Schema(schema).validate(dict(reply, answer="5"))["answer"] == "5"


@pytest.mark.parametrize("answer", ["..5", "Wait...", "<b>5</b>", "."])
def test_text_around_dots_or_brackets_is_an_answer(answer):
    result = Agent(MockLLM([final(answer)]), make_tools(), constrain="never").run("t")
    assert result.answer == answer


def test_a_replay_of_a_run_whose_copy_was_asked_again_makes_the_same_calls(serve, tmp_path):
    copy = call("get_weather", city="Rome")
    result, _ = run_weather(serve, [copy, final("merci")], "How do you say 'weather' in French?")
    path = tmp_path / "run.json"
    result.save(str(path))
    replay = MockLLM.from_trace(str(path))
    assert replay.replies == [copy, final("merci")]      # the copied reply, then the step's own
    again = Agent(replay, weather_tools()).run("How do you say 'weather' in French?")
    assert [(s.raw, s.observation, s.notes) for s in again.steps] == [(s.raw, s.observation, s.notes) for s in result.steps]
    assert again.answer == "merci" and len(replay.calls) == 2 and replay.calls[1] == replay.calls[0]

"""The stop-reason table: one place (agent._STOPS) gives each reason's summary and exit code."""
import agent
from agent import STOP_REASONS, Agent, MockLLM


def finish(reason, **options):
    """The result of a run of one step that stopped for reason."""
    run_agent = Agent(MockLLM(["x"]), **options)
    state = run_agent._start("task", None)
    state.steps.append(agent.Step(index=1, error="HTTP 500 from here: boom"))
    return run_agent._finish(state, reason)


def test_stop_reasons_are_the_table_keys_in_order():
    assert STOP_REASONS == tuple(agent._STOPS)


def test_every_summary_template_fills_in():
    options = {"max_steps": 7, "max_repeats": 4, "max_format_errors": 5, "max_seconds": 9.5,
               "max_total_tokens": 123}
    summaries = {reason: finish(reason, **options).summary for reason in STOP_REASONS}
    assert summaries["final"] == "answered in 1 step(s)"
    assert "max_steps=7" in summaries["max_steps"] and "max_repeats=4" in summaries["repeat_limit"]
    assert "max_format_errors=5" in summaries["format_errors"] and "max_seconds=9.5" in summaries["time_limit"]
    assert "max_total_tokens=123" in summaries["token_limit"]
    assert summaries["llm_error"] == "the model endpoint failed: HTTP 500 from here: boom"
    assert not any("{" in text for text in summaries.values())


def test_a_new_reason_needs_only_a_table_row(monkeypatch):
    # Before the table, _finish's own dict raised KeyError for a reason it did not list.
    monkeypatch.setitem(agent._STOPS, "budget", agent._Stop("spent the budget in {steps} step(s)", 1))
    assert finish("budget").summary == "spent the budget in 1 step(s)"
    assert "1 stopped without an answer (max_steps, repeat_limit, format_errors, time_limit, token_limit, budget)" \
        in agent._cli_parser().epilog


def test_help_names_each_exit_code_with_its_reasons(capsys):
    assert agent.main(["--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "0 answered (final)" in text and "3 the model endpoint failed (llm_error)" in text
    assert "2 bad usage or configuration" in text and "130 interrupted" in text

"""help() documents every constructor option: the class docstring lists each with its default.

The listing follows textwrap.TextWrapper's: a line ``name (default: value)`` (a required
option has no default), then one indented line of meaning. A new keyword added to
``__init__`` without its line, or a line left for a keyword that is gone, fails here.
The ``LLM`` protocol's docstring lists, one per line, each attribute the agent reads from a client.
The README's prompt section shows SYSTEM_PROMPT as it is sent.
"""
import inspect
import pathlib
import re

import pytest

import agent
from agent import LLM, Agent, OpenAICompatLLM

_OPTION_LINE = re.compile(r"^  (\w+)(?: \(default: (.+)\))?$")


def documented_options(cls):
    """{name: default text or None} for each option line of the class docstring."""
    lines = inspect.cleandoc(cls.__doc__).splitlines()
    found = {}
    for number, line in enumerate(lines):
        match = _OPTION_LINE.match(line)
        if match:
            meaning = lines[number + 1] if number + 1 < len(lines) else ""
            assert meaning.startswith("    ") and meaning.strip(), f"{match.group(1)}: no line of meaning under it"
            found[match.group(1)] = match.group(2)
    return found


def constructor_options(cls):
    return {name: p for name, p in inspect.signature(cls.__init__).parameters.items() if name != "self"}


@pytest.mark.parametrize("cls", [Agent, OpenAICompatLLM])
def test_every_constructor_option_is_listed_in_the_class_docstring(cls):
    assert set(documented_options(cls)) == set(constructor_options(cls))


@pytest.mark.parametrize("cls", [Agent, OpenAICompatLLM])
def test_each_listed_default_is_the_signature_default(cls):
    documented = documented_options(cls)
    for name, parameter in constructor_options(cls).items():
        shown = documented[name]
        if parameter.default is inspect.Parameter.empty:
            assert shown is None, f"{name} is required, but the docstring gives a default"
        elif isinstance(parameter.default, (type(None), bool, int, float, str, tuple)):
            assert shown is not None and shown.split(",")[0] == repr(parameter.default), name
        else:
            assert shown, name


class RecordingClient:
    """A scripted client that records every attribute the agent reads from it."""

    def __init__(self, replies):
        self.replies, self.read = list(replies), set()
        self.last_finish_reason = self.last_usage = self.last_reasoning = None
        self.temperature = 0.0

    def __getattribute__(self, name):
        if not name.startswith("_") and name not in ("replies", "read"):
            object.__getattribute__(self, "read").add(name)
        return object.__getattribute__(self, name)

    def chat(self, messages, **options):
        return self.replies.pop(0)


def test_the_llm_docstring_lists_every_attribute_the_agent_reads():
    final = '{"type": "final", "thought": "done", "answer": "42"}'
    llm = RecordingClient(["not json", "not json", final])   # a failed reply repeats: the temperature is read
    result = Agent(llm, max_format_errors=3).run("What is 6 * 7?")
    assert result.answer == "42"
    assert llm.read == {"chat", "last_finish_reason", "last_usage", "last_reasoning", "temperature"}
    listed = set(re.findall(r"^  (\w+)", inspect.cleandoc(LLM.__doc__), re.M))
    assert llm.read <= listed


def test_the_readme_shows_the_prompt_that_is_sent():
    """The README's prompt section shows SYSTEM_PROMPT as sent with the demo tools, character for character."""
    readme = (pathlib.Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
    start = readme.index("```\n", readme.index("### The prompt")) + len("```\n")
    shown = readme[start:readme.index("```", start)].rstrip("\n")
    assert shown == agent._render_prompt(None, agent._demo_tools())

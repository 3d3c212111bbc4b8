"""help() documents every constructor option: the class docstring lists each with its default.

The listing follows textwrap.TextWrapper's: a line ``name (default: value)`` (a required
option has no default), then one indented line of meaning. A new keyword added to
``__init__`` without its line, or a line left for a keyword that is gone, fails here.
The ``LLM`` protocol's docstring lists, one per line, each attribute the agent reads from a client.
docs/PROTOCOL.md shows SYSTEM_PROMPT as it is sent.

The README is for users: at most 400 lines, the three things a newcomer comes for in its first
150, and what it shows still holds: its Python blocks run, its commands parse, every flag it
names exists, and its links lead somewhere. (test_cli.py runs its command-line block, and
test_cli_second_day.py its first screen.)
"""
import inspect
import pathlib
import re
import sys

import pytest
from _http_servers import chat_answer
from conftest import call, final

import agent
from agent import LLM, Agent, OpenAICompatLLM

ROOT = pathlib.Path(__file__).parent.parent

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


def page(name):
    return (ROOT / name).read_text(encoding="utf-8")


def test_the_protocol_page_shows_the_prompt_that_is_sent():
    """docs/PROTOCOL.md's prompt section shows SYSTEM_PROMPT as sent with the demo tools, character for character."""
    protocol = page("docs/PROTOCOL.md")
    start = protocol.index("```\n", protocol.index("## The prompt")) + len("```\n")
    shown = protocol[start:protocol.index("```", start)].rstrip("\n")
    assert shown == agent._render_prompt(None, agent._demo_tools())


# -- the README --------------------------------------------------------------------------

def test_the_readme_is_at_most_400_lines():
    assert len(page("README.md").splitlines()) <= 400


@pytest.mark.parametrize("words", [
    "@tools.register",                                   # register a tool
    "Use a local server", "http://localhost:11434/v1",   # a local server
    "Add an MCP server", "add_mcp(", "--mcp",            # an MCP server
])
def test_a_newcomer_finds_tools_local_servers_and_mcp_in_the_first_150_lines(words):
    assert words in "\n".join(page("README.md").splitlines()[:150])


def fenced_blocks():
    """[(language, text)] of each fenced block of the README, in order."""
    blocks, language, lines = [], None, []
    for line in page("README.md").splitlines():
        if line.startswith("```") and language is None:
            language, lines = line[3:].strip(), []
        elif line.startswith("```"):
            blocks.append((language, "\n".join(lines) + "\n"))
            language = None
        elif language is not None:
            lines.append(line)
    return blocks


def python_blocks():
    return [text for language, text in fenced_blocks() if language == "python"]


def test_the_readme_python_blocks_are_the_three_this_file_runs():
    assert [block.count("\n") > 0 for block in python_blocks()] == [True] * 3


def test_the_quick_start_runs_against_a_local_server(serve, monkeypatch, capsys):
    server = serve(chat_answer(call("get_weather", city="Paris")), chat_answer(final("14 °C")))
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_MODEL", "local-model")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    namespace = {}
    exec(python_blocks()[0], namespace)
    assert capsys.readouterr().out == "14 °C\n"
    assert namespace["result"].steps[0].observation.startswith(
        '[OBSERVATION] get_weather({"city":"Paris"}) returned: 14 °C in Paris')


@pytest.mark.skipif(not __import__("importlib").util.find_spec("mcp_server_time"), reason="needs mcp-server-time")
def test_the_mcp_quick_start_runs_with_a_real_server(serve, monkeypatch, capsys):
    server = serve(chat_answer(call("get_current_time", timezone="Asia/Tokyo")), chat_answer(final("noon")))
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_MODEL", "local-model")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    block = python_blocks()[1]
    assert '"python -m mcp_server_time"' in block
    exec(block.replace('"python -m mcp_server_time"', repr([sys.executable, "-m", "mcp_server_time"])), {})
    assert capsys.readouterr().out == "noon\n"


def test_the_writing_tools_block_registers_what_it_says():
    namespace = {}
    exec(python_blocks()[2], namespace)
    registry = namespace["registry"]
    assert sorted(tool.name for tool in registry) == ["get_weather", "ping", "rm", "search"]
    assert registry.call("get_weather", {"city": "Oslo", "unit": "f"}) == "14 °F in Oslo"
    assert registry.call("get_weather", {"city": "Oslo", "unit": "k"}).startswith("ERROR:")
    assert registry.call("search", {"q": "x"}) == '["a result"]' and registry.call("ping", {}) == "pong"
    assert registry.call("rm", {"path": "/tmp/x"}).startswith("ERROR:")   # confirm=True, and no one to ask


def readme_commands():
    """Every ``python agent.py`` line of the README's fenced blocks, continuations joined, variables dropped."""
    commands = []
    for _, block in fenced_blocks():
        for line in block.replace("\\\n", " ").splitlines():
            line = re.sub(r"^(\w+=\S+ )+", "", line.strip())
            if line.startswith("python agent.py"):
                commands.append(re.split(r"\s{2,}", line)[0])
    return commands


def test_every_readme_command_parses():
    import shlex

    commands = readme_commands()
    assert len(commands) >= 9
    for command in commands:
        agent._cli_args(shlex.split(command)[2:])   # a bad flag or value exits 2


def test_every_flag_the_readme_names_exists():
    known = {option for action in agent._cli_parser()._actions for option in action.option_strings}
    named = set(re.findall(r"(?<![\w-])--[a-z][a-z-]*[a-z]", page("README.md")))
    assert named and named <= known, named - known


def test_the_readme_links_lead_somewhere():
    readme = page("README.md")
    slugs = {re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
             for heading in re.findall(r"^#+ (.+)$", readme, re.M)}
    for target in re.findall(r"\]\(([^)]+)\)", readme):
        if target.startswith("#"):
            assert target[1:] in slugs, target
        elif not target.startswith("http"):
            assert (ROOT / target).exists(), target
    for path in re.findall(r"`((?:docs|bench|examples|tests)/[\w./]+)`", readme):
        assert (ROOT / path).exists(), path

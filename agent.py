"""agent.py -- a ReAct agent in one file, for models without native function calling.

The model answers every turn with one JSON object; the agent parses it strictly,
runs only registered tools, and sends each result back as a plain user message
that starts with ``[OBSERVATION]``. Standard library only, Python 3.9+, any
OpenAI-compatible endpoint (Ollama, vLLM, llama.cpp, LM Studio, hosted APIs).

Quick start::

    from agent import Agent, OpenAICompatLLM, ToolRegistry

    tools = ToolRegistry()

    @tools.register
    def add(a: int, b: int) -> int:
        '''Add two integers.'''
        return a + b

    llm = OpenAICompatLLM.from_env()  # OPENAI_BASE_URL, OPENAI_API_KEY, OPENAI_MODEL
    result = Agent(llm, tools).run("What is 2 + 40?")
    print(result.answer, result.stop_reason)

Protocol: the model sends ``{"type": "tool_call", "thought": ..., "name": ..., "arguments": {...}}``
or ``{"type": "final", "thought": ..., "answer": ...}``; results come back as ``[OBSERVATION] ...``.

Map of this file, in the order the data flows. Each section uses only the ones above it
(``python bench/forward_refs.py`` checks), but for two forward references, both made at call
time from a method body: ``ToolRegistry.add_mcp`` calls ``_add_mcp`` (MCP), and ``MockLLM.chat``
with no script calls the offline planner ``_offline_reply`` (Calculator and demo). A ruler
``# -- Section, part`` starts a part of a section, and a part whose ruler says "skip on first read"
is machinery the rest can be read without:

- Errors and settings: ``AgentError`` and its four children; ``_check_setting`` checks numeric
  options; ``_cut`` is the one shortener (with "…", on one line, escaped, or keeping both ends);
  then the table of every text the model is told but the system prompt (shapes, ``_ask``,
  observations, the loop's nudges, tools' and MCP's ``ERROR:`` texts, memory's notes).
- Tools: ``Tool.from_function`` describes a function (its docstring and signature, each hint by
  ``_hint_schema``); ``ToolRegistry.call`` validates the arguments and runs the tool, and every
  failure is a ``_ToolFailed`` that ``_result`` alone turns into the ``ERROR:`` text;
  ``action_schema`` describes every valid reply. Then the schema keywords that are enforced:
  ``_Schema`` checks a schema once and validates arguments against it, ``_regex`` runs a pattern as
  ECMA-262 means it. The worker pool that runs a call under its time limit (skip on first read).
- Protocol: ``SYSTEM_PROMPT`` and ``Action``; ``parse_action`` reads a reply in commented steps,
  then ``_interpret`` turns the object into an ``Action`` by ``_Keys``, the one reading of an
  action's keys; ``_refuse`` and ``_observation`` write what goes back; ``_repeating_tail`` detects
  a looping reply. Skip on first read: the packaging (think tags, a quoted action) and the
  near-JSON lexer, ``_ActionScanner`` and ``_read_value``.
- Transport (skip on first read): deadlines, bodies, server-sent events, and ``_request``, the one
  HTTP request under a deadline, shared by ``OpenAICompatLLM`` and MCP over HTTP.
- Models: the ``LLM`` protocol and ``MockLLM`` (``from_trace`` replays a run); ``OpenAICompatLLM``
  talks HTTP (``chat``, ``from_env``), then its helpers: what a request sends and what an answer
  means. Then (skip on first read) the adaptations to a server, reading a streamed reply, and
  reading a trace.
- MCP: ``_add_mcp`` (what ``ToolRegistry.add_mcp`` calls) registers an MCP server's tools;
  ``_McpSession`` routes answers by id. Then (skip on first read) the transports: ``_McpStdio``
  (a command) and ``_McpHttp`` (a URL).
- Loop: ``_STOPS``, the stop-reason table; ``Step`` and ``AgentResult``, the trace; ``Agent.run``
  is the loop, its methods in groups (asking the model, acting on the reply, the decoding ladder).
  Then (skip on first read) the run's state: ``_RunState.trim`` drops old steps for the context
  budget, and a digest or a summary stands in for them; ``_copied`` finds a copied prompt, and
  ``_miscalculated`` a wrong sum in an answer (with ``safe_eval``, below).
- Batch: ``run_batch`` runs a task list through one ``Agent`` on a few threads, resumable.
- Calculator and demo: ``safe_eval``, arithmetic over an ``ast`` whitelist, used by the demo's
  ``calculator`` tool and the loop's check of a sum; ``_demo_tools``, the ``calculator`` and
  ``clock`` tools, and the offline planner ``MockLLM()`` runs (``_offline_reply``); ``run``, one
  call with those by default.
- CLI: ``main`` is ``python agent.py``: it parses, builds, runs and prints; then --batch; then
  (skip on first read) the status line, what the run is doing while you wait.
"""

from __future__ import annotations

import argparse
import array
import ast
import atexit
import collections
import contextlib
import copy
import difflib
import functools
import importlib.util
import inspect
import io
import ipaddress
import itertools
import json
import logging
import math
import operator
import os
import queue
import random
import re
import shutil
import sys
import threading
import time
import tokenize
import types
import typing
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Callable, Optional, Protocol, Union
from urllib.parse import unquote, urlsplit, urlunsplit

# The HTTP stack (http.client, urllib.request, socket, ssl) is imported where it is used: importing
# it costs more than agent.py itself, and the offline demo and the tests of the other sections never
# need it. asyncio (by the first async tool) and email.utils (for a Retry-After date) are deferred
# for the same reason.


__all__ = [
    "AgentError", "UnsafeExpression", "ActionFormatError", "ToolError", "LLMError",
    "safe_eval", "Tool", "ToolRegistry", "Action", "parse_action", "SYSTEM_PROMPT",
    "LLM", "MockLLM", "OpenAICompatLLM", "STOP_REASONS", "Step", "AgentResult", "Agent",
    "run", "main", "run_batch",
]
__version__ = "0.1.0"

_log = logging.getLogger("agent")


# -- Errors and settings ---------------------------------------------------------------
# the exception tree; the one check of numeric options (every constructor's, chat's max_seconds,
# the CLI's)

class AgentError(Exception):
    """Base class of every error agent.py raises on purpose."""


class UnsafeExpression(AgentError, ValueError):
    """safe_eval refused an expression; ``.expression`` keeps the text."""

    def __init__(self, message: str, expression: str = "") -> None:
        super().__init__(message)
        self.expression = expression


class ActionFormatError(AgentError, ValueError):
    """A reply is not one valid action; the message is written to the model, ``.text`` keeps the
    reply."""

    def __init__(self, message: str, text: str = "") -> None:
        super().__init__(message)
        self.text = text


class ToolError(AgentError):
    """A tool definition is invalid; raised at registration (a programming error)."""


class LLMError(AgentError):
    """The model endpoint failed after retries; ``.status`` is the HTTP status or None.

    ``.kind`` names a failure the agent can act on: ``"context_overflow"`` when the
    prompt does not fit the model's context window, ``"connection_refused"`` when
    nothing accepts connections at the server's address, else None. With a context
    overflow, ``.n_ctx`` (the context window) and ``.n_prompt_tokens`` (the prompt's
    size) are the token counts the server reported, each None when it did not.
    """

    def __init__(self, message: str, status: Optional[int] = None,
                 kind: Optional[str] = None, *, n_ctx: Optional[int] = None,
                 n_prompt_tokens: Optional[int] = None) -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind
        self.n_ctx, self.n_prompt_tokens = n_ctx, n_prompt_tokens


def _text(value: Any, show: Callable[[Any], str] = str) -> str:
    """``str(value)`` (or ``show(value)``); a placeholder when that raises, so no report of a
    failure can fail."""
    try:
        return show(value)
    except KeyboardInterrupt:
        raise
    except BaseException:  # a __str__ or __repr__ written by whoever made the value
        return f"<{type(value).__name__} that cannot be shown>"


# C0 controls but tab and newline, DEL, C1 controls (\x9b is a CSI), bidirectional overrides
_TERMINAL_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f"
                                "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _cut(text: Any, limit: Optional[int], *, one_line: bool = False, escape: bool = False,
         ends: bool = False) -> str:
    r"""text, or its first ``limit - 1`` characters and "…": at most limit characters (None: the
    whole text), and the cut is shown. The one way agent.py shortens a text.

    ``one_line`` first joins the lines and runs of white space of ``str(text)`` with one space;
    ``escape`` then shows terminal control characters escaped (``\x1b``), so model or server text
    cannot drive a terminal; ``ends`` keeps the head (two thirds) and the tail (one third) of a
    long text instead, with a line between saying how many characters were cut (``_CUT``).

    >>> _cut("abcdef", 4), _cut(" a\n b ", None, one_line=True), _cut("\x1b[2J", None, escape=True)
    ('abc…', 'a b', '\\x1b[2J')
    """
    if one_line:
        text = " ".join(str(text).split())
    if escape:
        text = _TERMINAL_CONTROLS.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"),
                                      text)
    if limit is None or len(text) <= limit:
        return text
    if not ends:
        return text[:limit - 1] + "\u2026"
    tail = limit // 3
    head = limit - tail
    return _CUT.format(head=text[:head], n=len(text) - head - tail, tail=text[len(text) - tail:])


def _is_int(value: Any) -> bool:
    """An int that is not a bool (``True`` is an int to Python, never a count or a status to us)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    """An int or a float that is not a bool."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class _Rule(typing.NamedTuple):
    """What values a numeric option takes (internal)."""

    integer: bool       # an int (else any finite number)
    low: float          # the lowest value
    inclusive: bool     # whether low itself is allowed


# every numeric option of every class, and the CLI's
_SETTINGS = {name: _Rule(*rule) for name, rule in {
    "max_steps": (True, 1, True), "max_repeats": (True, 0, True),
    "max_format_errors": (True, 0, True), "max_observation_chars": (True, 200, True),
    "max_context_chars": (True, 1000, True), "max_total_tokens": (True, 1, True),
    "max_retries": (True, 0, True), "max_response_bytes": (True, 1, True),
    "max_tokens": (True, 1, True), "temperature": (False, 0, True), "timeout": (False, 0, False),
    "default_timeout": (False, 0, False), "max_request_seconds": (False, 0, False),
    "max_seconds": (False, 0, False), "max_thought_chars": (True, 1, True),
    "workers": (True, 1, True),
}.items()}


def _check_setting(name: str, value: Any, optional: bool = False) -> None:
    """ValueError naming the option and its rule unless value is a finite number in range (no bool,
    no text).

    With ``optional``, None is accepted too.
    """
    if optional and value is None:
        return
    integer, low, inclusive = _SETTINGS[name]
    # Comparisons, not math.isfinite: nan fails them, and so does an int too large for a float.
    if ((_is_int(value) if integer else _is_number(value))
            and (value >= low if inclusive else value > low) and value <= sys.float_info.max):
        return
    rule = f"{'an integer' if integer else 'a finite number'} {'>=' if inclusive else '>'} {low}"
    shown = _cut(_text(value, repr), 40)
    raise ValueError(f"invalid {name} {shown} (must be {rule}{', or None' if optional else ''})")


# -- Errors and settings, what the model is told ---------------------------------------
# every text the model reads, in groups, but the system prompt and its worked example (Protocol);
# each is used by its name where it is sent, filled in with str.format where it has {fields}

# The two shapes, shown in the prompt and in every message about a reply that cannot be used; their
# placeholders sent back as values are copies of the prompt (Protocol's _PLACEHOLDERS).
_WHY, _THE_ANSWER, _SOME_TOOL = "<why>", "<the answer>", "<tool name>"
_CALL_SHAPE = (f'{{"type": "tool_call", "thought": "{_WHY}", "name": "{_SOME_TOOL}", "arguments": '
               '{...}}')
_FINAL_SHAPE = f'{{"type": "final", "thought": "{_WHY}", "answer": "{_THE_ANSWER}"}}'
_BOTH_SHAPES = f"{_CALL_SHAPE} or {_FINAL_SHAPE}"
# ends every message about a reply that cannot be used
_ASK_FOR_SHAPE = "Reply with exactly one JSON object: "


def _ask(problem: str, shape: str = _BOTH_SHAPES) -> str:
    """What the model is told about a reply that cannot be used: the problem, then the exact shape
    to send."""
    return f"{problem}. {_ASK_FOR_SHAPE}{shape}"


def _asked_problem(message: str) -> str:
    """The problem an ``_ask`` message names, without the shape it asks for; any other message
    whole.

    >>> _asked_problem(_ask("expected one JSON object, found 2"))
    'expected one JSON object, found 2'
    """
    problem, ask, _ = message.rpartition(f". {_ASK_FOR_SHAPE}")   # a shape never holds the ask
    return problem if ask else message


# Observations (_observation): the marker that starts each, and the budget line that ends it.
_OBSERVATION = "[OBSERVATION]"
_BUDGET = "(step {step} of {max_steps}{last})"
_LAST_STEP = "; your next reply is the last: give the final answer"   # {last} before the last call
# A result that came back (not an error) names the call it answers: shown "395" alone, a model
# took it for a part and went on ("Now I need to add 4 to the result"; docs/NOTES.md, "The
# observation").
_RETURNED = "{call} returned: {result}"

# The loop: a reply it refuses, and what it adds to an observation.
_CUT_OFF = _ask("your reply was cut off at the token limit before the JSON object was complete; "
                "send a shorter reply with a one-sentence thought")
_REPEATED = _ask("your reply kept repeating the same text, so it was stopped; write one short JSON "
                 "object and nothing else")
_ATTEMPTS_LEFT = "ERROR: {error} ({left} attempt{s} left.)"   # a format error's observation
_ONE_ACTION = ("(Your reply held more than one action: only the first was run. Send one action "
               "per reply.)")
_REPEAT = ("You already made this exact call in step {step}; it was not run again. Its "
           "result:\n{result}\nDo not repeat it: use the result, try something different, or give "
           "the final answer.")
# The result first, then that it is in hand and the ask: with the step number and "not run again"
# first, a small model answers with those words (docs/NOTES.md, "The answer rung").
_IN_HAND = ("The result of your call is:\n{result}\nYou already have it. Give the final answer "
            "now, from this result.")
# A call that computes on past the task (_RunState.chain_start) is not run: the step's note, and
# what the CLI's line and the history's digest show in place of its result.
_PAST_TASK = "not run: the call computes on past the task"
# The last repeat allowed of a failed call; the model's own thought comes last: a small model copies
# the text nearest its reply (docs/NOTES.md, "The answer rung").
_GIVE_UP = ("You already made this exact call in step {step}; it failed again and will not work. "
            "Give the final answer now, from what you know.")
_YOUR_THOUGHT = "{text}\nYour thought was: {thought}"
# a reply that copied the prompt (_copied): the problem, sent with _ask
_COPIED_PLACEHOLDER = ("your {where} is {value!r}, a placeholder copied from the instructions; "
                       "write your own")
_COPIED_ANSWER = ("your answer is the one of the instructions' example, which is about another "
                  "task; answer yours")
_COPIED_CALL = ("you copied the call of the instructions' example; call one of the listed tools "
                "for your own task")
# an answer with nothing in it (Agent._parse): no user takes "" for an answer
_EMPTY_ANSWER = 'your "answer" is empty; write the answer to the task in it'
# an answer that repeats a refusal of an earlier reply (Agent._parse)
_COPIED_REFUSAL = "your answer repeats what you were told about an earlier reply; answer the task"
# a sum in a final reply whose result is wrong (_miscalculated)
_MISCALCULATED = "your {where} says {claim}, but {expression} is {value}"   # the value last: copied
# (names nothing of the example: a refusal is in what the model saw, which the check reads)
_COPIED_ARGUMENT = ("your {where} is copied from the instructions' example, which is about "
                    "another task; ask for what yours needs")

# Tools (ToolRegistry.call): each failure, and what to do next. Validation's one-off problems
# ("parameter 'a' must be integer, got string") are written beside their checks, and fill
# {problem}.
_FAILURE_PREFIX = "ERROR:"   # every failure's text starts with it (read only of an overridden call)
_UNKNOWN_TOOL = "ERROR: unknown tool {name}.{hint} Available tools: {available}."
_DID_YOU_MEAN = " Did you mean {close!r}?"   # its {hint}, when a registered name is close
_NOT_AN_OBJECT = "ERROR: the arguments for {name!r} must be a JSON object, got {got}."
_TOO_DEEP = "ERROR: the arguments for {name!r} are nested too deeply. Send flatter arguments."
_INVALID = ("ERROR: invalid arguments for {name!r}: {problem}. Expected arguments: {expected}. "
            "Fix and call again.")
_DECLINED = ("ERROR: the user declined to run {name!r} with these arguments. Do not retry it; go "
             "on without it.")
_TOO_LATE = ("ERROR: {name!r} was not started: only {left:.2f} s of the time budget was left. Give "
             "the final answer with what you have.")
_TOOL_RAISED = ("ERROR: {name!r} raised {kind}: {message}. Check the arguments or try another "
                "approach.")
_TIMED_OUT = ("ERROR: {name!r} did not finish within {seconds:g} s and was abandoned. Try smaller "
              "input or another approach.")
_NOT_JSON = "ERROR: {name!r} returned a value that cannot be shown as JSON ({kind}: {message})."
_BROKE = "ERROR: calling {name} failed inside the agent: {kind}: {message}"   # the last resort
# the worker pool's refusals, as {why}
_NOT_STARTED = "ERROR: {name!r} was not started: {why}."
_NO_WORKER = "no worker thread could start it within its {limit:g} s limit"
_TOO_MANY_ABANDONED = ("{n} earlier tool calls are still running past their time limit (at most "
                       "{most} may). Try again later or go on without it")
# a long result (or reply) keeps its head and tail (_cut with ends)
_CUT = "{head}\n[... {n:,} characters cut ...]\n{tail}"

# MCP: a call that failed on the server's side (the registry's own texts cover bad arguments), and
# a result with no text.
_MCP_IS_ERROR = "ERROR: {tool!r} failed: {text} Check the arguments or try another approach."
_MCP_NO_TEXT = "the tool reported an error"   # the {text} of an isError that has none
_MCP_REFUSED = ("ERROR: the MCP server refused {tool!r}: {text} Check the tool name and "
                "arguments.")
_MCP_NO_ANSWER = ("ERROR: {tool!r} got no answer from its MCP server within {seconds:g} s (the "
                  "call was cancelled). Try smaller input, or go on without it.")
_MCP_INPUT_REQUIRED = ("ERROR: {tool!r} asked for input from a person, which this agent cannot "
                       "give. Go on without it.")
_MCP_FAILED = "ERROR: {tool!r} could not be called: {text} Go on without it."
_MCP_NOTHING = "(the tool returned nothing)"

# Memory: what stands in for the steps a context budget drops (joined to the task's message), and
# the summary's request (memory="summary").
_DROPPED_NOTE = ("[Note: {n} earlier step(s) of this task were left out to save space; "
                 "their results are no longer shown.]")
_DIGEST_HEADER = ("[Note: {n} earlier step(s) of this task were left out to save space; their "
                  "calls and results:]")
_DIGEST_GAP = "... {n} more step(s) left out here ..."
_DIGEST_REPEAT = "a repeat of step {step}, not run again"
_DIGEST_UNREADABLE = "(a reply that could not be read)"
_SUMMARY_HEADER = ("[Note: {n} earlier step(s) of this task were left out to save space. Notes on "
                   "what they found:]")
_SUMMARY_PROMPT = ("You keep the notes of an agent that works on a task with tools. Its oldest "
                   "steps are about to leave its view. Write down the facts from the earlier notes "
                   "and these steps that the task may still need: names, numbers, results, what "
                   "failed. Plain sentences, at most {words} words, no JSON, nothing else.")
_SUMMARY_REQUEST = ("Task: {task}\n\nEarlier notes: {notes}\n\nSteps leaving the view (call → "
                    "result):\n{steps}")


# -- Tools -----------------------------------------------------------------------------
# from a plain function to a described, validated, time-limited call (ToolRegistry)

@dataclass
class Tool:
    """One function the model may call: its name, description and JSON Schema of arguments."""

    name: str
    description: str
    parameters: dict                  # JSON Schema of the arguments object
    func: Callable[..., Any]
    timeout: Optional[float] = None   # seconds; None: the registry's default
    confirm: bool = False             # ask confirm(name, arguments) before every run
    # parameters as checked when the tool was made: what validates its arguments
    _schema: Any = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        try:
            _check_setting("timeout", self.timeout, optional=True)
        except ValueError as exc:
            raise ToolError(f"tool {_text(self.name, repr)}: {exc}") from None
        self._schema = _check_parameters(self.parameters, _text(self.name, repr))

    @classmethod
    def from_function(cls, func: Callable, *, name: Optional[str] = None,
                      description: Optional[str] = None, parameters: Optional[dict] = None,
                      timeout: Optional[float] = None, confirm: bool = False) -> Tool:
        """Build a Tool from a plain function: name, docstring and signature; ToolError if it cannot
        be described."""
        if not callable(func):
            raise ToolError(f"a tool must be callable, got {type(func).__name__}")
        name = name if name is not None else getattr(func, "__name__", None)
        if name == "<lambda>":
            raise ToolError("a lambda has no name: register it with name=...")
        _check_tool_name(name)
        # 1. the docstring: its first paragraph, and {parameter: description} from a Google-style
        # Args: section
        headers = ("Args:", "Arguments:", "Parameters:")
        lines = (getattr(func, "__doc__", None) or "").strip().splitlines()
        summary_lines = []
        for line in lines:
            if not line.strip() or line.strip() in headers:
                break
            summary_lines.append(line.strip())
        arg_docs: dict = {}
        current, indent, in_args = None, None, False
        for line in lines:
            if line.strip() in headers:
                in_args, indent = True, None
                continue
            if not in_args or not line.strip():
                continue
            level = len(line) - len(line.lstrip())
            if level == 0:
                in_args = False  # the next section starts
                continue
            match = re.match(r"\s+\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)", line)
            if match and (indent is None or level <= indent):
                indent, current = level, match.group(1)
                arg_docs[current] = match.group(2).strip()
            elif current:
                arg_docs[current] = (arg_docs[current] + " " + line.strip()).strip()
        # 2. unless given, the parameters: from the signature, each typed by its hint
        # (_hint_schema)
        if parameters is None:
            try:
                signature = inspect.signature(func)
            except (TypeError, ValueError) as exc:
                raise ToolError(f"cannot read the signature of tool {name!r}: {exc}") from None
            # A callable object keeps its hints on its class's __call__; a partial has none to read.
            target = (func if isinstance(func, (types.FunctionType, types.MethodType))
                      else type(func).__call__)
            hints = {}
            if isinstance(target, (types.FunctionType, types.MethodType)):
                try:
                    hints = typing.get_type_hints(target)
                except Exception as exc:
                    raise ToolError(f"cannot resolve the type hints of {func!r}: {exc}") from None
            properties, required = {}, []
            for param in signature.parameters.values():
                if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                    raise ToolError(f"tool {name!r}: *args/**kwargs ({param.name}) cannot be "
                                    "described to a model; use named parameters or pass "
                                    "parameters=")
                if param.kind is param.POSITIONAL_ONLY:
                    raise ToolError(f"tool {name!r}: positional-only parameter {param.name!r} "
                                    "cannot be passed by name")
                schema = dict(_hint_schema(hints.get(param.name, Any),
                                           f"parameter {param.name!r} of tool {name!r}"))
                if param.name in arg_docs:
                    schema["description"] = arg_docs[param.name]
                if param.default is param.empty:
                    required.append(param.name)
                properties[param.name] = schema
            parameters = {"type": "object", "properties": properties, "required": required,
                          "additionalProperties": False}
        return cls(name, description or " ".join(summary_lines) or name, parameters, func, timeout,
                   bool(confirm))


class _ToolResult(typing.NamedTuple):
    """What one tool call brought back (internal): the text the model reads, and whether the call
    failed.

    A failure's text starts with ``ERROR:``; a tool's own output may too without being one.
    """

    text: str
    failed: bool = False


class _ToolFailed(Exception):
    """A tool call failed (internal): ``args[0]`` is the exact text the model reads.

    The one way to say so: the registry's checks, the worker pool and MCP's tools raise it, and
    ``ToolRegistry._result`` alone turns it into a failed ``_ToolResult``.
    """

    @classmethod
    def raised(cls, name: str, exc: BaseException) -> _ToolFailed:
        """The failure of tool ``name`` that raised ``exc``: exc itself when it is one."""
        if isinstance(exc, _ToolFailed):
            return exc
        return cls(_TOOL_RAISED.format(name=name, kind=type(exc).__name__, message=_text(exc)))


class ToolRegistry:
    """The tools a model may call, by name; ``call`` validates, runs and never raises.

    Tools with a time limit run on the worker threads of one process-wide pool
    (``_Pool``): a limit that does not fire costs microseconds, and a tool that
    overruns is abandoned (its thread finishes in the background, then ends).
    """

    def __init__(self, default_timeout: Optional[float] = 30.0) -> None:
        _check_setting("default_timeout", default_timeout, optional=True)
        self.default_timeout = default_timeout  # seconds per call; a tool's own timeout wins
        self._tools: dict = {}
        self._servers: list = []                # MCP connections (add_mcp), closed by close()
        # tools an MCP server lists that add_mcp left out (their schema, their name): name -> why
        self.left_out: dict = {}

    # Calling: call, for users; _loop_result, for the loop; _call checks, then runs (_run)

    def call(self, name: str, arguments: Any, *,
             confirm: Optional[Callable[[str, dict], bool]] = None, max_chars: Optional[int] = None,
             timeout: Optional[float] = None) -> str:
        """Validate and run one tool call; return its output as text. Never raises.

        Every failure -- unknown tool, invalid arguments, a declined confirmation,
        an exception (a tool's own KeyboardInterrupt on a worker thread included), a
        timeout -- comes back as text starting with ``ERROR:`` that says what to do
        next. ``timeout`` is what is left of the caller's time budget: it caps the
        tool's own limit and sets a deadline that a slow ``confirm`` does not move;
        with less than ``_MIN_START_SECONDS`` left, before or after ``confirm``, the tool
        is not started at all. Output over ``max_chars`` keeps its head and tail. Ctrl-C propagates
        (and so does a KeyboardInterrupt from a tool run inline, which looks the same).
        """
        return self._result(name, arguments, confirm=confirm, max_chars=max_chars,
                            timeout=timeout).text

    # call as defined here: when self.call is another (a subclass's, the instance's, a wrapper
    # patched onto the class), the loop calls that
    _plain_call = call

    def _result(self, name: str, arguments: Any, *, confirm: Optional[Callable] = None,
                max_chars: Optional[int] = None, timeout: Optional[float] = None) -> _ToolResult:
        """``call``, with whether the call failed: the loop reads the flag, never the text. The one
        place a ``_ToolFailed`` becomes a result."""
        try:
            try:
                text, failed = self._call(name, arguments, confirm, timeout), False
            except _ToolFailed as exc:
                text, failed = exc.args[0], True
            return _ToolResult(_cut(text, max_chars, ends=True), failed)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # a last resort: call() must never raise
            return _ToolResult(_BROKE.format(name=_text(name, repr), kind=type(exc).__name__,
                                             message=_text(exc)), failed=True)

    def _loop_result(self, name: str, arguments: Any, **options: Any) -> _ToolResult:
        """What the loop runs: ``_result``; or, when ``call`` is overridden (in a subclass, on the
        instance or patched onto the class, say to audit or refuse calls), that ``call``, so it sees
        every call the agent makes. Its text is all it gives: a failure is text starting ``ERROR:``.
        """
        if getattr(self.call, "__func__", None) is ToolRegistry._plain_call:
            return self._result(name, arguments, **options)
        text = self.call(name, arguments, **options)
        return _ToolResult(text, failed=text.startswith(_FAILURE_PREFIX))

    def _call(self, name: Any, arguments: Any, confirm: Optional[Callable],
              timeout: Optional[float]) -> str:
        """What one call returns, as text; _ToolFailed for every failure the model is told of."""
        # the deadline starts now: confirm, asked before the run, may be slow
        deadline = None if timeout is None else time.monotonic() + timeout

        def check_time() -> None:
            # refused with less than the floor left before the deadline: the tool could only be
            # abandoned (nan fails the comparison too, and is refused)
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and not left >= _MIN_START_SECONDS:
                raise _ToolFailed(_TOO_LATE.format(name=name, left=max(left, 0.0)))

        # 1. the tool, and its arguments checked against its schema
        tool = self._tools.get(name) if isinstance(name, str) else None
        if tool is None:
            close = difflib.get_close_matches(_text(name), list(self._tools), n=1, cutoff=0.5)
            hint = _DID_YOU_MEAN.format(close=close[0]) if close else ""
            raise _ToolFailed(_UNKNOWN_TOOL.format(name=_text(name, repr), hint=hint,
                                                   available=", ".join(self._tools) or "none"))
        if not isinstance(arguments, dict):
            raise _ToolFailed(_NOT_AN_OBJECT.format(name=name, got=_shown(arguments)))
        limit = tool.timeout if tool.timeout is not None else self.default_timeout
        try:
            schema = tool._schema
            if schema is None or schema.root is not tool.parameters:   # parameters replaced since
                schema = tool._schema = _check_parameters(tool.parameters, repr(name))
            schema.check_declared(arguments)
            # checking is bounded by the tool's limit too, apart from the run's own
            checked_by = None if limit is None else time.monotonic() + limit
            if deadline is not None:
                checked_by = deadline if checked_by is None else min(checked_by, deadline)
            kwargs = schema.validate(arguments, deadline=checked_by)
        except ToolError as exc:
            raise _ToolFailed(_INVALID.format(name=name, problem=exc, expected="a schema agent.py "
                                              "can enforce")) from None
        except RecursionError:
            raise _ToolFailed(_TOO_DEEP.format(name=name)) from None
        except (_ArgumentError, ValueError) as exc:   # ValueError: a pattern's search gave up
            expected = json.dumps(tool.parameters.get("properties", {}), ensure_ascii=False)
            if isinstance(exc, ValueError):
                check_time()   # a check cut short by a spent budget is the budget's refusal
            raise _ToolFailed(_INVALID.format(name=name, problem=exc, expected=expected)) from None
        # 2. the time left, and the user's consent
        check_time()
        if tool.confirm:
            try:
                confirmed = confirm is not None and confirm(name, kwargs) is True
            except Exception:
                _log.warning("confirm callback failed for %s; treating it as declined", name,
                             exc_info=True)
                confirmed = False
            if not confirmed:
                raise _ToolFailed(_DECLINED.format(name=name))
            check_time()  # the answer may have taken the rest of the budget
        # 3. the run, within the tool's limit capped by the deadline
        if deadline is not None:
            left = deadline - time.monotonic()
            limit = left if limit is None else min(limit, left)
        try:
            result = self._run(tool.name, tool.func, kwargs, limit)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # the tool's own, or the pool's refusal
            raise _ToolFailed.raised(tool.name, exc) from None
        # 4. the result as text: a string as it is (even a str subclass with its own __str__)
        if isinstance(result, str):
            return str.__str__(result)
        try:
            return json.dumps(result, ensure_ascii=False, default=str)
        except Exception as exc:  # a cycle, too deep, or a __str__ that raises
            raise _ToolFailed(_NOT_JSON.format(name=tool.name, kind=type(exc).__name__,
                                               message=_text(exc))) from None

    def _run(self, name: str, func: Callable, kwargs: dict, limit: Optional[float]) -> Any:
        if limit is not None:
            return _POOL.run(name, func, kwargs, limit)
        result = func(**kwargs)  # no limit: run inline, no thread needed
        if not hasattr(type(result), "__await__"):
            return result
        asyncio = sys.modules.get("asyncio")  # never imported: no loop can be running
        try:
            in_loop = asyncio is not None and asyncio.get_running_loop() is not None
        except RuntimeError:
            in_loop = False
        if in_loop:  # asyncio.run cannot nest: await it on a worker's own loop
            return _POOL.run(name, lambda: result, {}, None)
        return _invoke(lambda: result, {})

    # Registering

    def register(self, func: Any = None, *, name: Optional[str] = None,
                 description: Optional[str] = None, parameters: Optional[dict] = None,
                 timeout: Optional[float] = None, confirm: bool = False) -> Any:
        """Register a function (bare decorator, decorator with options, or direct call) or a Tool.

        Returns the function unchanged (or the Tool). ToolError when the tool
        cannot be described to a model or its name is invalid or taken.
        """
        if isinstance(func, Tool):
            self._add(func)
            return func
        if func is None:
            return lambda f: self.register(f, name=name, description=description,
                                           parameters=parameters, timeout=timeout, confirm=confirm)
        self._add(Tool.from_function(func, name=name, description=description,
                                     parameters=parameters, timeout=timeout, confirm=confirm))
        return func

    def _add(self, tool: Tool) -> None:
        _check_tool_name(tool.name)
        if tool.name in self._tools:
            raise ToolError(f"duplicate tool name {tool.name!r}")
        self._tools[tool.name] = tool

    # The tools as a collection

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> typing.Iterator[Tool]:
        return iter(list(self._tools.values()))

    def __len__(self) -> int:
        return len(self._tools)

    def get(self, name: str) -> Optional[Tool]:
        return self._tools.get(name)

    # Describing the tools to a server

    def schemas(self) -> list[dict]:
        """The tools in OpenAI's ``tools`` shape, for clients with native function calling."""
        return [{"type": "function", "function": {"name": t.name, "description": t.description,
                                                  "parameters": t.parameters}}
                for t in self._tools.values()]

    def action_schema(self, max_thought_chars: Optional[int] = 300) -> dict:
        """JSON Schema of one valid reply: ``anyOf`` a tool_call per tool, plus final.

        Give it to a server that does constrained decoding (``response_schema=``)
        and the model cannot write a malformed action. ``thought`` is capped at
        ``max_thought_chars`` (None: no cap), so a thought that repeats itself
        ends instead of running to the token limit. ValueError for a cap below 1.
        """
        _check_setting("max_thought_chars", max_thought_chars, optional=True)
        thought: dict = {"type": "string"}
        if max_thought_chars is not None:
            thought["maxLength"] = max_thought_chars
        defs: dict = {}   # what the tools' references point to, under names of the whole schema
        branches = [{
            "type": "object",
            "properties": {"type": {"const": "tool_call"}, "thought": dict(thought),
                           "name": {"const": t.name},
                           # as they are, or, when they hold references (which point into the
                           # tool's own schema), a copy whose references point into defs
                           "arguments": t._schema.rewritten(t._schema.root, defs, {})
                           if t._schema.targets else t._schema.root},
            "required": ["type", "thought", "name", "arguments"], "additionalProperties": False,
        } for t in self._tools.values()]
        branches.append({
            "type": "object",
            # not empty: the loop refuses an empty answer, and a model held to the answer rung
            # sent "" again and again (docs/NOTES.md, "The loop")
            "properties": {"type": {"const": "final"}, "thought": thought,
                           "answer": {"type": "string", "minLength": 1}},
            "required": ["type", "thought", "answer"], "additionalProperties": False,
        })
        # not oneOf: more servers support anyOf, and xgrammar reads oneOf as anyOf
        schema: dict = {"anyOf": branches}
        if defs:
            schema["$defs"] = defs
        return schema

    # MCP servers: their tools registered, their processes stopped

    def add_mcp(self, server: Union[str, list], *, name: Optional[str] = None,
                env: Optional[dict] = None, cwd: Any = None, tools: Optional[Iterable[str]] = None,
                timeout: Optional[float] = None, headers: Optional[dict] = None) -> list[str]:
        """Register the tools of an MCP server; return the names they were registered under.

        ``server`` is a command (a list, or a string split as a shell would; never run through a
        shell), started with only PATH, HOME, locale and temp of our environment plus ``env``,
        in ``cwd``; or an ``http(s)://`` URL (Streamable HTTP), sent ``headers`` (its credentials,
        which no message shows). ``tools`` keeps only the tools so named; ``name`` prefixes every
        tool name (``name_tool``) when two servers would collide, and names the server in messages.
        ``timeout`` bounds each request (default: the registry's ``default_timeout``, or
        ``_MCP_DEFAULT_TIMEOUT`` seconds). A tool the server marks ``destructiveHint`` asks
        ``confirm`` first. Every failure of a call is an ``ERROR:`` result. A tool whose schema
        cannot be enforced or whose name is not a valid one is left out: the others register, and
        ``registry.left_out`` and a warning on the log say which and why. ToolError when the
        server cannot be started, reached or read, a name in ``tools`` is missing or was left out,
        or a name is taken: then nothing is registered and the server is stopped.
        """
        before = set(self._tools)
        _add_mcp(self, server, name=name, env=env, cwd=cwd, tools=tools, timeout=timeout,
                 headers=headers)
        return [tool for tool in self._tools if tool not in before]

    def close(self) -> None:
        """Stop the MCP servers of this registry (stdin closed, then SIGTERM, then SIGKILL, to each
        server's process group), each within a few seconds whatever the server does.

        Their tools stay listed and answer with an ERROR. Also done at the end of a ``with``
        block and at interpreter exit.
        """
        servers, self._servers = self._servers, []
        for server in servers:
            server.close()

    def __enter__(self) -> ToolRegistry:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()


# what Agent and run take as tools
_Tools = Union[ToolRegistry, Iterable[Union[Tool, Callable[..., Any]]], None]


def _check_tool_name(name: Any) -> str:
    if not isinstance(name, str) or not re.match(r"[A-Za-z0-9_-]{1,64}\Z", name):
        raise ToolError(f"invalid tool name {name!r} (use 1-64 letters, digits, '_' or '-')")
    return name


_JSON_TYPES = {str: "string", bool: "boolean", int: "integer", float: "number", list: "array",
               dict: "object",
               type(None): "null"}  # the one table of Python types and JSON Schema's names for them


def _hint_schema(hint: Any, where: str) -> dict:
    """JSON Schema for one type hint; ToolError for hints a model cannot be told about."""
    if hint in _JSON_TYPES:
        return {"type": _JSON_TYPES[hint]}
    if hint is Any:
        return {}
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Literal:
        kinds = {_JSON_TYPES.get(type(arg)) for arg in args}
        schema: dict = {"enum": list(args)}
        if len(kinds) == 1 and None not in kinds:
            schema["type"] = kinds.pop()
        return schema
    # Optional[X], and X | None on 3.10+
    if (origin in (typing.Union, getattr(types, "UnionType", typing.Union)) and len(args) == 2
            and type(None) in args):
        inner = _hint_schema(next(a for a in args if a is not type(None)), where)
        if not inner:
            return inner  # Optional[Any]: anything, null included
        if set(inner) == {"type"}:
            return {"type": [inner["type"], "null"]}
        # Not a list of types beside enum/items: llama.cpp's grammar reads such a list as bare
        # types.
        return {"anyOf": [inner, {"type": "null"}]}
    if origin is list:
        return {"type": "array",
                "items": _hint_schema(args[0], where)} if args else {"type": "array"}
    if origin is dict:
        return {"type": "object"}
    raise ToolError(f"unsupported type hint {hint!r} for {where} "
                    "(use str, int, float, bool, list[...], dict, Optional[...] or Literal[...])")


# -- Tools, schemas: every keyword a schema holds is enforced, or refused at registration ----

# The keywords agent.py enforces, each with the kind of value it takes. Every other keyword is
# refused when the tool is registered (a schema never fails open), except the annotations, which
# describe and never constrain.
_SCHEMA_KEYWORDS = {
    "type": "types", "enum": "list", "const": "any", "nullable": "bool", "$schema": "metaschema",
    "$ref": "ref", "$id": "uri", "$anchor": "name", "$defs": "schemas", "definitions": "schemas",
    "allOf": "schema_list", "anyOf": "schema_list", "oneOf": "schema_list", "not": "schema",
    "if": "schema", "then": "schema", "else": "schema",
    "properties": "schemas", "patternProperties": "patterns", "additionalProperties": "schema",
    "unevaluatedProperties": "schema", "propertyNames": "schema", "required": "names",
    "dependentRequired": "names_map", "dependentSchemas": "schemas", "dependencies": "dependencies",
    "minProperties": "count", "maxProperties": "count",
    "prefixItems": "schema_list", "items": "items", "additionalItems": "schema",
    "unevaluatedItems": "schema", "contains": "schema", "minContains": "count",
    "maxContains": "count", "minItems": "count", "maxItems": "count", "uniqueItems": "bool",
    "minLength": "count", "maxLength": "count", "pattern": "regex", "minimum": "number",
    "maximum": "number", "exclusiveMinimum": "number", "exclusiveMaximum": "number",
    "multipleOf": "positive",
}
# Annotations describe and never constrain; so do extension keys ("x-..."). contentSchema holds a
# schema that is not applied, so nothing in it can be referred to.
_ANNOTATIONS = frozenset({"title", "description", "default", "examples", "example", "format",
                          "$comment", "deprecated", "readOnly", "writeOnly",
                          "contentEncoding", "contentMediaType", "contentSchema",
                          "discriminator"})   # pydantic's, beside a oneOf that is enforced anyway
_MAX_SCHEMA_DEPTH = 200   # subschemas nested, or references followed, deeper than this are refused


def _check_parameters(parameters: Any, tool: str) -> _Schema:
    """The checked schema of a tool's parameters; ToolError, naming the tool and the keyword,
    unless parameters is a JSON Schema of an object whose every keyword is enforced (or an
    annotation), whose every value fits its keyword, and whose references resolve."""
    if not isinstance(parameters, dict) or parameters.get("type") != "object":
        raise ToolError(f"parameters of tool {tool} must be a JSON Schema with \"type\": "
                        "\"object\"")
    try:
        json.dumps(parameters, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise ToolError(f"parameters of tool {tool} are not JSON: {exc}") from None
    schema = _Schema(parameters, tool)
    missing = [key for key in parameters.get("required", []) if schema.declared is not None
               and key not in schema.declared]
    if missing:
        raise ToolError(f"tool {tool}: the required parameter {missing[0]!r} is not in "
                        "\"properties\"")
    return schema


class _Schema:
    """A JSON Schema checked once, then used to validate any number of values (``validate``).

    Checking walks the schema once: it refuses a keyword that is not enforced, resolves every
    ``$ref`` against the ``$id`` it sits under, and compiles every pattern. Validation remembers
    each (subschema, value, place) it has checked, so a schema whose references share definitions
    costs its size times the value's, never the number of paths through it. Draft 7 is read where
    the root's ``$schema`` says so; its ``$id`` beside a ``$ref`` is then ignored, as it says.
    """

    def __init__(self, root: Any, tool: str = "the schema") -> None:
        self.root, self.tool = root, tool
        self.draft7 = isinstance(root, dict) and "/draft-0" in str(root.get("$schema", ""))
        self.targets: dict = {}       # id(schema holding "$ref") -> the schema it refers to
        self.patterns: dict = {}      # pattern -> its compiled search
        self.leaves: set = set()      # ids of the schemas that hold no other: checked, not memoised
        self.states = 0               # the patterns' automata, in states
        nodes: dict = {}              # id -> schema, every one walked
        base = "https://tool.invalid/root.json"
        found: dict = {base: root}    # absolute URI (of an $id, or with an anchor) -> schema
        refs: list = []               # (schema holding "$ref", its base URI, where)
        self._walk(root, base, "#", nodes, found, refs, 0)
        for schema, base, where in refs:
            target = self._resolve(schema["$ref"], base, found, where)
            if target is None or (not isinstance(target, bool) and id(target) not in nodes):
                raise ToolError(f"tool {tool}: \"$ref\" {schema['$ref']!r} at {where} points to no "
                                "schema in the tool's parameters (only local references are read, "
                                "never another document)")
            self.targets[id(schema)] = target
        self.declared = self._declared(root, {})

    # Checking the schema, once: _walk checks every keyword, and references resolve
    # (_joined, _resolve)

    def _walk(self, schema: Any, base: str, where: str, nodes: dict, found: dict, refs: list,
              depth: int) -> None:
        if isinstance(schema, bool):
            return
        if depth > _MAX_SCHEMA_DEPTH:
            raise ToolError(f"tool {self.tool}: the schema is nested more than "
                            f"{_MAX_SCHEMA_DEPTH} levels deep at {where}")
        nodes[id(schema)] = schema

        def is_schema(sub: Any) -> bool:
            return isinstance(sub, (dict, bool))

        def is_names(sub: Any) -> bool:
            return isinstance(sub, list) and all(isinstance(name, str) for name in sub)

        # 1. every keyword is enforced (or an annotation), and its value fits its kind
        for keyword, value in schema.items():
            kind = _SCHEMA_KEYWORDS.get(keyword)
            if kind is None and keyword not in _ANNOTATIONS and not keyword.startswith("x-"):
                known = difflib.get_close_matches(_text(keyword), [*_SCHEMA_KEYWORDS,
                                                                   *_ANNOTATIONS], n=1, cutoff=0.8)
                meant = f" (did you mean {known[0]!r}?)" if known else ""
                raise ToolError(f"tool {self.tool}: the JSON Schema keyword {keyword!r} at {where} "
                                f"is not enforced by agent.py{meant}; remove it, or check the "
                                "value in the tool itself")
            problem = None   # what is wrong with the value, said after the keyword
            if kind == "types":
                kinds = [value] if isinstance(value, str) else value
                known_types = list(_JSON_TYPES.values())
                if (not isinstance(kinds, list) or not kinds
                        or not all(isinstance(t, str) for t in kinds)):
                    problem = "must be a type name or a non-empty list of them"
                wrong = None if problem else next((t for t in kinds if t not in known_types),
                                                  None)
                if wrong is not None:
                    # "int" meant "integer"
                    alias = next((t for p, t in _JSON_TYPES.items() if p.__name__ == wrong), None)
                    close = difflib.get_close_matches(wrong.lower(), known_types, 1)
                    meant = alias or next(iter(close), None)
                    hint = f"did you mean {meant!r}? " if meant else ""
                    problem = (f"has the unknown type {wrong!r} ({hint}the types are "
                               f"{', '.join(known_types)})")
            elif kind:
                # every check of a value's kind, written as (fits, problem)
                checks = {
                    "list": (isinstance(value, list), "must be a list"),
                    "names": (is_names(value), "must be a list of names"),
                    "names_map": (isinstance(value, dict) and all(map(is_names, value.values())),
                                  "must map names to lists of names"),
                    "count": (_is_number(value) and value >= 0 and float(value).is_integer(),
                              "must be an integer >= 0"),
                    "number": (_is_number(value) and math.isfinite(value), "must be a number"),
                    "positive": (_is_number(value) and math.isfinite(value) and value > 0,
                                 "must be a number > 0"),
                    "bool": (isinstance(value, bool), "must be true or false"),
                    "regex": (isinstance(value, str), "must be a regular expression"),
                    "uri": (isinstance(value, str), "must be a URI"),
                    # another meta-schema may turn vocabularies off, or on: only the drafts read
                    # here are known
                    "metaschema": (isinstance(value, str) and re.fullmatch(
                        r"https?://json-schema\.org/(draft-0[4-7]/|draft/20(19-09|20-12)/)schema#?",
                        value), "must name draft 7 or 2020-12 (or 4, 6, 2019-09): another "
                        "meta-schema is not read"),
                    "name": (isinstance(value, str)
                             and re.match(r"[A-Za-z_][\w.-]*\Z", value, re.ASCII),
                             "must be a name"),
                    "ref": (isinstance(value, str), "must be a reference (\"#/$defs/Name\")"),
                    "schema": (is_schema(value), "must be a schema (an object, or true or false)"),
                    "schemas": (isinstance(value, dict) and all(map(is_schema, value.values())),
                                "must map names to schemas"),
                    "patterns": (isinstance(value, dict) and all(map(is_schema, value.values())),
                                 "must map patterns to schemas"),
                    "dependencies": (isinstance(value, dict)
                                     and all(is_schema(sub) or is_names(sub)
                                             for sub in value.values()),
                                     "must map names to schemas or to lists of names"),
                    "items": (is_schema(value)
                              or (isinstance(value, list) and all(map(is_schema, value))),
                              "must be a schema, or a list of them"),
                    "schema_list": (isinstance(value, list) and bool(value)
                                    and all(map(is_schema, value)),
                                    "must be a non-empty list of schemas"),
                }
                fits, problem = checks.get(kind, (True, ""))
                problem = None if fits else problem
            if self.draft7 and keyword in ("prefixItems", "minContains"):
                # draft 7 ignores them, and applying them would loosen its items or contains
                problem = "is not a draft 7 keyword: draft 7 reads the items without it"
            if problem is None and kind in ("regex", "patterns"):
                for pattern in [value] if kind == "regex" else value:
                    try:
                        self.patterns[pattern], size = _regex(pattern)
                        self.states += size
                        if self.states > 200_000:   # memory, whatever the number of patterns
                            raise ValueError("the schema's patterns together are too large")
                    except ValueError as exc:
                        problem = (f"has the pattern {pattern!r}, which agent.py cannot "
                                   f"enforce: {exc}")
            if problem:
                raise ToolError(f"tool {self.tool}: {keyword!r} at {where} {problem}")
        # 2. the names the schema is known by, and its base URI: an $id starting with "#" is draft
        # 7's anchor, and draft 7 ignores an $id beside a $ref
        uri = schema.get("$id") if not (self.draft7 and "$ref" in schema) else None
        names = []
        if uri is not None and not uri.startswith("#"):
            base = self._joined(base, uri.split("#")[0], where)
            names.append(base)
        for name in (uri if uri and uri.startswith("#") else None,
                     "#" + schema["$anchor"] if "$anchor" in schema else None):
            if name:
                names.append(base.split("#")[0] + name)
        for name in names:   # one name, two schemas: a reference to it would be a guess
            if found.setdefault(name, schema) is not schema:
                raise ToolError(f"tool {self.tool}: {name!r} names two schemas (again at {where})")
        if "$ref" in schema:
            refs.append((schema, base, where))
        # 3. the subschemas, each walked; a schema that holds none is a leaf
        leaf = "$ref" not in schema
        for keyword, value in schema.items():
            kind = _SCHEMA_KEYWORDS.get(keyword)
            if kind in ("schemas", "patterns", "dependencies"):
                subs: Iterable = value.items()
            elif kind == "schema_list" or (kind == "items" and isinstance(value, list)):
                subs = enumerate(value)
            else:
                subs = [("", value)] if kind in ("schema", "items") else ()
            for name, sub in subs:
                if isinstance(sub, (dict, bool)):
                    leaf = False
                    place = f"{where}/{keyword}" + (f"/{name}" if name != "" else "")
                    self._walk(sub, base, place, nodes, found, refs, depth + 1)
        if leaf:
            self.leaves.add(id(schema))

    def _joined(self, base: str, uri: str, where: str) -> str:
        """uri read against base; ToolError for a relative one that cannot be (a URN base)."""
        if re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", uri):
            return uri
        if uri.startswith("#") or not uri:
            return base.split("#")[0] + uri
        from urllib.parse import urljoin, uses_relative   # deferred: only an $id or a $ref needs it
        if urlsplit(base).scheme not in uses_relative:
            raise ToolError(f"tool {self.tool}: the relative reference {uri!r} at {where} cannot "
                            f"be read against {base!r}")
        return urljoin(base, uri)

    def _resolve(self, ref: str, base: str, found: dict, where: str) -> Any:
        """The schema a reference names: a whole schema by its $id, an anchor, or a JSON pointer
        (``~1`` is ``/``, ``~0`` is ``~``) into one. None when it names nothing known."""
        uri, _, fragment = self._joined(base, ref, where).partition("#")
        if not fragment.startswith("/"):
            return found.get(uri + "#" + fragment if fragment else uri)
        target = found.get(uri)
        for part in fragment[1:].split("/"):
            part = unquote(part).replace("~1", "/").replace("~0", "~")
            if isinstance(target, dict) and part in target:
                target = target[part]
            elif isinstance(target, list) and part.isdigit() and int(part) < len(target):
                target = target[int(part)]
            else:
                return None
        return target

    def _declared(self, schema: Any, seen: dict) -> Optional[dict]:
        """The argument names a tool's schema declares, in order: its properties and those of the
        branches and the reference it is built from. None when it allows others
        (``additionalProperties`` true or a schema, or ``patternProperties``)."""
        if not isinstance(schema, dict):
            return {}
        if id(schema) in seen:    # each schema once: shared definitions cost their size
            return seen[id(schema)]
        seen[id(schema)] = {}
        others = schema.get("additionalProperties", schema.get("unevaluatedProperties", False))
        if others is not False or "patternProperties" in schema:
            seen[id(schema)] = None
            return None
        names = dict.fromkeys(schema.get("properties", {}))
        parts = [*schema.get("allOf", ()), *schema.get("anyOf", ()), *schema.get("oneOf", ()),
                 schema.get("then"), schema.get("else"), self.targets.get(id(schema)),
                 *schema.get("dependentSchemas", {}).values()]
        for part in parts:
            more = self._declared(part, seen)
            if more is None:
                names = None
                break
            names.update(more)
        seen[id(schema)] = names
        return names

    # Validating a value: validate, then _check each (subschema, value) once, which runs its
    # _keywords; what objects and lists hold, the bounds, and what unevaluated* sees

    def validate(self, value: Any, path: str = "", deadline: Optional[float] = None) -> Any:
        """value checked against the schema; returned with integral floats as ints where
        "integer" asks. Raises _ArgumentError naming the parameter, and ValueError when the
        check cannot finish: past ``deadline`` (a ``time.monotonic()`` reading), too deep."""
        return self._check(value, self.root, path, {"deadline": deadline}, 0)

    def check_declared(self, arguments: dict) -> None:
        """The arguments themselves (the function's keyword arguments) are only those the schema
        declares, unless it allows others: JSON Schema's default (any key) would let a model pass a
        keyword the tool never offered."""
        declared = self.declared
        extra = [] if declared is None else [key for key in arguments if key not in declared]
        if extra:
            allowed = ", ".join(declared) or "none"
            raise _ArgumentError(f"unexpected parameter {_text(extra[0])!r} (allowed: {allowed})")

    def _check(self, value: Any, schema: Any, path: str, memo: dict, depth: int) -> Any:
        """value against one subschema, each (subschema, value, place) once: memo holds what each
        gave, or ... while it is being checked (a reference back to it reads no value), and the
        deadline of the whole check. A schema that holds no other costs its own keywords only: it
        is checked again, not remembered."""
        if schema is True:
            return value
        if schema is False:
            raise _ArgumentError(f"{_parameter(path)} is not allowed, got {_shown(value)}")
        memo[None] = memo.get(None, 0) + 1     # the work, counted
        if memo.get("deadline") is not None and time.monotonic() > memo["deadline"]:
            raise ValueError("checking them against the schema takes longer than the tool's time "
                             "limit; send smaller arguments")
        if id(schema) in self.leaves:
            return self._keywords(value, schema, path, memo, depth + 1)
        key = (id(schema), id(value), path)
        done = memo.get(key)
        if done is not None:
            if done[1] is ...:   # ValueError, not _ArgumentError: `not` must never take it
                raise ValueError(f"the schema of {_parameter(path)} is too deep to check: it "
                                 "refers to itself without reading a value")
            if isinstance(done[1], _ArgumentError):
                raise done[1]
            return done[1]
        if depth > _MAX_SCHEMA_DEPTH:   # ValueError: `not` and `oneOf` must never take it
            raise ValueError(f"the schema of {_parameter(path)} is too deep to check (over "
                             f"{_MAX_SCHEMA_DEPTH} levels of subschemas and values)")
        memo[key] = (value, ...)    # the value stays referenced: its id is not reused meanwhile
        try:
            result = self._keywords(value, schema, path, memo, depth + 1)
        except _ArgumentError as exc:
            memo[key] = (value, exc)
            raise
        memo[key] = (value, result)
        return result

    def _keywords(self, value: Any, schema: dict, path: str, memo: dict, depth: int) -> Any:
        """Every keyword of one subschema, in the order that lets each use the last one's value."""
        def check(item: Any, sub: Any, where: str = path) -> Any:
            return self._check(item, sub, where, memo, depth)

        def passes(item: Any, sub: Any, where: str = path) -> bool:
            try:
                check(item, sub, where)
                return True
            except _ArgumentError:
                return False

        # 1. a reference applies beside the other keywords (draft 7's too: they were written to
        # apply), then the type, which may turn 2.0 into 2
        if "$ref" in schema:
            value = check(value, self.targets[id(schema)])
        if "type" in schema:   # one of its types (OpenAPI's ``nullable: true`` adds null)
            kinds = [schema["type"]] if isinstance(schema["type"], str) else list(schema["type"])
            if schema.get("nullable") is True:
                kinds.append("null")
            matched = next((kind for kind in kinds if _is_type(value, kind)), None)
            if matched is None:
                raise _ArgumentError(f"parameter {path!r} must be {' or '.join(kinds)}, got "
                                     f"{_shown(value)}")
            if matched == "integer" and type(value) is float:   # an integral float, as an int
                value = int(value)
        if "enum" in schema and _json_key(value) not in map(_json_key, schema["enum"]):
            raise _ArgumentError(f"parameter {path!r} must be one of "
                                 f"{json.dumps(schema['enum'])}, got {_shown(value)}")
        if "const" in schema and _json_key(value) != _json_key(schema["const"]):
            raise _ArgumentError(f"parameter {path!r} must be {json.dumps(schema['const'])}, got "
                                 f"{_shown(value)}")
        # 2. combinations: allOf, anyOf (the first branch that matches gives the value), oneOf,
        # not, if/then/else
        for option in schema.get("allOf", ()):
            value = check(value, option)
        if "anyOf" in schema:
            kinds = [o.get("type") if isinstance(o, dict) and not o.get("nullable") else None
                     for o in schema["anyOf"]]
            if all(isinstance(k, str) for k in kinds) and not any(_is_type(value, k)
                                                                  for k in kinds):
                raise _ArgumentError(f"parameter {path!r} must be {' or '.join(kinds)}, got "
                                     f"{_shown(value)}")
            errors = []
            for option in schema["anyOf"]:
                try:
                    value = check(value, option)
                    break
                except _ArgumentError as exc:
                    errors.append(str(exc))
            else:
                raise _ArgumentError(_cut("; or ".join(dict.fromkeys(errors)), 2000))
        if "oneOf" in schema:
            matches, errors = [], []
            for option in schema["oneOf"]:
                try:
                    matches.append(check(value, option))
                except _ArgumentError as exc:
                    errors.append(str(exc))
            if len(matches) > 1:
                raise _ArgumentError(f"{_parameter(path)} must match exactly one of the allowed "
                                     f"shapes, and matches {len(matches)}: got {_shown(value)}")
            if not matches:
                raise _ArgumentError(_cut("; or ".join(dict.fromkeys(errors)), 2000))
            value = matches[0]
        if "not" in schema and passes(value, schema["not"]):
            raise _ArgumentError(f"{_parameter(path)} must not match "
                                 f"{_cut(json.dumps(schema['not']), 80)}, got {_shown(value)}")
        if "if" in schema:
            value = check(value, schema.get("then" if passes(value, schema["if"]) else "else",
                                            True))
        # 3. bounds and patterns; then what objects and lists hold
        self._bounds(value, schema, path)
        if isinstance(value, dict):
            value = self._object(value, schema, path, check, passes)
            if "unevaluatedProperties" in schema:
                seen = self._evaluated(value, schema, path, memo, depth, passes, False)
                value = _rebuilt(value, {key: check(item, schema["unevaluatedProperties"],
                                                    f"{path}.{key}" if path else key)
                                         for key, item in value.items() if key not in seen})
        elif isinstance(value, list):
            value = self._array(value, schema, path, check, passes)
            if "unevaluatedItems" in schema:
                seen = self._evaluated(value, schema, path, memo, depth, passes, False)
                value = _rebuilt(value, {i: check(item, schema["unevaluatedItems"], f"{path}[{i}]")
                                         for i, item in enumerate(value) if i not in seen})
        return value

    def _object(self, value: dict, schema: dict, path: str, check: Callable,
                passes: Callable) -> dict:
        prefix = f"{path}." if path else ""
        for key in schema.get("required", ()):
            if key not in value:
                raise _ArgumentError(f"missing required parameter {prefix + key!r}")
        # dependencies: a list of names is dependentRequired, a schema dependentSchemas
        depends = [*schema.get("dependencies", {}).items(),
                   *schema.get("dependentRequired", {}).items(),
                   *schema.get("dependentSchemas", {}).items()] if (
            "dependencies" in schema or "dependentRequired" in schema
            or "dependentSchemas" in schema) else ()
        for key, needs in depends:
            missing = [name for name in needs if name not in value] if (
                key in value and isinstance(needs, list)) else []
            if missing:
                raise _ArgumentError(f"missing parameter {prefix + missing[0]!r}, required with "
                                     f"{prefix + key!r}")
        for key, sub in depends:
            if key in value and not isinstance(sub, list):
                value = check(value, sub)
        for key in value if "propertyNames" in schema else ():
            try:
                check(key, schema["propertyNames"], prefix + _text(key))
            except _ArgumentError as exc:
                raise _ArgumentError(f"the name of parameter {prefix + _text(key)!r} is not "
                                     f"allowed: {exc}") from None
        properties = schema.get("properties", {})
        patterns = schema.get("patternProperties", {})
        others = schema.get("additionalProperties", True)
        changed = {}
        for key, item in value.items():
            subs = [properties[key]] if key in properties else []
            subs += [sub for pattern, sub in patterns.items() if self.patterns[pattern](key)]
            if not subs and others is False:
                allowed = ", ".join(properties) or "none"
                raise _ArgumentError(f"unexpected parameter {prefix + key!r} (allowed: {allowed})")
            for sub in subs or [others]:
                changed[key] = check(changed.get(key, item), sub, prefix + _text(key))
        return _rebuilt(value, changed)

    def _array(self, value: list, schema: dict, path: str, check: Callable,
               passes: Callable) -> list:
        # draft 7's list of items is 2020-12's prefixItems, and its additionalItems the rest
        items = schema.get("items", True)
        first, rest = ((items, schema.get("additionalItems", True)) if isinstance(items, list)
                       else (schema.get("prefixItems", ()), items))
        changed = {i: check(item, first[i] if i < len(first) else rest, f"{path}[{i}]")
                   for i, item in enumerate(value)}
        if "contains" in schema:
            count = sum(passes(item, schema["contains"], f"{path}[{i}]")
                        for i, item in enumerate(value))
            least, most = schema.get("minContains", 1), schema.get("maxContains", math.inf)
            if not least <= count <= most:
                shown = _cut(json.dumps(schema["contains"]), 80)
                raise _ArgumentError(f"{_parameter(path)} must hold {least} to {most} items that "
                                     f"match {shown}, and holds {count}")
        return _rebuilt(value, changed)

    # the bounds of numbers, strings, lists and objects: (the values it applies to, what is
    # measured, the comparison, the rule); a bool is never a number here
    BOUNDS = {
        "minimum": ((int, float), None, operator.ge, "at least {}"),
        "maximum": ((int, float), None, operator.le, "at most {}"),
        "exclusiveMinimum": ((int, float), None, operator.gt, "more than {}"),
        "exclusiveMaximum": ((int, float), None, operator.lt, "less than {}"),
        "minLength": (str, len, operator.ge, "at least {} characters long"),
        "maxLength": (str, len, operator.le, "at most {} characters long"),
        "minItems": (list, len, operator.ge, "a list of at least {} items"),
        "maxItems": (list, len, operator.le, "a list of at most {} items"),
        "minProperties": (dict, len, operator.ge, "an object of at least {} keys"),
        "maxProperties": (dict, len, operator.le, "an object of at most {} keys"),
    }

    def _bounds(self, value: Any, schema: dict, path: str) -> None:
        """The bounds (BOUNDS), multipleOf, pattern and uniqueItems."""
        problem = None
        for keyword, (kinds, measure, passes, rule) in self.BOUNDS.items():
            if (keyword in schema and isinstance(value, kinds) and not isinstance(value, bool)
                    and not passes(measure(value) if measure else value, schema[keyword])):
                problem = f"be {rule.format(schema[keyword])}"
                break
        step = schema.get("multipleOf")
        if problem is None and step is not None and _is_number(value):
            # a whole multiple in decimal as JSON writes them (0.3 is 3 times 0.1)
            from fractions import Fraction   # deferred: only a schema with multipleOf needs it
            try:
                whole = (Fraction(repr(value)) / Fraction(repr(step))).denominator == 1
            except (ValueError, OverflowError, ZeroDivisionError):
                whole = False
            problem = None if whole else f"be a multiple of {step}"
        pattern = schema.get("pattern")
        if (problem is None and pattern is not None and isinstance(value, str)
                and not self.patterns[pattern](value)):
            problem = f"match the pattern {pattern!r}"
        if problem is None and schema.get("uniqueItems") is True and isinstance(value, list):
            keys = [_json_key(item) for item in value]
            problem = "hold no item twice" if len(set(keys)) < len(keys) else None
        if problem:
            raise _ArgumentError(f"{_parameter(path)} must {problem}, got {_shown(value)}")

    def _evaluated(self, value: Any, schema: Any, path: str, memo: dict, depth: int,
                   passes: Callable, whole: bool = True) -> set:
        """The keys (of an object) or places (of a list) that schema evaluates, for
        unevaluatedProperties and unevaluatedItems: those its keywords and its passing
        subschemas reach. ``whole``: its own unevaluated* count too."""
        if not isinstance(schema, dict):
            return set()
        key = ("evaluated", id(schema), id(value), path, whole)
        if key in memo:
            return memo[key][1] if memo[key][1] is not ... else set()
        memo[key] = (value, ...)
        everything = set(value) if isinstance(value, dict) else set(range(len(value)))
        if isinstance(value, dict):
            seen = {k for k in value if k in schema.get("properties", {})
                    or any(self.patterns[p](k) for p in schema.get("patternProperties", {}))}
            own = ("additionalProperties", "unevaluatedProperties" if whole else "")
        else:
            items = schema.get("items")
            first = items if isinstance(items, list) else schema.get("prefixItems", ())
            seen = set(range(min(len(first), len(value))))
            if "contains" in schema:
                seen |= {i for i, item in enumerate(value)
                         if passes(item, schema["contains"], f"{path}[{i}]")}
            own = ("additionalItems" if isinstance(items, list) else "items",
                   "unevaluatedItems" if whole else "")
        if any(word in schema for word in own if word):
            seen = everything
        parts = [self.targets.get(id(schema)), *schema.get("allOf", ()),
                 *(o for o in [*schema.get("anyOf", ()), *schema.get("oneOf", ())]
                   if passes(value, o))]
        if "if" in schema:
            parts += ([schema["if"], schema.get("then")] if passes(value, schema["if"])
                      else [schema.get("else")])
        if isinstance(value, dict):
            parts += [sub for name, sub in schema.get("dependentSchemas", {}).items()
                      if name in value]
        for part in parts:
            if seen != everything:
                seen = seen | self._evaluated(value, part, path, memo, depth, passes)
        memo[key] = (value, seen)
        return seen

    # Copying the schema into the schema of a whole reply (ToolRegistry.action_schema)

    def rewritten(self, node: Any, defs: dict, names: dict) -> Any:
        """node, of this schema, as a copy whose references point into defs: what a reference
        points to is copied there once, named in ``names`` (id -> name). The name ends in a number,
        unique even as llama.cpp's grammar converter spells it: it names a rule by the last part of
        a reference, [^A-Za-z0-9-] as -."""
        if not isinstance(node, dict):
            return node
        copy = {}
        for keyword, value in node.items():
            if keyword in ("$defs", "definitions", "discriminator", "$id", "$anchor"):
                # what is referred to moves to defs, and every reference is to it from the root; a
                # discriminator's mapping would point nowhere
                continue
            kind = _SCHEMA_KEYWORDS.get(keyword)
            if keyword == "$ref":
                target = self.targets[id(node)]
                if id(target) not in names:
                    last = re.sub(r"[^A-Za-z0-9-]+", "-",
                                  node["$ref"].rsplit("/", 1)[-1]).strip("-") or "root"
                    names[id(target)] = name = f"{last}-{len(defs)}"
                    # taken before the copy: a schema that refers to itself finds its name
                    defs[name] = {}
                    defs[name] = self.rewritten(target, defs, names)
                value = "#/$defs/" + names[id(target)]
            elif kind == "schema" or (kind == "items" and not isinstance(value, list)):
                value = self.rewritten(value, defs, names)
            elif kind in ("schemas", "patterns", "dependencies"):
                value = {name: self.rewritten(sub, defs, names) for name, sub in value.items()}
            elif kind in ("schema_list", "items"):
                value = [self.rewritten(sub, defs, names) for sub in value]
            copy[keyword] = value
        return copy


def _rebuilt(value: Any, changed: dict) -> Any:
    """value with the items changed (by key or place) that differ; value itself when none does,
    so that a value checked again is the same object, and found in the memo."""
    if all(value[key] is item for key, item in changed.items()):
        return value
    copy = dict(value) if isinstance(value, dict) else list(value)
    for key, item in changed.items():
        copy[key] = item
    return copy


@functools.lru_cache(maxsize=64)
def _regex(pattern: str) -> tuple[Callable[[str], bool], int]:
    r"""A JSON Schema pattern as a search that means what ECMA-262 (with its u flag) means, and
    that runs in time linear in the text, with the number of its automaton's states; ValueError
    for what cannot be read so.

    Python's ``re`` parses the pattern, and its tree runs here as an automaton, never by ``re``,
    whose backtracking can take exponential time (``^(\w+\s?)*$`` on 42 characters) and holds the
    interpreter lock while it does. The automaton's states are built as they are met and kept, so
    a pattern checked again costs a dictionary lookup per character; a search that meets over a
    million new states raises ValueError: not _ArgumentError, so that no branch (``not``,
    ``anyOf``) takes the text for one that does not match, and the whole call is refused. Refused:
    what the automaton cannot hold (back-references, lookarounds, inline flags, Python's own
    ``\A`` and ``\Z``), what Python's parser refuses (``\p{..}``, ``\u{..}``, ECMA's named
    groups) or reads otherwise (``[]``, ``[^]``), and Python's own syntax (``\N{..}``, ``(?#..)``,
    ``(?P..)``, ``{,n}``). ECMA's meanings:
    ``.`` is anything but a line terminator; ``\d``, ``\w`` and ``\b`` are ASCII; ``\s`` is
    ECMA's white space; ``$`` is the very end; ``\cX`` is a control character.
    """
    parser = getattr(re, "_parser", None) or importlib.import_module("sre_parse")
    text, i, in_class = [], 0, False
    while i < len(pattern):   # what Python reads otherwise: [] and [^], and \cX
        char = pattern[i]
        if char == "\\" and pattern[i + 1:i + 2] == "c" and pattern[i + 2:i + 3].isascii() \
                and pattern[i + 2:i + 3].isalpha():
            text.append(f"\\x{ord(pattern[i + 2]) % 32:02x}")
            i += 3
            continue
        # Python's own syntax, an error in ECMA-262 with its u flag: \N{name}, (?#...), (?P..),
        # and {,n}
        python_only = ("\\N",) if in_class else ("\\N", "(?#", "(?P", "{,")
        if pattern.startswith(python_only, i):
            raise ValueError(f"{pattern[i:i + 3]!r} is Python's own syntax, not ECMA-262's")
        if char == "\\":
            text.append(pattern[i:i + 2])
            i += 2
            continue
        if char == "[" and not in_class and (pattern[i + 1:i + 2] == "]"
                                             or pattern[i + 1:i + 3] == "^]"):
            raise ValueError("an empty class ([] or [^]) reads otherwise in Python")
        in_class = (char == "[") or (in_class and char != "]")
        text.append(char)
        i += 1
    try:
        tree = parser.parse("".join(text), 0)
    except (re.error, RecursionError, OverflowError) as exc:
        raise ValueError(str(exc)) from None
    if tree.state.flags & ~re.UNICODE:
        raise ValueError("inline flags have no equal in JSON Schema")
    word = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
    space = frozenset("\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007"
                      "\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff")
    categories = {"CATEGORY_DIGIT": lambda c: "0" <= c <= "9", "CATEGORY_WORD": word.__contains__,
                  "CATEGORY_SPACE": space.__contains__}
    categories.update({name.replace("_", "_NOT_", 1): (lambda c, test=test: not test(c))
                       for name, test in list(categories.items())})
    # where the search stands: (at the start, at the end, after a word character, before one)
    anchors = {"AT_BEGINNING": lambda at: at[0], "AT_END": lambda at: at[1],
               "AT_BOUNDARY": lambda at: at[2] != at[3],
               "AT_NON_BOUNDARY": lambda at: at[2] == at[3]}
    states: list = []   # [kind, test, next, other next]: "char", "split", "at", "match"

    def add(kind: str, test: Any = None, then: Any = None, other: Any = None) -> int:
        if len(states) >= 10_000:
            raise ValueError("it repeats too much (over 10000 states)")
        states.append([kind, test, then, other])
        return len(states) - 1

    def char_test(name: str, arg: Any) -> Callable[[str], bool]:
        if name in ("LITERAL", "NOT_LITERAL"):
            return (chr(arg).__eq__ if name == "LITERAL" else chr(arg).__ne__)
        if name == "ANY":
            return lambda c: c not in "\n\r\u2028\u2029"
        negate, chars, tests = False, set(), []
        for op, value in arg:
            if op.name == "NEGATE":
                negate = True
            elif op.name == "LITERAL":
                chars.add(chr(value))
            elif op.name == "RANGE":
                tests.append(lambda c, low=value[0], high=value[1]: low <= ord(c) <= high)
            elif op.name == "CATEGORY" and value.name in categories:
                tests.append(categories[value.name])
            else:
                raise ValueError(f"{op.name} in a class has no equal in JSON Schema")
        return lambda c: (c in chars or any(test(c) for test in tests)) != negate

    def build(items: Any, then: int) -> int:   # backwards, so every state knows what follows
        for op, arg in reversed(list(items)):
            name = op.name
            if name in ("LITERAL", "NOT_LITERAL", "ANY", "IN"):
                then = add("char", char_test(name, arg), then)
            elif name == "SUBPATTERN" and not arg[1] and not arg[2]:
                then = build(arg[3], then)
            elif name == "BRANCH":
                starts = [build(branch, then) for branch in arg[1]]
                then = functools.reduce(lambda rest, start: add("split", None, start, rest),
                                        reversed(starts[:-1]), starts[-1])
            elif name in ("MAX_REPEAT", "MIN_REPEAT"):
                low, high, body = arg
                end = then
                if high == parser.MAXREPEAT:
                    loop = add("split")
                    states[loop][2:] = [build(body, loop), end]
                    then = loop
                else:
                    for _ in range(high - low):
                        then = add("split", None, build(body, then), end)
                for _ in range(low):
                    then = build(body, then)
            elif name == "AT" and arg.name in anchors:
                then = add("at", anchors[arg.name], then)
            else:
                raise ValueError(f"{name} ({_cut(pattern, 40)}) has no equal in JSON Schema")
        return then

    start = build(tree, add("match"))
    closures: dict = {}    # (states before, where) -> (states that read a character, matched)
    steps: dict = {}       # (states that read, character) -> states after

    def search(text: str) -> bool:
        current, n, work = frozenset(), len(text), 0
        for i in range(n + 1):
            at = (i == 0, i == n, i > 0 and text[i - 1] in word, i < n and text[i] in word)
            found = closures.get((current, at))
            if found is None:
                todo, seen, reading, matched = [start, *current], set(), [], False
                while todo:
                    state = todo.pop()
                    if state in seen:
                        continue
                    seen.add(state)
                    kind, test, then, other = states[state]
                    if kind == "char":
                        reading.append(state)
                    elif kind == "split":
                        todo += (then, other)
                    elif kind == "at":
                        todo += [then] if test(at) else []
                    else:
                        matched = True
                work += len(seen)
                if len(closures) > 5_000:   # the memory a pattern keeps stays small
                    closures.clear()
                found = closures[(current, at)] = (frozenset(reading), matched)
            if found[1]:
                return True
            if i == n:
                return False
            after = steps.get((found[0], text[i]))
            if after is None:
                work += len(found[0])
                if work > 1_000_000:   # states met: bounded, whatever the pattern and the text
                    raise ValueError(f"a value of {n} characters is too long to check against the "
                                     f"pattern {_cut(pattern, 80)!r}: send a shorter one")
                if len(steps) > 5_000:
                    steps.clear()
                after = steps[(found[0], text[i])] = frozenset(
                    states[s][2] for s in found[0] if states[s][1](text[i]))
            current = after
        return False

    return search, len(states)


class _ArgumentError(Exception):
    """Arguments do not match a tool's schema (internal; becomes an ERROR observation)."""


def _json_type(value: Any) -> str:
    return _JSON_TYPES.get(type(value), type(value).__name__)


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return f"{_json_type(value)} {_cut(text, 60)}"


def _is_type(value: Any, kind: str) -> bool:
    if kind == "integer":
        return (type(value) is int) or (type(value) is float and value.is_integer())
    if kind == "number":
        return type(value) in (int, float)
    return _JSON_TYPES.get(type(value)) == kind or kind not in _JSON_TYPES.values()


def _parameter(path: str) -> str:
    return f"parameter {path!r}" if path else "the arguments"


def _json_key(value: Any) -> str:
    """value as text that is equal for values JSON Schema calls equal (enum, const, uniqueItems):
    numbers by value (1 and 1.0 are), a boolean never a number (true and 1 are not), arrays and
    objects item by item."""
    def plain(item: Any) -> Any:
        if type(item) is float and item.is_integer():
            return int(item)
        if isinstance(item, list):
            return [plain(inner) for inner in item]
        return {key: plain(inner) for key,
                inner in item.items()} if isinstance(item, dict) else item
    try:
        return json.dumps(plain(value), sort_keys=True, default=repr)
    # keys that do not sort: one Python caller's value, not a model's
    except (TypeError, ValueError):
        return repr(value)


# -- Tools, the worker pool (skip on first read) ---------------------------------------
# ToolRegistry.call runs each tool on a shared daemon thread under its time limit (_POOL.run)

_MIN_START_SECONDS = 0.05   # a tool is never started with less of the caller's time budget left


def _invoke(func: Callable, kwargs: dict) -> Any:
    """Call a tool; an ``async def`` tool is run to the end on an event loop of this thread."""
    result = func(**kwargs)
    if hasattr(type(result), "__await__"):
        import asyncio  # only async tools pay for the import

        async def awaited() -> Any:   # asyncio.run takes a coroutine, not any awaitable
            return await result

        result = asyncio.run(awaited())
    return result


class _Job:
    """One tool call handed to a worker, and its outcome (internal).

    ``state`` (guarded by the pool's lock) goes waiting -> running -> done; the
    caller that gives up turns waiting into cancelled (the tool never runs) and
    running into abandoned (the worker ends when the tool returns).
    """

    __slots__ = ("func", "kwargs", "state", "outcome")

    def __init__(self, func: Callable, kwargs: dict) -> None:
        self.func, self.kwargs, self.state = func, kwargs, "waiting"
        self.outcome: queue.SimpleQueue = queue.SimpleQueue()


class _Pool:
    """The process-wide daemon threads that run tools with a time limit (internal).

    Python cannot kill a thread, so what can be bounded is: one pool for every
    registry; idle workers exit after ``IDLE_SECONDS``; a worker whose caller gave
    up (its limit, or Ctrl-C) ends when its tool returns; and while
    ``MAX_ABANDONED`` such workers are still running, no new call is started.
    Live threads are then at most busy + idle + abandoned.
    """

    IDLE_SECONDS = 5.0    # an idle worker thread exits after this long
    MAX_ABANDONED = 16    # calls still running past their limit; beyond this no call is started

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.idle: list = []     # the inboxes of workers waiting for a job
        self.abandoned = 0       # workers still inside a tool nobody waits for

    def run(self, name: str, func: Callable, kwargs: dict, limit: Optional[float]) -> Any:
        """Run tool ``name``'s func on a worker and return its value; _ToolFailed when it is not
        started (over the cap, or no worker within limit), runs past limit, or raises."""
        job, outcome = _Job(func, kwargs), None
        try:
            self._hand_over(job, name)
            outcome = self._wait(job, limit)
        finally:
            if outcome is None:  # the limit passed, or Ctrl-C (even while handing over)
                with self.lock:  # no call before the state changes: CPython checks signals at calls
                    if job.state == "running":
                        job.state = "abandoned"
                        self.abandoned += 1
                    elif job.state == "waiting":
                        job.state = "cancelled"
        if outcome is None:
            why = _NO_WORKER.format(limit=limit)
            raise _ToolFailed(_NOT_STARTED.format(name=name, why=why) if job.state == "cancelled"
                              else _TIMED_OUT.format(name=name, seconds=round(limit, 2)))
        ok, value = outcome
        if ok:
            return value
        # the tool's own exception, even a KeyboardInterrupt: a real Ctrl-C arrives in the
        # caller's thread, never on a worker
        raise _ToolFailed.raised(name, value)

    def _wait(self, job: _Job, limit: Optional[float]) -> Optional[tuple]:
        """The job's outcome, (ok, value); None when the limit passes first."""
        # A signal can end SimpleQueue.get early with Empty: only the clock says the limit passed.
        # Waits longer than TIMEOUT_MAX (a huge finite limit) overflow, so such a wait is taken in
        # parts.
        deadline = None if limit is None else time.monotonic() + limit
        while True:
            wait = None if deadline is None else min(max(0.0, deadline - time.monotonic()),
                                                     threading.TIMEOUT_MAX)
            try:
                return job.outcome.get(timeout=wait)
            except queue.Empty:
                if time.monotonic() < deadline:
                    continue
            with self.lock:
                if job.state != "done":
                    return None
            return job.outcome.get_nowait()  # it finished just as the limit passed

    def _hand_over(self, job: _Job, name: str) -> None:
        with self.lock:
            if self.abandoned >= self.MAX_ABANDONED:
                why = _TOO_MANY_ABANDONED.format(n=self.abandoned, most=self.MAX_ABANDONED)
                raise _ToolFailed(_NOT_STARTED.format(name=name, why=why))
            inbox = self.idle.pop() if self.idle else None
            if inbox is not None:
                inbox.put(job)  # under the lock, so a worker never retires with a job on its way
                return
        inbox = queue.SimpleQueue()
        inbox.put(job)
        threading.Thread(target=self._serve, args=(inbox,), name="agent-tool", daemon=True).start()

    def _serve(self, inbox: queue.SimpleQueue) -> None:
        while True:
            job = self._next_job(inbox)
            if job is None:
                return
            outcome = None
            if job.state == "running":
                try:
                    outcome = (True, _invoke(job.func, job.kwargs))
                except BaseException as exc:  # handed to the caller, which reports it
                    outcome = (False, exc)
            with self.lock:
                if job.state == "abandoned":
                    self.abandoned -= 1
                    return  # nobody waits for this result
                if job.state == "running":
                    job.state = "done"
                    job.outcome.put(outcome)
                self.idle.append(inbox)

    def _next_job(self, inbox: queue.SimpleQueue) -> Optional[_Job]:
        """The next job, marked running unless its caller already gave up; None: exit (idle too
        long)."""
        while True:
            try:
                job = inbox.get(timeout=self.IDLE_SECONDS)
            except queue.Empty:
                job = None
            with self.lock:
                if job is not None:
                    job.state = "running" if job.state == "waiting" else job.state
                    return job
                if inbox in self.idle:
                    self.idle.remove(inbox)
                    return None
                if inbox.empty():
                    # a caller took this worker, then was interrupted before handing over
                    return None


_POOL = _Pool()


# -- Protocol --------------------------------------------------------------------------
# what the model is told (SYSTEM_PROMPT), what it sends (Action, parse_action),
# what comes back (_observation, _refuse)

# The placeholders of the shapes the model is shown (in the table of Errors and settings); a reply
# that sends one back as a value copied the prompt.
_PLACEHOLDERS = frozenset({_WHY, _THE_ANSWER, _SOME_TOOL, "...", "\u2026", "<arguments>"})

SYSTEM_PROMPT = """\
You solve the user's task with the tools below. Call a tool whenever it can find or \
check the answer, then answer from its result.

Reply with exactly one JSON object and nothing else: no Markdown, no text around it.
To call a tool: {call_shape}
To give the final answer: {final_shape}
Each tool result comes back in a user message that starts with {observation}. Never \
write {observation} yourself; send one action and wait for it.

Example (another task, with a tool you may not have):
{example}

Tools (name: description; arguments as JSON Schema):
{tools}"""


class _Example(typing.NamedTuple):
    """The worked example of the prompt: a task, its calls with the tool's results, and the final
    answer built from them."""

    task: str
    calls: tuple[tuple[dict, str], ...]   # (the call, its result), in order
    final: dict
    subjects: tuple[str, ...]   # its arguments are copies where no user message names these

    def lines(self) -> str:
        """The example as the prompt shows it: the task, each call and its observation, the
        answer."""
        shown = [f"user: {self.task}"]
        for call, result in self.calls:
            shown += [f"you: {json.dumps(call, ensure_ascii=False)}",
                      f"user: {_OBSERVATION} {result}"]
        return "\n".join(shown + [f"you: {json.dumps(self.final, ensure_ascii=False)}"])


def _example(registry: ToolRegistry) -> _Example:
    """The prompt's worked example, with a made-up tool that the registry does not have.

    Two calls, then an answer from both results and the task's counts: with one call, a small
    model answers a task that needs two lookups after its first call; with a difference of two
    heights in place of prices and counts, it walks a tool's list of cities on a task that needs
    no tool (docs/NOTES.md, "The prompt"). A model that copies a call calls a tool that
    does not exist, which runs nothing and is answered with the real names (and the action
    schema, in the loop), so a copy never runs a wrong call unnoticed; a copied call or answer
    is refused as a copy.
    """
    names = itertools.chain(("lookup", "look_up", "search_facts", "find_fact"),
                            (f"lookup_{n}" for n in itertools.count(2)))
    name = next(n for n in names if n not in registry)

    def call(thought: str, query: str) -> dict:
        return {"type": "tool_call", "thought": thought, "name": name,
                "arguments": {"query": query}}

    return _Example(
        task="What do 2 Eiffel Tower tickets and 1 Louvre ticket cost?",
        calls=((call("I need two prices: the tower's ticket and the Louvre's. First the tower's.",
                     "Eiffel Tower ticket price"), "29 EUR"),
               (call("Now the Louvre's price.", "Louvre ticket price"), "22 EUR")),
        final={"type": "final", "thought": "2 * 29 EUR + 22 EUR = 80 EUR.",
               "answer": "The tickets cost 80 EUR."},
        subjects=("Eiffel", "Louvre"))   # one word each: "la tour Eiffel" names it too


def _render_prompt(template: Optional[str], registry: ToolRegistry) -> str:
    """The system prompt: SYSTEM_PROMPT filled in, or a custom one with ``{tools}`` replaced."""
    lines = []
    for t in registry:
        try:
            listed = _listed(t.parameters)
        except ToolError:   # an extension keyword's value nested too deep to trim: as it is
            listed = t.parameters
        lines.append(f"- {t.name}: {t.description} {_compact(listed)}")
    listing = "\n".join(lines) or "(none: answer directly with the final shape)"
    if template is not None:
        return template.replace("{tools}", listing)
    return SYSTEM_PROMPT.format(tools=listing, call_shape=_CALL_SHAPE, final_shape=_FINAL_SHAPE,
                                observation=_OBSERVATION, example=_example(registry).lines())


@dataclass(frozen=True)
class Action:
    """One parsed model turn: a tool call or a final answer, with the repairs applied to read it."""

    kind: str                              # "tool_call" or "final"
    name: Optional[str] = None             # tool name (tool_call; a final as a call: "final")
    arguments: dict = field(default_factory=dict)
    answer: Optional[str] = None           # final answer text (final)
    thought: Optional[str] = None
    repairs: tuple[str, ...] = ()          # short tags of local repairs; () when the text was clean


# -- Protocol, reading a reply: parse_action -------------------------------------------
# find the action in a reply, read it, and refuse anything whose meaning is unsure

_ACTION_START = re.compile(r"\{|\[\s{0,64}\{")   # an object, or an array whose first element is one
_ESCAPED_QUOTE_START = re.compile(r'[\[{](?:\s|\\[nrt])*\\"')   # every quote escaped once too often
# What ends a reply that made up its own observation: the marker, or a line that starts as one.
_OBSERVATION_TAIL = re.compile(rf"{re.escape(_OBSERVATION)}|\bObservation\s*:|^[ "
                               r"\t>*#]*(?i:observation)\s*:", re.M)


def parse_action(text: str) -> Action:
    """Read one action from a model reply: strict about meaning, tolerant about packaging.

    Unambiguous packaging is repaired locally and named in ``Action.repairs``:
    BOM and whitespace, closed ``<think>`` blocks, code fences, prose, special tokens
    and stray quotes around the object, an invented observation after it, raw
    newlines, ``\\_`` and ``\\'`` in strings, trailing commas, Python literals, an
    escaped-twice reply, an array of actions, ``arguments`` as a JSON string, a
    missing ``type`` or ``arguments`` when nothing else is meant, the action's own
    ``thought`` written twice (joined), an answer beside ``"name": "final"`` and no
    arguments (the final answer, ``final_as_call``). The action is the
    object starting at the first ``{`` (or ``[{``); a broken one is never skipped for
    a later one. A reply that opens with its action ends where the action ends (a
    different one after it is not run: ``extra_actions``); after prose, several
    different actions are refused. Anything else -- duplicate keys with different
    values, non-finite numbers, unclear backslashes, look-alike keys, an unclosed
    think block -- raises ``ActionFormatError`` with a message written for the model.

    >>> parse_action('{"type": "final", "answer": "42"}').answer
    '42'
    >>> reply = '```json\\n{"name": "calculator", "arguments": {"expression": "6*7"},}\\n```'
    >>> parse_action(reply).repairs
    ('code_fence', 'trailing_comma', 'missing_type')
    """
    if not isinstance(text, str):
        raise ActionFormatError(f"expected the reply as text, got {type(text).__name__}", "")
    try:
        repairs: list = []
        # 1. Unwrap: refuse a reply too long to scan; strip BOM and whitespace; decode a reply
        # whose every quote was escaped once too often.
        if len(text) > 200_000:
            raise _refuse(f"the reply is {len(text):,} characters long (limit {200_000:,}); "
                          "send a short one")
        body = text
        if body.lstrip().startswith("\ufeff"):
            body = body.lstrip().lstrip("\ufeff")
            _note(repairs, "bom")
        if body != body.strip():
            body = body.strip()
            _note(repairs, "whitespace")
        if not body:
            raise _refuse("the reply was empty")
        if _ESCAPED_QUOTE_START.match(body):
            try:
                body = json.loads(f'"{body}"', strict=False).strip()
                _note(repairs, "escaped_twice")
            except ValueError:
                pass
        # 2. The action of a reply that opens with it, also after think blocks: read up to where
        # it ends.
        found = _opening_action(body, repairs)
        if found is None:
            thought_out = _drop_think(body, repairs)
            found = _opening_action(thought_out, repairs) if thought_out != body else None
            body = thought_out
        opened = found is not None
        if not opened:
            # 3. After prose, locate the action: the first object, in the first code fence if one
            # opens before it; read it, and the text after it.
            first = _ACTION_START.search(body)
            fence = body.find("```")
            if fence != -1 and (first is None or fence < first.start()):
                if body[:fence].strip():
                    _note(repairs, "prose")
                body = body[fence:]
                body = body[re.match(r"```[\w+.-]*[ \t]*\n?", body).end():]
                _note(repairs, "code_fence")
                first = _ACTION_START.search(body)
            if first is not None and body[first.start() - 1:first.start()] == '"':
                body, first = _unquote_action(body, first, repairs)
            if first is None:
                raise _refuse("your reply contains no JSON object")
            if body[:first.start()].strip():
                _note(repairs, "prose")
            value, end = _read_value(body, first.start(), repairs)
            found = value, body[end:]
        value, rest = found
        # 4. Check the rest: prose and an invented observation are ignored; other objects are
        # judged by _check_others. After prose, an observation ends the reply but hides no object
        # from that judgement: a mention of the marker between an example call and the real action
        # never makes the example run.
        tail = _OBSERVATION_TAIL.search(rest)
        before = rest[:tail.start()] if tail else rest
        if tail:
            _note(repairs, "observation_tail")
        _check_others(value, _objects(before if opened else rest), opened, repairs)
        if before.strip().strip("`").strip():
            _note(repairs, "trailing_prose")
        # 5. An array: its first object is the action, and the others are judged as the objects
        # after it are (a string in it is read as text after the action is: for the objects in it).
        if isinstance(value, list):
            if not value or not isinstance(value[0], dict):
                raise _refuse("expected one JSON object, found an array")
            _note(repairs, "array")
            others = itertools.chain.from_iterable(
                _objects(item) if isinstance(item, str) else [("", item)] for item in value[1:])
            _check_others(value[0], others, opened, repairs)
            value = value[0]
        # 6. Interpret: what the object's keys mean, refused where that is unsure.
        return _interpret(value, repairs)
    except ActionFormatError as exc:
        exc.text = text
        raise


def _opening_action(body: str, repairs: list) -> Optional[tuple]:
    """The action of a reply that opens with it, read up to where it ends: (value, the text after
    it).

    None when prose comes first, or the action does not close (then the caller reads on and says
    why).
    """
    scanner = _ActionScanner()
    end = scanner.feed(body)
    # the quote may open one JSON string that holds the action
    if "stray_quote" in scanner.packaging:
        decoded = _unquote_action(body, _ACTION_START.match(body, scanner.start), repairs)[0]
        if decoded != body:
            return _opening_action(decoded, repairs)
    if end is None:
        return None
    for tag in scanner.packaging:
        _note(repairs, tag)
    return _decode(body[scanner.start:end], repairs), body[end:]


def _check_others(action: Any, others: Iterable, opened: bool, repairs: list) -> None:
    """Judge the objects beside the action, each (its text, its value or None): one that is not an
    action is ignored, a copy of the action is dropped, and a different action is refused after
    prose; when the reply opened with its action, that one runs and the rest are not
    (``extra_actions``)."""
    first = None
    for chunk, value in others:
        if not _Keys.is_action(chunk, value):
            continue  # braces in prose, or data beside the action: not an action
        first = first or _canonical(action)
        if value is not None and _canonical(value) == first:
            _note(repairs, "duplicate_action")
        elif opened:
            _note(repairs, "extra_actions")
        elif value is None:
            raise _refuse("your reply holds more than one action (the second one is incomplete, "
                          "broken or escaped); send one action per reply")
        else:
            raise _refuse("your reply holds two different actions; send one action per reply and "
                          f"wait for its {_OBSERVATION}")


_CALL_IN_NAME = re.compile(r"[()\[\]{}\"'=\n\r]")   # a call written into a tool's name


def _interpret(obj: dict, repairs: list) -> Action:
    """Turn the action object into an Action, refusing anything whose meaning is not certain.

    A key is missing when it is absent or null, or holds nothing ("", {}, []) while another key
    stands for it. When a call's arguments are missing or empty, a look-alike of "arguments", or
    any key other than the action's own or OpenAI's call metadata holding a value, is an argument
    in the wrong place: dropping it would run the tool on its defaults, so it is refused, naming
    "arguments".
    """
    keys = _Keys.read(obj, repairs)
    thought = obj.get("thought")
    if thought is not None and not isinstance(thought, str):
        thought = json.dumps(thought, ensure_ascii=False)
    # 1. a final answer: its text
    if keys.kind == "final":
        answer = obj.get("answer")
        # missing: absent or null, or nothing ("", {}, []) while another key stands for it
        if answer is None or ("answer" in keys.stand_ins and answer in _Keys.EMPTY):
            raise _refuse(keys.missing("answer"), _FINAL_SHAPE)
        if not isinstance(answer, str):
            _note(repairs, "answer_not_text")
            answer = json.dumps(answer, ensure_ascii=False)
        named = obj["name"].strip() if "final_as_call" in repairs else None   # the loop checks it
        return Action("final", name=named, answer=answer, thought=thought, repairs=tuple(repairs))
    # 2. a call: the tool's name, alone
    name = obj.get("name")
    if name is None or ("name" in keys.stand_ins and name in _Keys.EMPTY):
        if (not {"name", "arguments"} & set(keys.stand_ins)
                and obj.get("answer") not in _Keys.EMPTY and obj.get("arguments") in _Keys.EMPTY):
            raise _refuse('the reply holds an "answer" and no tool to call, but its "type" is '
                          '"tool_call"; to give the final answer, use "type": "final"',
                          _FINAL_SHAPE)
        raise _refuse(f"{keys.missing('name')} for the tool to call", _CALL_SHAPE)
    if not isinstance(name, str) or not name.strip():
        raise _refuse(f'"name" must be the tool name as text, got {_shown(name)}', _CALL_SHAPE)
    if _CALL_IN_NAME.search(name.strip()):
        raise _refuse(f'"name" must be only the tool name, got {name[:60]!r}; put the arguments in '
                      '"arguments"',
                      _CALL_SHAPE)
    if name != name.strip():
        _note(repairs, "name_whitespace")
    # 3. its arguments: an object, or the JSON text of one
    arguments = obj.get("arguments")
    if isinstance(arguments, str):
        _note(repairs, "arguments_string")
        text = arguments.strip()
        if text and text[0] != "{":
            raise _refuse(f'"arguments" must be a JSON object, got the string {text[:40]!r}',
                          _CALL_SHAPE)
        arguments, end = _read_value(text, 0, repairs, action=False) if text else ({}, 0)
        if text[end:].strip():
            raise _refuse('"arguments" holds text after its JSON object', _CALL_SHAPE)
    if arguments is None or arguments == {}:
        # 4. none: then no other key may hold any
        stray = (keys.stand_ins.get("arguments") or keys.strays or [None])[0]
        if stray is not None:
            shown = _cut(json.dumps(stray, ensure_ascii=False), 60)
            if stray in keys.stand_ins.get("arguments", ()) or isinstance(obj[stray], dict):
                raise _refuse(f'use "arguments" instead of {shown}', _CALL_SHAPE)
            raise _refuse(f'the tool call has no "arguments" but has {shown} beside them; put the '
                          f'tool\'s arguments inside "arguments", as in "arguments": {{{shown}: '
                          '...}', _CALL_SHAPE)
        if arguments is None:
            _note(repairs, "missing_arguments")
        arguments = {}
    elif not isinstance(arguments, dict):
        raise _refuse(f'"arguments" must be a JSON object, got {_shown(arguments)}', _CALL_SHAPE)
    return Action("tool_call", name=name.strip(), arguments=arguments, thought=thought,
                  repairs=tuple(repairs))


class _Keys(typing.NamedTuple):
    """What one action object's keys mean, as ``_Keys.read`` reads them by the one table of an
    action's keys (``_Keys.TABLE``)."""

    kind: str          # "tool_call" or "final"
    stand_ins: dict    # action key -> the other keys that stand for it and hold a value, in order
    strays: list       # keys holding a value that spell no action key and are no call metadata

    # The one table of an action's keys: each spelling a model writes for one (compared as
    # spelling() makes it) and the key it means. A spelling of the key itself ("Name", "arguments ")
    # must agree with the key; another word ("tool", "args", "final_answer") is a look-alike.
    # Neither is read as the key: where the key holds nothing, either is refused, naming the key.
    # OpenAI's call metadata stands for no key, and is no argument in the wrong place: ignored.
    OWN = ("type", "name", "arguments", "answer", "thought")
    CALL_METADATA = ("id", "index", "call_id")
    TABLE = {
        **{key: key for key in OWN},
        **dict.fromkeys(("action", "tool", "tool_name", "function"), "name"),
        **dict.fromkeys(("args", "argument", "kwargs", "parameters", "params", "input", "inputs",
                         "action_input", "tool_input", "tool_args"), "arguments"),
        **dict.fromkeys(("final_answer", "response", "output"), "answer"),
        **dict.fromkeys(CALL_METADATA, None),
    }
    EMPTY = (None, "", {}, [])    # a key holding one of these holds no value
    FINAL_NAMES = ("final", "final_answer")   # a "tool" of these names is the final answer
    # An action's key written in an object that cannot be read, also quoted as \" or \\\" (an
    # action written as a JSON string, or escaped once too often) or after a literal \n. The key is
    # found first and its quoting checked after it (bounded), so the search stays linear on long
    # runs of quotes.
    KEY_TEXT = re.compile(r"(?:(?<![\w-])|(?<=\\[nrt]))(?:" + "|".join(sorted(
        (word for word, key in TABLE.items() if key not in (None, "thought")), key=len,
        reverse=True)) + r""")(?:[\\"']|\s){0,64}:""", re.I)

    @staticmethod
    def spelling(word: Any) -> Optional[str]:
        """A key or a "type" as the parser compares it: lower-cased, stripped, inner spaces and
        hyphens as underscores (``"Name "`` is ``name``, ``"Final Answer"`` is ``final_answer``,
        ``"tool-call"`` is ``tool_call``)."""
        return (word.strip().lower().replace(" ", "_").replace("-", "_") if isinstance(word, str)
                else None)

    @classmethod
    def meant(cls, key: Any) -> Optional[str]:
        """The action key that key stands for: the key itself, another spelling of it (case,
        spaces), or a look-alike's."""
        return cls.TABLE.get(cls.spelling(key))

    @classmethod
    def is_action(cls, chunk: str, value: Any) -> bool:
        """Whether an object found beside the action is another action: it has an action's keys or
        look-alikes, whatever key it opens with. One that cannot be read (value None) is judged by
        the keys written in its text, chunk."""
        if isinstance(value, list):
            return any(cls.is_action("", item) for item in value)
        if isinstance(value, dict):
            return any(cls.meant(key) not in (None, "thought") for key in value)
        return bool(cls.KEY_TEXT.search(chunk))

    @classmethod
    def read(cls, obj: dict, repairs: list) -> _Keys:
        """The one reading of an action's keys: what each stands for, and the kind.

        An action key under two spellings (``name`` and ``Name``), both holding a value, must hold
        the same value (one would silently win): refused, naming the key; the same value twice is
        read once. A call (a name or arguments, under any spelling of the key) beside an answer
        (under any spelling, or a look-alike such as "final_answer" or "output"), each holding a
        value, is refused whatever "type" says, but for the final answer written as a call: an
        answer beside ``"name": "final"`` (or "final_answer") and no other key that could be an
        argument is a final answer, ``final_as_call``, whatever "type" names. A look-alike of a
        call's key beside an answer ("input" echoing the question) runs nothing, so it is left to
        the answer. The kind comes from "type", else from the keys a call or an answer has.
        """
        # 1. what each key stands for
        held = set()           # the action keys that hold a value, under any spelling of the key
        stand_ins: dict = {}
        strays = []
        for key, value in obj.items():
            if value in cls.EMPTY:
                continue
            if key in cls.OWN:
                held.add(key)
                continue
            spelling = cls.spelling(key)
            meant = cls.TABLE.get(spelling)
            if meant is not None:
                stand_ins.setdefault(meant, []).append(key)
            if meant is not None and meant == spelling:
                held.add(meant)
            elif spelling not in cls.CALL_METADATA or isinstance(value, (dict, list)):
                strays.append(key)   # OpenAI's metadata is text or a number, never an object
        # 2. one key spelled two ways, both holding a value: one value, or refused
        if held.intersection(stand_ins):
            spelled: dict = {}
            for key in obj:
                meant = cls.spelling(key)
                if meant in cls.OWN and meant != "thought" and obj.get(key) not in cls.EMPTY:
                    spelled.setdefault(meant, []).append(key)
            for meant, keys in spelled.items():
                if len(keys) < 2:
                    continue
                if len({_canonical(obj[key]) for key in keys}) > 1:
                    shown = " and ".join(json.dumps(key, ensure_ascii=False) for key in keys)
                    raise _refuse(f'the key "{meant}" appears twice with different values (as '
                                  f'{_cut(shown, 80)}); write each key once')
                _note(repairs, "duplicate_key")
        # 3. never both an answer and a call; but a "name" that is the protocol's word for an
        # answer ("final"), beside an answer and nothing else, is the final answer written as a call
        answer = "answer" in held or "answer" in stand_ins
        named_final = (answer and not strays and "arguments" not in held
                       and "arguments" not in stand_ins
                       and cls.spelling(obj.get("name")) in cls.FINAL_NAMES)
        if named_final:
            _note(repairs, "final_as_call")
        elif answer and ("name" in held or "arguments" in held):
            raise _refuse("your reply has both an answer and a tool call; send one of them")
        # 4. the kind: from "type", else from the keys a call or an answer has (an answer counted
        # as step 3 counts it)
        if "type" in obj:
            kind = obj["type"]
            normal = cls.spelling(kind)
            if normal not in ("tool_call", "final"):
                raise _refuse(f'unknown "type" {_cut(json.dumps(kind, ensure_ascii=False), 40)}: '
                              'use "tool_call" or "final"')
            if normal != kind:
                _note(repairs, "type_spelling")
            return cls("final" if named_final else normal, stand_ins, strays)
        is_call = "name" in obj or "arguments" in obj
        if is_call or "answer" in obj:
            if "type" in stand_ins:   # "Type" is not read as "type", as "Name" is not "name"
                raise _refuse(f'use "type" instead of '
                              f'{json.dumps(stand_ins["type"][0], ensure_ascii=False)}')
            _note(repairs, "missing_type")
            return cls("final" if answer or not is_call else "tool_call", stand_ins, strays)
        names = [key for key in obj if cls.meant(key) not in (None, "thought", key)]
        if names:
            fixes = "; ".join(f'use "{cls.meant(key)}" instead of '
                              f'{json.dumps(key, ensure_ascii=False)}' for key in names)
            raise _refuse(f'"type" is missing and the keys are wrong: {fixes}')
        raise _refuse('the object has no "type", "name" or "answer" (keys: '
                      f'{_cut(", ".join(map(str, obj)), 80) or "none"})')

    def missing(self, key: str) -> str:
        """What the model is told of a missing key: the key it wrote instead, if there is one."""
        if key not in self.stand_ins:
            return f'"{key}" is missing'
        return f'use "{key}" instead of {json.dumps(self.stand_ins[key][0], ensure_ascii=False)}'


# -- Protocol, what goes back: refusals, repair notes, observations --------------------

def _refuse(problem: str, shape: str = _BOTH_SHAPES) -> ActionFormatError:
    return ActionFormatError(_ask(problem, shape))


def _note(repairs: list, tag: str) -> None:
    """Record a repair once."""
    if tag not in repairs:
        repairs.append(tag)


def _canonical(value: Any) -> str:
    """A JSON value as text that is equal for equal values (1, 1.0 and true are three different
    values).

    Compare a value against many others through this, computed once: serialising it
    again per comparison makes the work grow with the square of the reply."""
    return json.dumps(value, sort_keys=True)


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _listed(schema: Any, top: bool = True, depth: int = 0) -> Any:
    """A parameter schema as the prompt lists it, the one trimmer: without annotations (a model
    needs none: they describe and never constrain), and at the top without what every tool's
    schema says (``"type": "object"``, ``"additionalProperties": false``, an empty ``required``);
    ``top=False`` keeps those, for an MCP tool's schema as it is registered.

    The keys of a map of names to schemas (properties, $defs) are names, kept whatever they are,
    and the values of enum, const and default are values, kept whole. ToolError past twice
    _MAX_SCHEMA_DEPTH levels (a schema level is a map and a schema), which the schema check
    refuses anyway, before the stack runs out.
    """
    if depth > 2 * _MAX_SCHEMA_DEPTH + 2:
        raise ToolError(f"the schema is nested more than {_MAX_SCHEMA_DEPTH} levels deep")
    if isinstance(schema, list):
        return [_listed(item, False, depth + 1) for item in schema]
    if not isinstance(schema, dict):
        return schema
    listed = {}
    for key, value in schema.items():
        if (key in ("properties", "$defs", "definitions", "patternProperties")
                and isinstance(value, dict)):
            listed[key] = {name: _listed(item, False, depth + 2) for name, item in value.items()}
        elif key in ("enum", "const", "default"):
            listed[key] = value
        elif key not in ("title", "examples", "$schema", "$comment"):
            listed[key] = _listed(value, False, depth + 1)
    if top:
        for key, plain in (("type", "object"), ("additionalProperties", False), ("required", [])):
            if listed.get(key) == plain:
                del listed[key]
    return listed


def _observation(text: str, step: int, max_steps: int) -> str:
    """The user message that carries a result back: the marker, the text, and where the run
    stands."""
    last = _LAST_STEP if step + 1 == max_steps else ""
    return f"{_OBSERVATION} {text}\n{_BUDGET.format(step=step, max_steps=max_steps, last=last)}"


def _returned(name: str, arguments: dict, result: str) -> str:
    """A result as its observation carries it: after the call that it answers, cut to 200
    characters (a call that writes a file is not sent back whole)."""
    return _RETURNED.format(call=_cut(f"{name}({_compact(arguments)})", 200), result=result)


def _observation_result(message: str, call: Optional[tuple[str, dict]] = None) -> Optional[str]:
    """The text an ``_observation`` message carries, without its marker and budget line, and without
    the call it names when ``call`` is that call's (name, arguments); None for any other message."""
    if not message.startswith(_OBSERVATION):
        return None
    text = message[len(_OBSERVATION):]
    body, newline, last = text.rpartition("\n")
    text = (body if newline and last.startswith(_BUDGET.split("{", 1)[0]) else text).strip()
    if call is not None:
        named = _returned(*call, "").rstrip()     # an empty result's space went with strip()
        text = text[len(named):].strip() if text.startswith(named) else text
    return text


# -- Protocol, loop detection: _repeating_tail -----------------------------------------
# a reply whose tail is one unit repeated; the streaming client and the loop both ask

_REPEAT_MIN_UNIT = 4  # characters; shorter units ("0, ", "-=") are lists and banners, not loops
_REPEAT_MIN_TIMES = 10      # back-to-back copies of the unit
_REPEAT_MIN_CHARS = 400     # characters the copies must cover
# longer units are not looked for, so one check costs the same at any reply length
_REPEAT_MAX_UNIT = 400
# the most of a reply's end that one check reads: the copies of the longest unit
_REPEAT_WINDOW = max(_REPEAT_MIN_CHARS, _REPEAT_MIN_TIMES * _REPEAT_MAX_UNIT)


def _repeating_tail(text: str) -> bool:
    """True when text ends in one unit repeated back to back: a model caught in a loop.

    The unit has at least ``_REPEAT_MIN_UNIT`` characters and is not one character
    repeated; it repeats at least ``_REPEAT_MIN_TIMES`` times and covers at least
    ``_REPEAT_MIN_CHARS`` characters; and it is not data (``_lists_values``): real
    small-model loops repeat a sentence, an equation or a run of digits after a
    point, while legitimate replies repeat rows of values
    (``[0.0, 0.0, ...]``, ``[null, ...]``, identical records, a table of zeros) and
    unspaced tokens (base64 of one colour, ``0123456789`` * 50, ``+---`` * 120) unless they
    join lowercase words (``greeting_to_`` * 60 is a loop). Units
    up to ``_REPEAT_MAX_UNIT`` characters are looked for, in the last ``_REPEAT_WINDOW``
    characters only, so one check costs the same at any reply length.

    >>> _repeating_tail("Thought: 17*23 = 320*4 + 1200 " * 30)
    True
    >>> _repeating_tail("=" * 1000), _repeating_tail("-=" * 500), _repeating_tail("0.0, " * 200)
    (False, False, False)
    """
    for unit in range(1, _REPEAT_MAX_UNIT + 1):
        span = max(_REPEAT_MIN_CHARS, _REPEAT_MIN_TIMES * unit)
        if len(text) < span:
            return False                        # the span only grows with the unit
        if text[-1] != text[-1 - unit] or text[-unit:] != text[-2 * unit:-unit]:
            continue                            # cheap tests first: the last two copies differ
        tail = text[-span:]
        if tail[unit:] == tail[:-unit]:         # the whole span has this period
            # the shortest period decides: "ab" * 300 is a banner, "0.0, " * 120 a list
            return unit >= _REPEAT_MIN_UNIT and not _lists_values(text[-unit:])
    return False


def _lists_values(unit: str) -> bool:
    """True when a repeated unit is data, not something the model says: a row or an unspaced token.

    A row holds a separator (``,;|``, a line break or a tab) and no word outside quotes
    but JSON literals: ``0.0, ``, ``null, ``, ``{"status": "ok"}, ``, ``| 0 | 0 |``; a unit
    that opens more brackets than it closes is not one, nor a member with no bracket
    (``"key": "value", ``): one object holds a key once. An
    unspaced token is digits, base64 or a banner: ``0123456789``, ``yB4e``, ``+---``; one that
    is lowercase words joined by ``_`` or ``-``, 8 characters or more, is a name the model keeps
    writing, not data (base64url of six random bytes repeated reads as one about 1 time in
    2,000; of one colour, never). Units of whitespace, prose, and arithmetic (``= 24*3 + 40``,
    ``.000000000``) are not data.
    """
    if re.fullmatch(r"[A-Za-z0-9+/=_-]+", unit):   # digits, base64, a banner: one unspaced token
        # a name written again and again ("greeting_to_") is a loop that runs to the context's
        # end (docs/NOTES.md, "Streaming"); the unit may start inside a word: its two copies
        # hold the join. Base64 of one colour has 4-character units.
        return not (re.fullmatch(r"[a-z_-]{8,}", unit)
                    and re.search(r"[a-z]{2}[_-][a-z]{2}", unit + unit))
    separator = re.search(r"[,;|\n\t]", unit)
    if not unit.strip() or not separator:
        return False
    # start after a separator, so no word is cut
    unit = unit[separator.end():] + unit[:separator.end()]
    # it may start inside a string: try both
    readings = (unit, '"' + unit) if '"' in unit else (unit,)
    for reading in readings:
        outside = "".join(reading.split('"')[::2])
        words = re.findall(r"[^\W\d_]{2,}", outside)   # two or more letters, in any script
        if not all(word in ("null", "true", "false", "None", "True", "False", "NaN")
                   for word in words):
            continue
        opens = len(re.findall(r"[{\[]", outside))
        # A unit that opens more than it closes nests deeper with each copy, and a member with no
        # bracket is the same key again in one object: neither is data, and a looping model
        # writes both to the context's end (docs/NOTES.md, "Streaming").
        if (opens <= len(re.findall(r"[]}]", outside))
                and not (opens == 0 and re.search(r'"\s*:', reading))):
            return True
    return False


# -- Protocol, packaging: think tags, a quoted action (skip on first read) -------------
# what may wrap the action: reasoning blocks before it, a quote around it

# The one table of reasoning blocks: (opening tag, closing tag), each matched in any case. Every
# think pattern below, and what the streaming scanner keeps of an open block, comes from it: a
# spelling is one line.
_THINK_BLOCKS = (("<think>", "</think>"), ("<thinking>", "</thinking>"),
                 ("<reasoning>", "</reasoning>"),
                 ("[THINK]", "[/THINK]"))    # the last: Mistral's reasoning models' spelling
_THINK_OPEN = re.compile("|".join(re.escape(opening) for opening, _ in _THINK_BLOCKS), re.I)
_THINK_CLOSE = re.compile("|".join(re.escape(closing) for _, closing in _THINK_BLOCKS), re.I)


def _drop_think(text: str, repairs: list) -> str:
    """Remove reasoning blocks that open before the action, and the reasoning before a lone closing
    tag.

    A block that never closes holds no action (a draft in it is never run): refused. A lone closing
    tag ends reasoning whose opening tag the server dropped: the first one outside the objects
    before it (a draft may quote a tag in a string), whatever the reasoning mentions.
    """
    # 1. the blocks that open before the first brace outside them
    kept, pos = [], 0
    brace = text.find("{")
    while True:
        opening = _THINK_OPEN.search(text, pos)
        if brace != -1 and brace < pos:
            brace = text.find("{", pos)  # that brace was inside a removed block
        if opening is None or (brace != -1 and brace < opening.start()):
            break
        kept.append(text[pos:opening.start()])
        pos, depth = _think_end(text, opening.end(), 1)
        if depth:
            tag = opening.group().lower()
            closer = next(close for open_, close in _THINK_BLOCKS if open_.lower() == tag)
            raise _refuse(f"your reply opens a {opening.group()} block that never closes, so it "
                          f"holds no action; close it with {closer} and put the action after it")
        _note(repairs, "think")
    text = ("".join(kept) + text[pos:]).strip()
    # 2. a lone closing tag: all before it is reasoning
    end = 0   # where the last object read ends; one that never closes runs to the end of the text
    for closing in _THINK_CLOSE.finditer(text):
        while end <= closing.start():
            first = _ACTION_START.search(text, end)
            if first is None or first.start() >= closing.start():
                _note(repairs, "think")
                return text[closing.end():].strip()
            scanner = _ActionScanner._at(text, first.start())
            end = scanner.end or scanner.broken_at or len(text)
    return text


_THINK_TAG = re.compile(f"(?P<close>{_THINK_CLOSE.pattern})|{_THINK_OPEN.pattern}", re.I)


def _think_end(text: str, pos: int, depth: int) -> tuple[int, int]:
    """Read reasoning from text[pos], inside depth open think blocks; blocks nest, so a closing tag
    ends only its own block. Returns (just past the tag that closes the outermost block, 0), or,
    when text ends first, (just past the last tag read, the depth still open)."""
    for tag in _THINK_TAG.finditer(text, pos):
        depth += -1 if tag.group("close") else 1
        pos = tag.end()
        if not depth:
            break
    return pos, depth


def _unquote_action(text: str, first: Any, repairs: list) -> tuple:
    """The reply is one JSON string holding a whole action (encoded once more): decode it in place.

    Otherwise the quote before the action is packaging, as in ``"{"type": …}"``.
    """
    try:
        inner, end = json.JSONDecoder(strict=False).raw_decode(text, first.start() - 1)
    except ValueError:
        return text, first
    inner = inner.strip() if isinstance(inner, str) else ""
    # else decoding the string could only change its backslashes
    encoded = '\\"' in text[first.start():end]
    if not encoded or not _ACTION_START.match(inner) or _ActionScanner._at(inner, 0).end is None:
        return text, first
    _note(repairs, "json_string")
    text = text[:first.start() - 1] + inner + text[end:]
    return text, _ACTION_START.search(text, first.start() - 1)


# -- Protocol, reading near-JSON: the lexer (skip on first read) -----------------------
# _ActionScanner finds where a reply's action ends (the streaming client uses it too); _read_value
# reads it

# The brackets and strings inside the action, which _ActionScanner._scan looks for: module names,
# the fastest lookup, since the scanner runs once per piece of a streamed reply.
_STRUCTURE = re.compile(r"[][{}\"']")
_STRING_REST = {'"': re.compile(r'[^"\\]*(?:\\.[^"\\]*)*', re.S),
                "'": re.compile(r"[^'\\]*(?:\\.[^'\\]*)*", re.S)}


class _ActionScanner:
    """Reads a reply piece by piece and finds where its first action ends.

    Before the action it skips packaging: whitespace, a fence opener, closed think
    blocks, special tokens, a bare ``json`` label, a stray ``"`` right before the
    action. The action is an object, or a ``[`` followed by ``{`` closed at its ``]``;
    inside it, brackets count only outside double- and single-quoted strings. Between
    pieces it keeps only an unfinished packaging token or the tail of an open think
    block, so the work per piece is proportional to the piece.
    """

    # What it looks for: the packaging before the action, and the brackets and strings in it.
    MAX_DEPTH = 100        # brackets nested deeper are refused
    # what an open think block keeps between pieces
    THINK_TAIL = max(len(tag) for block in _THINK_BLOCKS for tag in block) - 1
    LABELS = ("json", "JSON", "assistant")
    # What may come before the action. The only tags that are packaging: tokens of chat templates
    # and tool-call wrappers. Any other tag (<draft>, <example>, <reflection>) is prose, so a reply
    # that opens with it is read whole.
    LEAD_TOKEN = re.compile(rf"""
        (?P<space>[\s\ufeff]+)
      | (?P<action>{_ACTION_START.pattern})
      | (?P<quote>"(?={_ACTION_START.pattern}))        # a stray quote right before the action
      | (?P<think>(?i:{_THINK_OPEN.pattern}))
      | (?P<fence>```[\w+.-]{{0,20}})
      | (?P<token><\|/?[\w.-]{{1,40}}\|> | <｜[^｜<>]{{0,40}}｜> | \[/?(?:TOOL_CALLS|INST)\]
                 | </?(?:s|tool_calls?|function_?calls?)> | (?i:{_THINK_CLOSE.pattern}))
      | (?P<label>(?:{"|".join(LABELS)})\b)
    """, re.X)
    PACKAGING_TAGS = {"fence": "code_fence", "token": "special_tokens", "label": "special_tokens",
                      "quote": "stray_quote"}
    # the start of a lead token or of the action, cut at a piece's end: wait for the next piece
    LEAD_PARTIAL = re.compile(r"""<\|?/?[\w.-]{0,40}\|? | <｜[^｜<>]{0,40}｜? | \[\s{0,64}
                                  | \[/?[A-Z_]{0,20} | "(?:\[\s{0,64})? | `{1,2}""", re.X)

    # Reading, piece by piece; open_string says where an unclosed string began.

    def __init__(self) -> None:
        # None while undecided; False once prose came first
        self.opens_with_action: Optional[bool] = None
        self.start: Optional[int] = None       # where the action starts, once it has
        self.end: Optional[int] = None         # just past its closing bracket, once it has closed
        # why the action can never close: a mismatched or too deep bracket
        self.problem: Optional[str] = None
        self.broken_at: Optional[int] = None   # just past the bracket that made the problem
        self.too_deep = False                  # the problem is nesting past MAX_DEPTH
        self.packaging: list = []  # repair tags of the packaging skipped before the action
        self._fed = 0                          # characters fed so far
        self._pending = ""  # fed text not decided yet: a partial token, an open think block's tail
        self._think_depth = 0                  # think blocks open around the current position
        self._closers: list = []  # the closing brackets the action still needs, innermost last
        self._quote = ""                       # the quote of the string the action is inside, or ""
        self._escaped = False                  # the last piece ended on a backslash inside a string

    def feed(self, piece: str) -> Optional[int]:
        """Add the next piece; once the reply opens with its action and that action has closed,
        return the number of characters (of everything fed so far) up to and including its closing
        `}` or `]`. Returns None otherwise (and always None once prose came first)."""
        base, self._fed = self._fed, self._fed + len(piece)
        if self.end is not None or self.opens_with_action is False or self.problem:
            return self.end
        if self.opens_with_action:
            return self._scan(piece, 0, base)
        text, base, self._pending = self._pending + piece, base - len(self._pending), ""
        pos = self._lead(text, base)
        return None if pos is None else self._scan(text, pos, base)

    @classmethod
    def _at(cls, text: str, start: int) -> _ActionScanner:
        """The scanner after reading the whole of text from start, where an action opens (`{` or
        `[{`)."""
        scanner, opener = cls(), _ACTION_START.match(text, start)
        scanner._fed = len(text)
        scanner._open(opener.group(), start)
        scanner._scan(text, opener.end(), 0)
        return scanner

    def _open(self, opener: str, start: int) -> None:
        self.opens_with_action, self.start = True, start
        self._closers = ["]", "}"] if opener[0] == "[" else ["}"]

    def _lead(self, text: str, base: int) -> Optional[int]:
        """Skip packaging; return where the inside of the action begins, or None while undecided or
        after prose."""
        pos = 0
        while pos < len(text):
            if self._think_depth:
                pos, self._think_depth = _think_end(text, pos, self._think_depth)
                if self._think_depth:  # keep only what may be the start of the next tag
                    self._pending = text[max(pos, len(text) - self.THINK_TAIL):]
                    return None
                continue
            token = self.LEAD_TOKEN.match(text, pos)
            if token is None or (token.end() == len(text)
                                 and token.lastgroup in ("fence", "label")):
                # wait: the next piece decides
                # or when the end may still grow into packaging or the action's start
                rest = text[pos:]
                if (token is not None or self.LEAD_PARTIAL.fullmatch(rest)
                        or any(label.startswith(rest) for label in self.LABELS)
                        or any(tag.lower().startswith(rest.lower()) for block in _THINK_BLOCKS
                               for tag in block)):
                    self._pending = text[pos:]
                else:
                    self.opens_with_action = False
                return None
            kind, pos = token.lastgroup, token.end()
            if kind == "action":
                self._open(token.group(), base + token.start())
                return pos
            self._think_depth = int(kind == "think")
            tag = ("think" if kind == "think" or _THINK_CLOSE.fullmatch(token.group())
                   else self.PACKAGING_TAGS.get(kind))
            if tag:
                _note(self.packaging, tag)
        return None

    def _scan(self, text: str, pos: int, base: int) -> Optional[int]:
        """Count brackets outside strings from text[pos]; return the end once the action has
        closed."""
        closers = self._closers
        while True:
            if self._quote:
                if self._escaped:
                    if pos >= len(text):
                        return None
                    pos, self._escaped = pos + 1, False
                pos = _STRING_REST[self._quote].match(text, pos).end()
                if pos >= len(text):
                    return None
                # a lone backslash ends the piece: it escapes the next one's first character
                if text[pos] == "\\":
                    self._escaped = True
                    return None
                self._quote, pos = "", pos + 1
                continue
            match = _STRUCTURE.search(text, pos)
            if match is None:
                return None
            char, pos = match.group(), match.end()
            if char in "\"'":
                self._quote = char
            elif char in "{[":
                closers.append("}" if char == "{" else "]")
                if len(closers) > self.MAX_DEPTH:
                    self.too_deep = True
                    return self._broken(f"the JSON is nested more than {self.MAX_DEPTH} levels "
                                        "deep", base + pos)
            elif closers.pop() != char:
                return self._broken(f"the JSON has a mismatched {char!r} at character "
                                    f"{base + pos - 1}", base + pos)
            elif not closers:
                self.end = base + pos
                return self.end

    def open_string(self, text: str) -> Optional[int]:
        """Where in text, all of it fed, the string that text ends inside opened: the last quote of
        its kind not escaped by a backslash. None when text does not end inside a string."""
        at = len(text)
        while self._quote:
            # a quote before the action opened no string in it
            at = text.rfind(self._quote, self.start or 0, at)
            if at < 0:
                return None
            before = at
            while before > 0 and text[before - 1] == "\\":
                before -= 1
            if (at - before) % 2 == 0:
                return at
        return None

    def _broken(self, problem: str, at: int) -> None:
        self.problem, self.broken_at = problem, at
        return None


def _read_value(text: str, start: int, repairs: list, action: bool = True) -> tuple[Any, int]:
    """Read the action (or, not ``action``, the arguments) that opens at text[start] and return it
    with the index just past it."""
    scanner = _ActionScanner._at(text, start)
    if scanner.problem:
        raise _refuse(scanner.problem)
    at = scanner.open_string(text)
    if (scanner.end is None and at is not None
        and _ActionScanner._at(text[:at] + text[at + 1:], start).end):
        # the text ends inside a string, but read as a character its opening quote closes the action
        escaped = '\\"' if text[at] == '"' else "\\' (or put the text in double quotes)"
        raise _refuse("a quote inside a string is not escaped, so the object never closes; write "
                      f"a quote inside a string as {escaped}")
    if scanner.end is None:
        raise _refuse("the JSON object is not complete: it was cut off or a closing bracket or "
                      "quote is missing; send a shorter, complete object")
    return _decode(text[start:scanner.end], repairs, action), scanner.end


def _objects(text: str):
    """Each object (or array of objects) in text: its text, and its value or None when it cannot be
    read."""
    pos = 0
    while True:
        first = _ACTION_START.search(text, pos)
        if first is None:
            return
        scanner = _ActionScanner._at(text, first.start())
        end = scanner.end or scanner.broken_at or len(text)  # a broken one ends where it broke
        value = None
        if scanner.end is not None:
            try:
                value = _decode(text[first.start():end], [])
            except ActionFormatError:
                pass
        yield text[first.start():end], value
        pos = end


def _decode(chunk: str, repairs: list, action: bool = True) -> Any:
    """Read one bracketed JSON value: strictly first, then with lexical repairs.

    A key written twice with different values, at any depth, and a number that is not
    finite are refused. One exception: an action's own "thought" (at the top of the value, when
    it is an action or an array of them) written twice as text is one thought, the two joined
    (``duplicate_thought``): a thought runs nothing, so neither can be the wrong one to run.
    """
    joined: list = []   # the objects whose "thought" came twice

    def unique_keys(pairs: list) -> dict:   # a key written twice must hold one value
        obj: dict = {}
        for key, value in pairs:
            if key in obj:
                if _canonical(obj[key]) != _canonical(value):
                    if key == "thought" and isinstance(value, str) and isinstance(obj[key], str):
                        obj[key] = " ".join(part for part in (obj[key], value) if part)
                        joined.append(obj)
                        continue
                    raise twice(key)
                _note(repairs, "duplicate_key")
            obj[key] = value
        return obj

    def twice(key: str) -> ActionFormatError:
        shown = _cut(json.dumps(key, ensure_ascii=False), 60)
        return _refuse(f"the key {shown} appears twice with different values; write each key once")

    def finite(text: str) -> float:
        value = float(text)
        if not math.isfinite(value):
            _not_finite(text)
        return value

    def thoughts_joined(value: Any) -> Any:   # only an action's own thought may come twice
        tops = value if isinstance(value, list) else [value]
        if joined and (not action or any(all(obj is not top for top in tops) for obj in joined)):
            raise twice("thought")
        if any(obj is tops[0] for obj in joined):   # the action read (an array's first)
            _note(repairs, "duplicate_thought")
        return value

    hooks = {"object_pairs_hook": unique_keys, "parse_constant": _not_finite,
             "parse_float": finite}
    try:
        return thoughts_joined(json.loads(chunk, **hooks))
    except ActionFormatError:
        raise
    except ValueError:
        joined.clear()
    try:
        return thoughts_joined(json.loads(_normalize_json(chunk, repairs), **hooks))
    except ActionFormatError:
        raise
    except json.JSONDecodeError as exc:
        after_string = exc.msg.endswith("delimiter") and exc.doc[:exc.pos].rstrip().endswith('"')
        hint = '; a quote inside a string must be escaped as \\"' if after_string else ""
        raise _refuse(f"the JSON is invalid: {exc.msg} at character {exc.pos}{hint}") from None
    except ValueError as exc:
        raise _refuse(f"the JSON is invalid: {exc}") from None


def _not_finite(text: str) -> None:
    raise _refuse(f"the number {text[:40]} is not finite; send a finite number, or text in double "
                  "quotes")


# One token of near-JSON, as _normalize_json reads it.
_JSON_TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<escaped>(?:\\[nrt])+)                         # a literal \\n between tokens: escaped twice
  | (?P<punct>[][{}:,])
  | (?P<string>"[^"\\]*(?:\\.[^"\\]*)*"|'[^'\\]*(?:\\.[^'\\]*)*')
  | (?P<number>-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?(?![\w.]))
  | (?P<word>-?[A-Za-z_][\w.-]*)
""", re.X | re.S)
# One escape or raw control character inside a string.
_STRING_PIECE = re.compile(r"\\(?:x[0-9a-fA-F]{2}|U[0-9a-fA-F]{8}|u[0-9a-fA-F]{4}|[0-7]{1,3}|.)"
                           r"|[\x00-\x1f]", re.S)


def _normalize_json(chunk: str, repairs: list) -> str:
    """Rewrite near-JSON as JSON, token by token: Python literals, raw control characters,
    invalid escapes, trailing commas, escaped-twice whitespace. Unquoted words are refused.

    In a string, ``\\_`` and ``\\'`` read as the character (Markdown and Python habits).
    Otherwise a double-quoted string keeps JSON's escapes and a single-quoted one Python's
    (for ``ast.literal_eval``); any other backslash is refused, since it may be a path's
    backslash or an escape.
    """
    python_words = {"True": "true", "False": "false", "None": "null"}

    def fix_piece(piece: str, single: bool) -> str:   # one match of _STRING_PIECE
        if piece[0] != "\\":
            _note(repairs, "raw_control_characters")
            return json.dumps(piece)[1:-1]
        code = piece[1:]
        if code == "_" or (code == "'" and not single):
            _note(repairs, "invalid_escape")
            return code
        # past 0o377 Python warns; the same character without a warning
        if single and code[0] in "01234567":
            return f"\\U{int(code, 8):08x}"
        if single:   # a backslash and a line break is a line continuation
            allowed = code[0] in "\\'\"abfnrtv01234567xNuU\n"
        else:
            allowed = code in ('"', "\\", "/", "b", "f", "n", "r", "t") or (
                code[0] == "u" and len(code) == 5)
        if not allowed:
            char = code[0]
            shown = (f"'\\{char}'" if char.isprintable() and not char.isspace()
                     else f"a backslash before U+{ord(char):04X}")
            raise _refuse(f"a string holds {shown}, which may be a literal backslash (as in "
                          "C:\\Users) or an escape; write a literal backslash as \\\\")
        return piece

    tokens, pos = [], 0
    while pos < len(chunk):
        token = _JSON_TOKEN.match(chunk, pos)
        if token is None:
            raise _refuse(f"the JSON has an unexpected character {chunk[pos]!r} at character {pos}")
        tokens.append((token.lastgroup, token.group()))
        pos = token.end()
    out: list = []
    last = [-1, -1]  # where in out the last two tokens that are not whitespace are
    for kind, value in tokens:
        if kind == "escaped":
            _note(repairs, "escaped_twice")
            value, kind = " ", "space"
        elif kind == "string":   # a double- or single-quoted string, as a JSON string literal
            single = value[0] == "'"
            body = _STRING_PIECE.sub(
                lambda m, single=single: fix_piece(m.group(), single), value[1:-1])
            value = f'"{body}"'
            if single:
                _note(repairs, "python_literal")
                try:
                    value = json.dumps(ast.literal_eval(f"'{body}'"), ensure_ascii=False)
                except (ValueError, SyntaxError) as exc:
                    raise _refuse(f"a single-quoted string could not be read ({exc}); use "
                                  "double quotes") from None
        elif kind == "word" and value not in ("true", "false", "null"):
            if value in ("NaN", "Infinity", "-Infinity"):
                _not_finite(value)
            if value not in python_words and last[1] >= 0 and out[last[1]][:1] == '"':
                # as in "echo "hi"": the string ended early
                raise _refuse(f'the text {value[:40]!r} follows a string: a quote inside a string '
                              'must be escaped as \\"')
            if value not in python_words:
                raise _refuse(f"the value {value[:40]!r} is not quoted: put text values in double "
                              "quotes")
            _note(repairs, "python_literal")
            value = python_words[value]
        elif (value in "]}" and min(last) >= 0 and out[last[1]] == ","
              and out[last[0]] not in ("[", "{", ",", ":")):
            out[last[1]] = ""  # whatever whitespace, line breaks or indentation follow the comma
            _note(repairs, "trailing_comma")
        if kind != "space":
            last = [last[1], len(out)]
        out.append(value)
    return "".join(out)


# -- Transport: deadlines, bodies, server-sent events, _request (skip on first read) ---
# every read is bounded by the request's deadline, events are read as they arrive, no redirect is
# followed; _request is the one HTTP request, of OpenAICompatLLM and of MCP over HTTP

class _Deadline:
    """When one request must be over: max_request_seconds after it starts, or the call's own end
    (internal)."""

    def __init__(self, request_seconds: float, call_end: float, url: str,
                 name: str = "max_request_seconds") -> None:
        self.request_seconds, self.call_end = request_seconds, call_end
        self.url, self.name = url, name
        self.end = min(time.monotonic() + request_seconds, call_end)
        # The next receive may wait for prompt processing, bounded by ``end`` alone: an answer's
        # status line (set by _TimedReader, again by the Response after a 1xx) and the body's first
        # byte (set by _Body). Every other receive must also come within the timeout.
        self.waiting = True

    def left(self) -> float:
        """Seconds left; raises LLMError when none are."""
        left = self.end - time.monotonic()
        if left <= 0:
            raise self.expired()
        return left

    def passed(self) -> bool:
        # a socket timeout set to what was left ends just about now
        return time.monotonic() >= self.end - 0.01

    def expired(self) -> LLMError:
        if self.end >= self.call_end:
            return LLMError(f"no complete reply from {self.url} within the call's max_seconds")
        return LLMError(f"no complete reply from {self.url} within "
                        f"{self.name}={self.request_seconds:g}")


class _Body:
    """Reads a response in pieces as they arrive, under the size cap (internal).

    The waits themselves are bounded by the connection's _TimedReader; this marks
    the body's first byte (``deadline.waiting``), which may wait for prompt
    processing, and says what a timeout means.
    """

    def __init__(self, response: Any, deadline: _Deadline, max_bytes: float,
                 timeout: float) -> None:
        self._read = getattr(response, "read1", None) or response.read
        self._deadline, self._max_bytes, self._timeout = deadline, max_bytes, timeout
        self.size = 0

    def read(self) -> bytes:
        """The next piece, b"" at the end; _Retryable on a stall or a break, LLMError past a
        limit."""
        import http.client
        import socket

        self._deadline.left()
        self._deadline.waiting = self.size == 0
        try:
            # 64 KiB at most: a stream gives back what has arrived
            piece = self._read(65536)
        except socket.timeout:
            if self._deadline.passed():
                raise self._deadline.expired() from None
            raise _Retryable(f"{self._deadline.url} sent nothing for {self._timeout:g} s "
                             "mid-reply") from None
        except (OSError, http.client.HTTPException, ValueError) as exc:
            raise _Retryable(f"the connection to {self._deadline.url} broke mid-reply "
                             f"({type(exc).__name__})") from None
        self.size += len(piece)
        if self.size > self._max_bytes:
            raise LLMError(f"the answer from {self._deadline.url} is over "
                           f"max_response_bytes={self._max_bytes}; refused")
        return piece


class _Retryable(Exception):
    """A failure worth another attempt (internal); ``kind`` is the LLMError's kind when it is the
    last."""

    def __init__(self, message: str, status: Optional[int] = None,
                 retry_after: Optional[float] = None, kind: Optional[str] = None) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after
        self.kind = kind


class _EventStream:
    """Server-sent events out of bytes as they arrive: gives the data of each complete event
    (internal)."""

    def __init__(self) -> None:
        self._partial: list = []     # bytes of a line not ended yet
        self._data: list = []        # data lines of the event not dispatched yet
        # the last piece ended in \r: a \n starting the next one ends no line
        self._after_cr = False

    def feed(self, chunk: bytes) -> list:
        """The data of every event that chunk completes; b"" marks the end of the stream."""
        end = not chunk
        if self._after_cr and chunk.startswith(b"\n"):
            chunk = chunk[1:]  # the rest of a \r\n cut between two reads
        self._after_cr = chunk.endswith(b"\r")
        if not end and b"\n" not in chunk and b"\r" not in chunk:
            self._partial.append(chunk)
            return []
        # a UTF-8 character never holds \r or \n
        # server-sent events end lines in any of the three
        lines = re.split(rb"\r\n|\r|\n", b"".join(self._partial + [chunk]))
        self._partial = [] if end else [lines.pop()]
        events: list = []
        for line in lines + ([b""] if end else []):  # at the end, a blank line dispatches the rest
            if not line and self._data:
                events.append("\n".join(self._data))
                self._data = []
            elif line.startswith(b"data:"):
                value = line[6:] if line.startswith(b"data: ") else line[5:]
                self._data.append(value.decode("utf-8", errors="replace"))
            # comments (":") and the event, id and retry fields carry nothing the client needs
        return events


class _TimedReader(io.RawIOBase):
    """What http.client reads a response from: each receive waits at most what is allowed
    (internal).

    The status line, and the body's first byte (while ``deadline.waiting``), wait
    for prompt processing: only the request's deadline bounds them. Every other
    receive, headers and chunk-size lines included, must come within ``timeout``
    and the deadline. It holds the socket itself: http.client lets go of it when
    the answer will close, and a timeout set on the connection would then be lost.
    """

    def __init__(self, sock: Any, timeout: float, deadline: _Deadline) -> None:
        super().__init__()
        # keeps the socket open until the response closes
        self._raw = sock.makefile("rb", buffering=0)
        self._sock, self._timeout, self._deadline = sock, timeout, deadline
        deadline.waiting = True  # a new answer (a proxy's to CONNECT, then the server's)

    # http.client's response asks its "socket" for this
    def makefile(self, mode: str = "rb") -> Any:
        return io.BufferedReader(self)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        import socket

        left = self._deadline.end - time.monotonic()
        if left <= 0:
            raise socket.timeout("the request's deadline has passed")
        waiting = self._deadline.waiting
        self._sock.settimeout(min(left if waiting else min(self._timeout, left),
                                  threading.TIMEOUT_MAX))
        count = self._raw.readinto(buffer)
        self._deadline.waiting = waiting and not count
        return count

    def close(self) -> None:
        self._raw.close()
        super().close()


@functools.cache
def _handler_classes() -> tuple:
    """urllib's HTTP and HTTPS handlers made to read every answer through a _TimedReader, past
    informational answers, and a redirect handler that follows none; made on first use, since
    importing urllib costs more than agent.py."""
    import http.client
    import urllib.request

    class Response(http.client.HTTPResponse):
        def __init__(self, sock: Any, *args: Any, timing: Optional[tuple] = None,
                     **kwargs: Any) -> None:
            # timing: (timeout, deadline) of the request
            self.deadline = timing[1] if timing else None
            super().__init__(_TimedReader(sock, *timing) if timing else sock, *args, **kwargs)

        def _read_status(self) -> tuple:
            """The status line after any informational ones (http.client skips only 100)."""
            while True:
                version, status, reason = super()._read_status()
                if not 101 < status < 200:  # 101 switches protocols, which agent.py never asks for
                    return version, status, reason
                http.client.parse_headers(self.fp)  # a 102's or 103's headers: not needed
                if self.deadline is not None:
                    # the real answer may still wait for prompt processing
                    self.deadline.waiting = True

    class Timed:
        """Every answer a connection reads goes through a _TimedReader: the response, and also a
        proxy's answer to CONNECT, which http.client reads with the same response class before
        the tunnel's TLS starts. A handler keeps the timing its connections read with."""

        def __init__(self, *args: Any, timing: Optional[tuple] = None, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.timing = timing  # (timeout, deadline) of the one request sent, or None
            if timing is not None and hasattr(self, "response_class"):
                self.response_class = functools.partial(Response, timing=timing)

    class HTTPConnection(Timed, http.client.HTTPConnection):
        response_class = Response

    class HTTPSConnection(Timed, http.client.HTTPSConnection):
        response_class = Response

    class HTTPHandler(Timed, urllib.request.HTTPHandler):
        def http_open(self, req: Any) -> Any:
            return self.do_open(functools.partial(HTTPConnection, timing=self.timing), req)

    class HTTPSHandler(Timed, urllib.request.HTTPSHandler):
        def https_open(self, req: Any) -> Any:
            connection = functools.partial(HTTPSConnection, timing=self.timing)
            return self.do_open(connection, req, context=self._context)

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None  # following would carry the key to another host; a 3xx is an HTTPError

    return HTTPHandler, HTTPSHandler, NoRedirect


def _request(url: str, deadline: _Deadline, timeout: float, data: Optional[bytes],
             headers: dict, *, method: Optional[str] = None, opener: Any = None) -> tuple:
    """Send one request to url under deadline, the one way agent.py makes an HTTP request (for
    OpenAICompatLLM and MCP over HTTP): (the response, None) for a 2xx, (the HTTPError, the
    start of its body) for an error status.

    Every receive must come within timeout and the deadline (see _TimedReader); a
    loopback server is never reached through HTTP(S)_PROXY; no redirect is followed
    (a 3xx is an error status). ``opener``, anything with ``open(request,
    timeout=...)``, replaces urllib's. The method is a POST of data, or a GET when
    data is None. Raises OSError or http.client.HTTPException when the server cannot
    be reached, and LLMError when the deadline passes.
    """
    import urllib.error
    import urllib.request

    # a fresh Request (and opener) per attempt: urllib's proxy code edits the request
    request = urllib.request.Request(url, data=data, headers=headers,
                                     method=method or ("GET" if data is None else "POST"))
    if opener is None:
        proxies = urllib.request.ProxyHandler({} if _is_loopback(url) else None)
        http, https, no_redirect = _handler_classes()
        opener = urllib.request.build_opener(proxies, http(timing=(timeout, deadline)),
                                             https(timing=(timeout, deadline)), no_redirect())
    try:
        return opener.open(request, timeout=min(timeout, deadline.left(),
                                                threading.TIMEOUT_MAX)), None
    except urllib.error.HTTPError as exc:
        # up to 64 KiB of the body, to quote its message, read under the deadlines: a drip cannot
        # hold the call
        body, pieces, size, most = _Body(exc, deadline, math.inf, timeout), [], 0, 65536
        try:
            while size < most:
                piece = body.read()
                if not piece:
                    break
                pieces.append(piece)
                size += len(piece)
        except LLMError:
            raise                                   # the request's deadline passed
        except Exception:
            pass                                    # a stall or a break: quote what came
        finally:
            exc.close()
        return exc, b"".join(pieces)[:most]


def _http_url(url: str) -> Any:
    """url split (``urlsplit``), the one check of a URL to send requests to: ValueError unless it
    starts with http:// or https://, names a host (an IPv6 one valid) and a port in range, not 0."""
    parts = urlsplit(url)
    port = parts.port                       # a port that is not a number in range raises here
    if parts.hostname and ":" in parts.hostname:
        ipaddress.ip_address(parts.hostname.split("%")[0])
    if parts.scheme not in ("http", "https") or not parts.hostname or port == 0:
        raise ValueError("must start with http:// or https:// and name a host")
    return parts


def _is_loopback(url: str) -> bool:
    """True when url names a loopback host: a literal loopback IP (127.0.0.0/8, ::1) or exactly
    ``localhost``.

    Nothing is resolved, and no other name counts (``*.localhost`` may resolve anywhere).
    """
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


# -- Models ----------------------------------------------------------------------------
# the LLM protocol, and MockLLM, a scripted model for tests, replays and the demo

class LLM(Protocol):
    """Anything with ``chat(messages) -> str`` drives the agent.

    Optional, and what the Agent does with each when present:
      chat's options ``response_schema``, ``temperature``, ``max_seconds``, ``frequency_penalty``
        passed only to a ``chat`` that names them or takes ``**kwargs`` (the decoding ladder, and
        the time left of ``max_seconds``)
      last_finish_reason, read after each call (a summary call too)
        ``"length"``: cut off at the token limit; ``"repetition"``: stopped for repeating itself
        (the reply is refused and the model asked again); kept in ``Step.finish_reason``
      last_usage, read after each call
        a dict with ``prompt_tokens`` and ``completion_tokens``, for ``max_total_tokens`` and the
        result's usage; None or absent: estimated at 4 characters a token
      last_reasoning, read after each call
        a separate reasoning field the server sent, kept in ``Step.reasoning`` and never parsed
      temperature
        read once a failed reply repeats an earlier one: that call asks for at least
        ``Agent._HOT_TEMPERATURE``

    The CLI reads more, of the ``OpenAICompatLLM`` it builds itself: ``model`` and ``url`` for
    its banner, ``last_model`` to warn when the server answered as another model; and it sets
    ``on_delta`` (on a client that has one) to draw the streaming status line.
    ``OpenAICompatLLM`` also sets ``last_stopped_early``, which nothing in agent.py reads.
    """

    def chat(self, messages: list[dict]) -> str: ...


class MockLLM:
    """A scripted model for tests and the offline demo.

    ``MockLLM(replies)`` answers with each reply in turn: a string, a callable
    taking the messages and returning a string, or an exception instance to
    raise. It raises ``LLMError`` when the replies run out. ``.calls`` keeps a
    copy of every message list received. With no replies it is a small offline
    planner: the clock for questions about the time, the calculator for each
    arithmetic expression in the task, then a final answer from the observations.
    """

    def __init__(self, replies: Optional[Iterable[Union[str, Callable[[list[dict]], str],
                                                      BaseException]]] = None) -> None:
        self.replies = None if replies is None else list(replies)
        self.calls: list[list[dict]] = []    # a copy of the messages of each call
        self.options: list[dict] = []  # the per-call options of each call, e.g. response_schema
        self.last_finish_reason: Optional[str] = None
        self._finish_reasons: list = []  # what each reply reports as its finish_reason (a replay)
        # a replay's summary replies, (reply, finish_reason) pairs, served only to summary requests
        # (None: one script answers every call); and how many calls of each kind were answered
        self._summaries: Optional[list] = None
        self._served = {False: 0, True: 0}

    @classmethod
    def from_trace(cls, path: str) -> MockLLM:
        """Replay the raw replies of a saved run: ``AgentResult.save`` JSON or a ``--trace`` JSON
        Lines file.

        Each replayed reply reports its step's ``finish_reason`` again, so a cut-off
        replays as a cut-off. The other calls a step recorded are replayed before
        its reply, in the order they were made: a context overflow (``overflow_budget``),
        as the same overflow (so the same budget follows), then its ``summary_calls``
        (``memory="summary"``), a failed one as an ``LLMError`` with the same message,
        then the replies it did not keep (``discarded_raw``). A summary reply answers
        only a summary request (known by its prompt), and any other reply only another
        request: a run that summarises where the recording did not, or the reverse,
        never takes a summary for an action. Only these recorded fields
        are read, never the step's notes: a note may quote a server's text, and that is
        no reply of the model. A trace written before a field existed replays without it.
        Raises OSError when the file cannot be read and ValueError when it holds no run.
        """
        steps = [step for record in _trace_records(path) for step in _record_steps(record)]
        if not steps:
            raise ValueError(f"{path} holds no steps to replay")
        # the model calls each step made, in order, from its declared fields alone: (reply to
        # script, finish_reason, whether it is a summary call)
        calls: list = []
        for step in steps:
            if not isinstance(step, dict):
                continue
            budget = step.get("overflow_budget")
            if _is_int(budget) and budget > 0:
                def overflow(messages: list[dict], budget: int = budget) -> str:
                    # counts that make the agent set the same budget: sent * n_ctx / n_prompt_tokens
                    raise LLMError("replayed: the request exceeds the available context size", 400,
                                   "context_overflow", n_ctx=budget,
                                   n_prompt_tokens=sum(len(m["content"]) for m in messages))
                calls.append((overflow, None, False))
            summaries = step.get("summary_calls")
            for record in summaries if isinstance(summaries, list) else ():
                if isinstance(record, dict) and isinstance(record.get("raw"), str):
                    reason = record.get("finish_reason")
                    calls.append((record["raw"], reason if isinstance(reason, str) else None, True))
                elif isinstance(record, dict):
                    calls.append((LLMError(_text(record.get("error") or "the summary call failed")),
                                  None, True))
            discarded = step.get("discarded_raw")
            calls += [(raw, None, False) for raw in (discarded if isinstance(discarded, list)
                                                     else ()) if isinstance(raw, str)]
            if isinstance(step.get("raw"), str):
                reason = step.get("finish_reason")
                calls.append((step["raw"], reason if isinstance(reason, str) else None, False))
        llm = cls([reply for reply, _, summary in calls if not summary])
        llm._finish_reasons = [reason for _, reason, summary in calls if not summary]
        llm._summaries = [(reply, reason) for reply, reason, summary in calls if summary]
        return llm

    def chat(self, messages: list[dict], **options: Any) -> str:
        """The next scripted reply (or the planner's); ``options`` are recorded in ``.options``."""
        self.calls.append([dict(message) for message in messages])
        self.options.append(dict(options))
        if self.replies is None:
            return _offline_reply(messages)   # the demo section's offline planner
        script, reasons, index, kind = self.replies, self._finish_reasons, len(self.calls) - 1, ""
        if self._summaries is not None:   # a replay: a summary reply never answers an action call
            asked = (bool(messages) and isinstance(messages[0].get("content"), str)
                     and messages[0]["content"].startswith(_SUMMARY_PROMPT.split("{")[0]))
            index = self._served[asked]
            self._served[asked] += 1
            if asked:
                script, kind = [reply for reply, _ in self._summaries], "summary "
                reasons = [reason for _, reason in self._summaries]
        if index >= len(script):
            raise LLMError(f"MockLLM ran out of scripted {kind}replies after {len(script)}")
        self.last_finish_reason = reasons[index] if index < len(reasons) else None
        reply = script[index]
        if isinstance(reply, BaseException):
            raise reply
        return reply(messages) if callable(reply) else reply


# -- Models, the client: OpenAICompatLLM -----------------------------------------------
# chat over HTTP with streaming, early stop, retries, adaptation; the API key never leaves in a
# message

class _PerThread:
    """A client attribute kept per thread: what the last call on this thread left behind
    (internal).

    A client's per-thread values live in one ``threading.local``, which the first use makes and
    keeps in the client's ``__dict__`` (as ``functools.cached_property`` keeps its value).
    """

    _SLOT = "_per_thread"

    def __init__(self, default: Any = None) -> None:
        self.default = default

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, client: Any, owner: Optional[type] = None) -> Any:
        return self if client is None else getattr(self._values(client), self.name, self.default)

    def __set__(self, client: Any, value: Any) -> None:
        setattr(self._values(client), self.name, value)

    def _values(self, client: Any) -> threading.local:
        values = vars(client).get(self._SLOT)
        # setdefault: two threads that both make one keep the same
        return values if values is not None else vars(client).setdefault(self._SLOT,
                                                                          threading.local())


class OpenAICompatLLM:
    """A chat-completions client for any OpenAI-compatible server, over urllib.

    Streams by default (server-sent events) and stops reading as soon as the reply's
    first action is complete, or when the reply repeats itself. Retries the statuses
    in ``_RETRY_STATUSES``, network errors and broken streams with exponential backoff
    and jitter, honouring ``Retry-After``; fails fast on every other error status and
    on redirects. Adapts once to a parameter the server rejects by name. Raises only
    ``LLMError``, with the status and the server's own message. The API key is sent
    only in the Authorization header and never appears in an exception, a ``repr``
    or a log line. ``opener`` (anything with ``open(request, timeout=...)``) and
    ``sleep`` are injectable for tests.

    Constructor options (``model``, ``base_url`` and ``api_key`` may be positional):
      model
        the model name sent with every request (required; ``OPENAI_MODEL`` for from_env)
      base_url (default: 'https://api.openai.com/v1')
        the server's API root; ``/chat/completions`` is added; a ``user:password@`` in it is sent as
        Basic auth
      api_key (default: None)
        sent as ``Authorization: Bearer``; None sends no key (a local server)
      temperature (default: 0.0)
        sampling temperature for every call (a call may override it); None leaves it to the server
      max_tokens (default: None)
        longest reply in tokens (sent as ``max_completion_tokens`` if the server asks);
        None leaves it to the server
      timeout (default: 60)
        seconds to connect, and to wait for each next byte once the first has come
      max_retries (default: 3)
        retries after the first attempt, for the failures retried above
      stop (default: ())
        stop strings sent as ``stop`` (one string is one stop); cut client-side if the server
        rejects them
      extra_body (default: None)
        more fields for every request body; the per-call options of ``chat`` win over them
      headers (default: None)
        more HTTP headers for every request; their values never appear in an error message
      opener (default: None)
        anything with ``open(request, timeout=...)``; None: urllib, without a proxy for loopback
      sleep (default: time.sleep)
        waits between retries (tests pass a fake)
      response_schema (default: None)
        a JSON Schema sent as ``response_format`` on every call, in place of the agent's
        per-call schema
      stream (default: True)
        ask for server-sent events; a plain JSON answer is read as well
      on_delta (default: None)
        called with each new piece of text as it streams in, and with None when a retry restarts
      early_stop (default: True)
        stop reading once a reply that opens with its action has closed it
      repetition_stop (default: True)
        stop reading a reply that repeats itself (``last_finish_reason`` "repetition")
      max_request_seconds (default: 600)
        seconds for a whole request, its first byte included
      max_response_bytes (default: 8388608, 8 MiB)
        a longer answer is refused
      allow_http_key (default: False)
        let ``from_env`` send a key from the environment over plain http:// to a host other than
        loopback
      organization (default: None)
        sent as the ``OpenAI-Organization`` header (``OPENAI_ORG_ID`` for from_env)
      project (default: None)
        sent as the ``OpenAI-Project`` header (``OPENAI_PROJECT_ID`` for from_env)
    """

    _RETRY_STATUSES = {408, 409, 429, 500, 502, 503, 504}
    # what an error status's message adds, when nothing more precise applies
    _STATUS_HINTS = {
        400: "the server rejected the request",
        401: "check OPENAI_API_KEY",
        403: "check OPENAI_API_KEY and that it may use this model",
        404: "check that the base URL ends in /v1 (e.g. http://localhost:11434/v1) and that the "
             "model name exists",
        422: "the server could not process the request; check the model name and options",
    }

    last_finish_reason = _PerThread()      # "stop", "length", "repetition", ... or None
    # True when reading stopped at the end of the first action
    last_stopped_early = _PerThread(False)
    last_reasoning = _PerThread()          # a separate reasoning field the server sent, or None
    last_usage = _PerThread()  # this call's prompt_tokens/completion_tokens, None when not reported
    # the model the server says answered this call, None when it names none
    last_model = _PerThread()
    last_error = _PerThread()   # the LLMError this thread's last call raised, None when it answered

    # Building a client: the constructor, or the environment
    def __init__(self, model: str, base_url: str = "https://api.openai.com/v1",
                 api_key: Optional[str] = None, *, temperature: Optional[float] = 0.0,
                 max_tokens: Optional[int] = None, timeout: float = 60, max_retries: int = 3,
                 stop: Optional[Iterable[str]] = (), extra_body: Optional[dict] = None,
                 headers: Optional[dict] = None, opener: Any = None,
                 sleep: Callable[[float], None] = time.sleep,
                 response_schema: Optional[dict] = None, stream: bool = True,
                 on_delta: Optional[Callable[[Optional[str]], None]] = None,
                 early_stop: bool = True, repetition_stop: bool = True,
                 max_request_seconds: float = 600, max_response_bytes: int = 8 * 1024 * 1024,
                 allow_http_key: bool = False, organization: Optional[str] = None,
                 project: Optional[str] = None) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ValueError("no model named: pass model=... or set OPENAI_MODEL")
        for name, value in {"max_retries": max_retries, "timeout": timeout,
                            "temperature": temperature, "max_request_seconds": max_request_seconds,
                            "max_tokens": max_tokens,
                            "max_response_bytes": max_response_bytes}.items():
            # temperature, max_tokens: None is the server's default
            _check_setting(name, value, optional=name in ("temperature", "max_tokens"))
        # base_url: the password as ***
        base_url, self.base_url, self._basic = self._userinfo(base_url)
        try:
            parts = _http_url(base_url.strip() if isinstance(base_url, str) else "")
        except ValueError as exc:
            shown = _scrubbed(repr(base_url), _query_secrets(base_url))
            raise ValueError(f"invalid base URL {shown} ({exc})") from None
        path = parts.path.rstrip("/")   # the chat-completions URL, any query kept after the path
        if not path.endswith("/chat/completions"):
            path += "/chat/completions"
        self.model = model.strip()
        self.url = urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))
        if api_key is not None and not isinstance(api_key, str):
            raise ValueError(f"invalid api_key of type {type(api_key).__name__} (must be a string)")
        # without surrounding whitespace: a key read from a file ends in a newline
        self._api_key = None if api_key is None else api_key.strip() or None
        if self._basic and self._api_key:
            raise ValueError("the base URL holds a user name and password (sent as Basic auth) and "
                             "an API key is set (sent as Bearer): both go in the Authorization "
                             "header; give one")
        self.temperature, self.max_tokens = temperature, max_tokens   # None: left to the server
        self.timeout = timeout               # seconds to connect, and for each byte after the first
        self.max_request_seconds = max_request_seconds   # seconds: a whole request, first byte too
        self.max_response_bytes = max_response_bytes     # a longer answer is refused
        self.max_retries = max_retries       # retries after the first attempt
        # None by default: a server cuts at a stop inside reasoning too (docs/NOTES.md,
        # "The observation")
        self.stop = [stop] if isinstance(stop, str) and stop else list(stop or ())
        self.extra_body, self.headers = dict(extra_body or {}), dict(headers or {})
        self.organization, self.project = organization, project   # sent as the SDK does
        self.response_schema = response_schema   # kept: a per-call schema does not replace it
        self.stream = stream  # server-sent events; a plain JSON answer is read as well
        self.on_delta = on_delta  # called with each new piece of text, None when a retry restarts
        self.early_stop = early_stop  # stop reading once a reply that opens with its action ends it
        self.repetition_stop = repetition_stop   # stop reading a reply that loops ("repetition")
        self.allow_http_key = allow_http_key  # send an environment key over plain http:// anywhere
        self._opener, self._sleep = opener, sleep
        self._start_state()

    @classmethod
    def from_env(cls, **overrides: Any) -> OpenAICompatLLM:
        """Build from OPENAI_BASE_URL, OPENAI_API_KEY, OPENAI_MODEL, OPENAI_ORG_ID,
        OPENAI_PROJECT_ID; overrides win.

        A key from the environment is not sent over plain http:// to a host other than
        loopback unless ``allow_http_key=True``: it may belong to another service.
        Raises ValueError when no model is named or the base URL cannot work.
        """
        env = os.environ
        settings = {"model": env.get("OPENAI_MODEL"), "base_url": env.get("OPENAI_BASE_URL"),
                    "api_key": env.get("OPENAI_API_KEY"),
                    "organization": env.get("OPENAI_ORG_ID") or None,
                    "project": env.get("OPENAI_PROJECT_ID") or None}
        key_from_env = (overrides.get("api_key") is None
                        and bool((settings["api_key"] or "").strip()))
        settings.update({key: value for key, value in overrides.items() if value is not None})
        if not settings["base_url"]:
            settings.pop("base_url")
        if not settings["model"]:
            raise ValueError("no model named: set OPENAI_MODEL or pass --model / model=...")
        llm = cls(**settings)
        if key_from_env:
            llm._guard_env_key()
        return llm

    # A call, what the client keeps between calls, and the models a server serves
    def chat(self, messages: list[dict], *, response_schema: Optional[dict] = None,
             temperature: Optional[float] = None, max_seconds: Optional[float] = None,
             frequency_penalty: Optional[float] = None) -> str:
        """Send the conversation; return the reply text. Raises LLMError, and nothing else, when it
        fails for good.

        The options override the client's settings and ``extra_body`` for this call
        only; a client built with its own ``response_schema`` keeps it. ``max_seconds``
        caps the whole call, retries included.
        """
        self.last_error = None
        # the agent passes what is left of its budget
        if _is_number(max_seconds) and max_seconds <= 0:
            raise LLMError(f"no time left for a model call (max_seconds={max_seconds!r})")
        try:
            _check_setting("max_seconds", max_seconds, optional=True)
        except ValueError as exc:
            raise LLMError(str(exc)) from None
        call_end = time.monotonic() + max_seconds if max_seconds is not None else math.inf
        while True:
            try:
                body = self._body(messages, response_schema, temperature, frequency_penalty)
                return self._keep(self._post(body, call_end))
            except LLMError as exc:
                if not self._adapt(exc, body):
                    exc.args = (self._scrub(str(exc)),)   # its URL may hold a key
                    self.last_error = exc
                    raise
            # anything unforeseen may carry the key: scrub it and say what it was
            except Exception as exc:
                raise LLMError(self._scrub(f"unexpected {type(exc).__name__} while calling "
                                           f"{self.url}: {str(exc)[:300]}")) from None

    def _start_state(self) -> None:
        """What the client learns and keeps while it runs (shared by every thread that uses it)."""
        self._adapted: set = set()  # rows of _ADAPTATIONS: what this server rejected by name
        self._key_withheld = False  # from_env: a key not sent over plain http:// to another host
        self._lock = threading.Lock()  # one client may serve many threads
        self._not_before = 0.0  # time.monotonic() before which no request starts (Retry-After)
        self.usage = {"prompt_tokens": 0, "completion_tokens": 0}

    def _guard_env_key(self) -> None:
        """Withhold a key from the environment from a plain-http host other than loopback, and say
        so once."""
        if (self.allow_http_key or not self._api_key or not self.url.startswith("http://")
            or _is_loopback(self.url)):
            return
        self._key_withheld = True
        _log.warning("not sending OPENAI_API_KEY over plain http:// to %s: a key from the "
                     "environment may belong to another service (pass allow_http_key=True, or "
                     "--allow-http-key, to send it)", self._scrub(self.base_url))

    def __repr__(self) -> str:
        return f"OpenAICompatLLM(model={self.model!r}, base_url={self._scrub(self.base_url)!r})"

    def _served_models(self, max_seconds: Optional[float] = None) -> list:
        """The model ids the server lists at GET /models; LLMError when it does not answer with
        them.

        One attempt, with the key handling, proxy rule, no-redirect opener and
        deadlines of a chat request; the whole answer must come within ``timeout``
        (and ``max_seconds``), since a listing needs no prompt processing.
        """
        url = _models_url(self.url)
        call_end = time.monotonic() + max_seconds if max_seconds is not None else math.inf
        deadline = _Deadline(self.timeout, call_end, url, "timeout")
        shown = self._scrub(url)   # its query may hold a key
        try:
            response = self._open(None, False, deadline)
            try:
                body = _Body(response, deadline, self.max_response_bytes, self.timeout)
                # any BOM dropped
                text = b"".join(iter(body.read, b"")).decode("utf-8-sig", errors="replace")
            finally:
                response.close()
        except _Retryable as exc:
            raise LLMError(self._scrub(str(exc)), exc.status, exc.kind) from None
        except LLMError as exc:
            exc.args = (self._scrub(str(exc)),)
            raise
        # anything unforeseen may carry the key: scrub it and say what it was
        except Exception as exc:
            raise LLMError(f"unexpected {type(exc).__name__} while asking {shown}: "
                           f"{self._scrub(str(exc))[:300]}") from None
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):
            raise self._unreadable("did not answer with JSON (is the base URL right?)", text,
                                   shown) from None
        listed = data.get("data") if isinstance(data, dict) else None
        if not isinstance(listed, list):
            raise self._unreadable("did not answer with a list of models", text, shown)
        return [entry["id"] for entry in listed if isinstance(entry, dict)
                and isinstance(entry.get("id"), str)]

    # The request: adapting it to what the server refused, its body, the post and its retries
    def _adapt(self, exc: LLMError, body: dict) -> bool:
        """Adapt to a refusal of part of what was sent (a row of _ADAPTATIONS); True to try again.

        Some servers refuse ``stream``, ``stream_options``, ``stop`` (then replies are
        cut client-side), a non-default ``temperature``, ``max_tokens`` (renamed to
        ``max_completion_tokens`` when the server asks), ``response_format`` (then
        ``json_object``, then none) or the ``system`` role (then folded into the first
        user message). Each change is made once and remembered, whatever extra_body says.
        True only when the next body differs from the refused one: a body built before
        another thread made the change is tried again, and no body is sent twice.
        """
        if exc.kind is not None:
            return False
        row = _refused(exc.status, str(exc).replace(self.url, ""), body)
        if row is None:
            return False
        with self._lock:
            new = row not in self._adapted
            self._adapted.add(row)
        if new:
            _log.info("the server rejected %s; adapting (once) and trying again", row.rejected)
        return self._adapted_body(dict(body)) != body

    def _body(self, messages: list, response_schema: Optional[dict], temperature: Optional[float],
              frequency_penalty: Optional[float] = None) -> dict:
        body: dict = {"model": self.model, "messages": messages}
        if self.stream:
            body.update(stream=True, stream_options={"include_usage": True})
        for key, value in (("temperature", self.temperature), ("max_tokens", self.max_tokens),
                           ("stop", self.stop)):
            if value is not None and value != []:
                body[key] = value
        body.update(self.extra_body)
        if temperature is not None:             # per-call options win over extra_body
            body["temperature"] = temperature
        if frequency_penalty is not None:
            body["frequency_penalty"] = frequency_penalty
        schema = self.response_schema if self.response_schema is not None else response_schema
        if schema is not None:
            body["response_format"] = {"type": "json_schema",
                                       "json_schema": {"name": "action", "schema": schema}}
        body = self._adapted_body(body)
        if schema is not None and "response_format" in body and "stop" not in self.extra_body:
            # The grammar already ends the reply after the object; a stop sequence could only cut a
            # string that quotes it (a small model copies "[OBSERVATION]" into its thought).
            body.pop("stop", None)
        return body

    def _adapted_body(self, body: dict) -> dict:
        """The body as this server takes it: each row of _ADAPTATIONS adapted to changes it, in
        the table's order."""
        for row in _ADAPTATIONS:
            if row in self._adapted:
                row.instead(body)
        return body

    def _client_stops(self) -> list:
        """The stop strings the client cuts each reply at itself: all of them, once the server
        refused ``stop``."""
        cuts = any(row.cuts_stops and row in self._adapted for row in _ADAPTATIONS)
        return self.stop if cuts else []

    def _post(self, body: dict, call_end: float) -> _Reply:
        data = json.dumps(body).encode("utf-8")
        attempt, held = 0, 0.0
        while True:
            self._wait_for_hold(call_end, held)
            try:
                return self._attempt(data, bool(body.get("stream")),
                                     _Deadline(self.max_request_seconds, call_end,
                                                                              self.url))
            except _Retryable as exc:
                failure = exc
            if attempt == self.max_retries:
                raise LLMError(f"{failure} (gave up after {attempt + 1} attempts)", failure.status,
                               failure.kind)
            delay = (failure.retry_after if failure.retry_after is not None
                     else self._backoff(attempt))
            if time.monotonic() + delay >= call_end:
                raise LLMError(f"{failure} (no time left to retry within max_seconds)",
                               failure.status, failure.kind)
            _log.info("model request failed (%s); retrying in %.1f s", self._scrub(str(failure)),
                      delay)
            # the server's "slow down" holds back every thread of this client
            if failure.retry_after is not None:
                with self._lock:
                    held = time.monotonic() + delay
                    self._not_before = max(self._not_before, held)
            self._sleep(delay)
            attempt += 1
            if self.on_delta is not None:
                self.on_delta(None)             # the reply starts again

    def _wait_for_hold(self, call_end: float, held: float) -> None:
        """Before a request: wait out a Retry-After that any thread of this client was given (held:
        waited already)."""
        with self._lock:
            wait = self._not_before - time.monotonic()
            if wait <= 0 or self._not_before <= held:
                return
        if time.monotonic() + wait >= call_end:
            raise LLMError(f"the server at {self.url} asked to wait {wait:.1f} s (Retry-After), "
                           "past max_seconds")
        self._sleep(wait)

    def _request_headers(self, stream: bool) -> dict:
        headers = {"Content-Type": "application/json", "User-Agent": f"agent.py/{__version__}",
                   "Accept": "text/event-stream, application/json" if stream
                   else "application/json"}
        if self._basic:
            headers["Authorization"] = f"Basic {self._basic}"
        elif self._api_key and not self._key_withheld:
            if _HEADER_CONTROL.search(self._api_key):
                raise LLMError("the API key holds a control character; check how it was read (the "
                               "key is not shown)")
            headers["Authorization"] = f"Bearer {self._api_key}"
        extra = {"OpenAI-Organization": self.organization, "OpenAI-Project": self.project,
                 **self.headers}
        for name, value in extra.items():
            if value is None:
                continue
            value = str(value).strip()
            if _HEADER_CONTROL.search(value):
                raise LLMError(f"header {name!r} holds a control character (its value is "
                               "not shown)")
            headers[name] = value
        return headers

    # One attempt: open the connection, read the answer as events or as JSON
    def _attempt(self, data: bytes, stream: bool, deadline: _Deadline) -> _Reply:
        response = self._open(data, stream, deadline)
        try:
            return self._read_response(response, deadline)
        finally:
            response.close()  # always: after an early stop, a stall, an error or Ctrl-C

    def _open(self, data: Optional[bytes], stream: bool, deadline: _Deadline) -> Any:
        """Send one request (a POST of data, or a GET when None) to deadline.url; the response,
        whose status is 2xx.

        Raises _Retryable or LLMError for what a failure means. Every read is bounded
        by ``timeout`` and the deadline, and no redirect is followed.
        """
        import http.client

        try:
            response, error = _request(deadline.url, deadline, self.timeout, data,
                                       self._request_headers(stream), opener=self._opener)
        except (OSError, http.client.HTTPException) as exc:  # refused, reset, timed out, cut short
            raise self._unreachable(exc, deadline) from None
        if error is not None:
            self._fail(response.code, error.decode("utf-8-sig", errors="replace"),
                       response.headers, deadline.url)
        return response

    def _unreachable(self, exc: Exception, deadline: _Deadline) -> Exception:
        import socket
        import ssl

        reason = getattr(exc, "reason", None) or exc
        if isinstance(reason, ssl.SSLCertVerificationError):  # retrying will not help
            return LLMError(f"the TLS certificate of {deadline.url} could not be verified: "
                            f"{reason}")
        if isinstance(reason, socket.timeout) and deadline.passed():
            return deadline.expired()
        return _Retryable(f"could not reach {deadline.url}: "
                          f"{self._scrub(str(reason)) or type(exc).__name__}",
                          kind="connection_refused" if isinstance(reason, ConnectionRefusedError)
                          else None)

    def _read_response(self, response: Any, deadline: _Deadline) -> _Reply:
        status = getattr(response, "status", None)
        headers = getattr(response, "headers", None) or {}
        # an opener that does not raise for a 3xx
        if isinstance(status, int) and 300 <= status < 400:
            self._fail(status, "", headers)
        length = headers.get("Content-Length")
        if length and length.strip().isdigit() and int(length) > self.max_response_bytes:
            raise LLMError(f"the answer from {self.url} is over "
                           f"max_response_bytes={self.max_response_bytes} ({int(length)} bytes); "
                           "refused")
        body = _Body(response, deadline, self.max_response_bytes, self.timeout)
        first = body.read()
        # enough to tell events from JSON, even a byte at a time
        while first and len(first.lstrip()) < 6 + 3:
            more = body.read()
            if not more:
                break
            first += more
        # some servers open their answer with one
        first = first[3:] if first.startswith(_BOM) else first
        events = "event-stream" in (headers.get("Content-Type") or "")
        if events or first.lstrip().startswith((b"data:", b":", b"event:", b"id:")):
            return self._read_events(body, first)
        chunks = [first]
        chunks.extend(iter(body.read, b""))
        # the BOM is gone
        return self._read_json(b"".join(chunks).decode("utf-8", errors="replace"))

    def _read_events(self, body: _Body, first: bytes) -> _Reply:
        """Read a server-sent event stream until its end, an early stop or a loop."""
        stops = self._client_stops()
        scanner = _ActionScanner() if self.early_stop else None
        state = _StreamState(self.on_delta, scanner, self.repetition_stop, stops)
        events = _EventStream()
        # b"": the end flushes the last event
        for piece in itertools.chain([first], iter(body.read, b""), [b""]):
            for data in events.feed(piece):
                if self._on_event(data, state):
                    return state.reply()
        if not state.ended:
            raise _Retryable(f"the stream from {self.url} ended before the reply did")
        return state.reply()

    def _on_event(self, data: str, state: _StreamState) -> bool:
        """Take one event of the stream into state; True when reading should stop."""
        if data.strip() == "[DONE]":
            state.ended = True
            return True
        try:
            chunk = json.loads(data)
        except (ValueError, RecursionError):
            raise self._unreadable("sent an unreadable event", data) from None
        if not isinstance(chunk, dict):
            raise self._unreadable("sent an event that is not an object", data)
        if chunk.get("error") or chunk.get("object") == "error":   # an error after the 200 went out
            self._fail(None, data)
        state.usage = _reported_usage(chunk.get("usage")) or state.usage
        state.model = chunk["model"] if isinstance(chunk.get("model"), str) else state.model
        choices = chunk.get("choices")
        choice = (choices[0] if isinstance(choices, list) and choices
                  and isinstance(choices[0], dict) else {})
        delta = choice.get("delta") if isinstance(choice.get("delta"), dict) else {}
        state.reasoning.append(_reasoning_of(delta))
        stop = state.add(_text_of(delta.get("content")))
        finish = choice.get("finish_reason")
        if isinstance(finish, str) and state.finish_reason != "repetition":
            state.ended = True
            # the action ended the reply anyway:
            if stop and state.stopped_early and not state.dropped:
                state.stopped_early = stop = False                   # read on for the usage chunk
            if not stop:
                state.finish_reason = finish
        return stop

    def _read_json(self, text: str) -> _Reply:
        """Read a whole chat-completion body; LLMError for any shape that holds no reply."""
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):
            raise self._unreadable("did not answer with JSON (is the base URL right?)",
                                   text) from None
        if isinstance(data, dict) and (data.get("error") or data.get("object") == "error"):
            self._fail(None, text)
        choices = data.get("choices") if isinstance(data, dict) else None
        choice = choices[0] if isinstance(choices, list) and choices else None
        if not isinstance(choice, dict):
            raise self._unreadable("answered without choices", text)
        message = choice.get("message")
        message = {} if message is None else message      # content: null reads as ""
        if not isinstance(message, dict):
            raise self._unreadable("answered with a message that is not an object", text)
        finish = choice.get("finish_reason")
        return _Reply(_text_of(message.get("content")), _reasoning_of(message),
                      finish if isinstance(finish, str) else None,
                      _reported_usage(data.get("usage")),
                      model=data["model"] if isinstance(data.get("model"), str) else None)

    # What failed, said without a secret; the reply kept
    def _unreadable(self, problem: str, text: str, url: Optional[str] = None) -> LLMError:
        """The error for an answer that holds no reply, quoting its start, scrubbed."""
        return LLMError(f"{url or self.url} {problem}: {_quoted_body(text, self._scrub)}")

    def _fail(self, status: Optional[int], text: str, headers: Any = None,
              url: Optional[str] = None) -> None:
        """Raise what a server's error means: _Retryable when another attempt may help, else
        LLMError."""
        # the server's own message (OpenAI, vLLM, llama.cpp) and its error object ({} if none);
        # the message is scrubbed after decoding (an escaped key decodes to the plain key) and
        # before it is cut
        text = text.strip()
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):
            message, details = _quoted_body(text, self._scrub), {}
        else:
            error = data.get("error", data) if isinstance(data, dict) else data
            details = error if isinstance(error, dict) else {}
            message = ((details.get("message") or details.get("detail") or error) if details
                       else error)
            message = self._scrub(message if isinstance(message, str)
                                  else json.dumps(message))[:300]
        if not status:       # the HTTP status an error object inside a 200 answer stands for
            code = details.get("code")
            status = code if _is_int(code) and 400 <= code <= 599 else (
                500 if details.get("type") == "server_error" else None)
        url = url or self.url
        where = f"HTTP {status} from {url}" if status else f"{url} returned an error"
        if (self._CONTEXT_OVERFLOW.search(message)
                or details.get("type") == "exceed_context_size_error"):
            counts = []     # n_ctx, n_prompt_tokens: each None when not reported
            for key, pattern in (("n_ctx", self._N_CTX), ("n_prompt_tokens", self._N_PROMPT)):
                value, match = details.get(key), pattern.search(message)
                if not _is_int(value):
                    value = next((int(group) for group in match.groups() if group),
                                 None) if match else None
                counts.append(value)
            raise LLMError(f"{where}: {message} (the conversation does not fit the model's "
                           "context window)", status, kind="context_overflow", n_ctx=counts[0],
                           n_prompt_tokens=counts[1])
        if status is not None and 300 <= status < 400:
            location = self._scrub(str(headers.get("Location") if headers else None))
            raise LLMError(f"HTTP {status} from {url}: redirected to {location} (agent.py follows "
                           "no redirect, which would carry the API key elsewhere; fix the "
                           "base URL)", status)
        # a refusal that an adaptation answers is not retried as it is
        if status in self._RETRY_STATUSES and _refused(status, message) is None:
            retry_after = self._retry_after(headers.get("Retry-After") if headers else None)
            raise _Retryable(f"{where}: {message}", status, retry_after)
        raise LLMError(f"{where}: {message}" + (f" ({self._hint(status, message)})" if status
                                                else ""), status)

    def _hint(self, status: int, message: str) -> str:
        if status == 401 and self._key_withheld:
            return ("OPENAI_API_KEY was not sent over plain http:// to this host; pass "
                    "allow_http_key=True (CLI --allow-http-key) to send it")
        if status == 404 and _names_model(message, self.model):
            return f"unknown model {self.model!r}: check the model name"
        return self._STATUS_HINTS.get(status, "the request was refused")

    def _keep(self, reply: _Reply) -> str:
        """Record what the call left behind (per thread), add its usage to the total; return the
        text."""
        text = reply.text
        for stop in self._client_stops():
            text = text.split(stop, 1)[0]
        self.last_finish_reason, self.last_stopped_early = reply.finish_reason, reply.stopped_early
        self.last_reasoning, self.last_usage = reply.reasoning or None, reply.usage
        self.last_model = reply.model
        if reply.usage is not None:
            with self._lock:
                for key in self.usage:
                    self.usage[key] += reply.usage[key]
        return text

    def _scrub(self, text: str) -> str:
        """text without the API key, the base URL's password or query values (a key may be passed
        as ``?key=…``), nor a header's credential: every quote of server text, and every error
        that shows the URL."""
        secrets = [self._api_key,
                   *(_basic_secrets(self._basic) + [self._basic] if self._basic else [])]
        return _scrubbed(text, secrets + _query_secrets(self.url) + _header_secrets(self.headers))

    # The patterns an error is read with, retry timing, the base URL's credential

    # a context overflow in llama.cpp's, OpenAI's, vLLM's (two wordings) and Anthropic-style
    # proxies' words, and the counts it reports
    _CONTEXT_OVERFLOW = re.compile(
        r"exceeds? the available context size|maximum context length|context length exceeded"
        r"|longer than the maximum model length|prompt is too long", re.I)
    _N_CTX = re.compile(r"maximum context length is (\d+)|available context size \((\d+)"
                        r"|maximum model length of (\d+)")
    _N_PROMPT = re.compile(r"request \((\d+) tokens\)|resulted in (\d+) tokens"
                           r"|(\d+) in the messages|has (\d+) input tokens|prompt \(length (\d+)\)")
    _MAX_RETRY_AFTER = 60.0     # seconds; a longer Retry-After is capped

    @staticmethod
    def _backoff(attempt: int) -> float:
        """Seconds before retry number attempt+1: exponential (0.5 s doubling, capped at 30 s),
        half of it jitter."""
        base = min(30.0, 0.5 * 2 ** attempt)
        return base / 2 + random.uniform(0, base / 2)

    @staticmethod
    def _retry_after(value: Any) -> Optional[float]:
        """Seconds to wait from a Retry-After header (seconds or an HTTP date), capped; None when
        unreadable."""
        if not value:
            return None
        try:
            seconds = float(value)
        except ValueError:
            import email.utils

            try:
                seconds = email.utils.parsedate_to_datetime(value).timestamp() - time.time()
            except (TypeError, ValueError, IndexError, OverflowError):
                return None
        if not math.isfinite(seconds):
            return None
        return min(max(seconds, 0.0), OpenAICompatLLM._MAX_RETRY_AFTER)

    @staticmethod
    def _userinfo(base_url: Any) -> tuple:
        """(the base URL without a user name and password, the URL as shown, the Basic credential or
        None).

        A user name and password in the URL (``http://alice:S3cret@host/v1``) are sent as
        Basic auth, as curl does: urllib would send nothing. The URL as shown has the
        password as ``***``. Read by hand, so that no parse error can quote the password.
        """
        if not isinstance(base_url, str) or "://" not in base_url:
            return base_url, base_url, None
        scheme, _, rest = base_url.strip().partition("://")
        end = min((at for at in map(rest.find, "/?#") if at >= 0), default=len(rest))
        userinfo, at, host = rest[:end].rpartition("@")
        if not at:
            return base_url, base_url, None
        import base64
        from urllib.parse import unquote

        user, colon, password = userinfo.partition(":")
        shown = f"{scheme}://{user}{':***' if colon else ''}@{host}{rest[end:]}"
        credential = base64.b64encode(f"{unquote(user)}:{unquote(password)}".encode())
        credential = credential.decode("ascii")
        return f"{scheme}://{host}{rest[end:]}", shown, credential



# -- Models, the client's helpers: what a request sends and what an answer means -------

# http.client refuses these, quoting the whole header value
_HEADER_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_BOM = b"\xef\xbb\xbf"         # UTF-8's byte-order mark, which a few servers send before an answer



def _models_url(chat_url: str) -> str:
    """The GET /models URL beside a chat-completions URL, any query kept."""
    parts = urlsplit(chat_url)
    return urlunsplit(parts._replace(path=parts.path[:-len("/chat/completions")] + "/models"))


def _quoted_body(text: str, scrub: Callable[[str], str]) -> str:
    """A body that holds no message of its own, as an error quotes it: scrubbed, its start, on one
    line."""
    text = text.strip()
    return repr(scrub(text)[:200]) if text else "(empty body)"


def _scrubbed(text: str, secrets: Iterable[Optional[str]]) -> str:
    """text with every secret shown as ``***``: the one scrubber, for keys, passwords and header
    credentials.

    A run of 8 or more characters that starts or ends a secret is hidden too (a
    server that echoes all but the last 4 characters of a key). A server may echo a
    secret escaped (``\\u0073k-...``, PHP's ``\\/``, ``%2F`` in a Location, escaped
    twice): when an unescaped reading of the text holds one, that reading is shown,
    scrubbed. Secrets shorter than 8 characters are placeholders (``"x"``, ``"none"``)
    and are left alone: scrubbing them would mangle every message.

    >>> _scrubbed("bad key sk-abcdefghij12345678 (sk-abcdefghij1234...)", ["sk-abcdefghij12345678"])
    'bad key *** (***...)'
    """
    size = 8
    secrets = [secret for secret in secrets if isinstance(secret, str) and len(secret) >= size]
    readings = [text]
    # an escape escaped again (\\u005cu0073, %252F) takes another pass
    for _ in range(3 if secrets else 0):
        # JSON's \uXXXX and \/ escapes and URL percent-escapes decoded, so an escaped secret shows
        readings.append(re.sub(r"\\u([0-9a-fA-F]{4})|\\(/)|%([0-9a-fA-F]{2})",
                               lambda m: m.group(2) or chr(int(m.group(1) or m.group(3), 16)),
                               readings[-1]))
    for reading in reversed(readings):
        spans = []      # (start, end) of each run of the reading that is a secret, or part of one
        for secret in secrets:
            at = reading.find(secret[:size])
            while at >= 0:  # from a match of its first characters, as far as it goes on
                end = at + size
                while (end < len(reading) and end - at < len(secret)
                       and reading[end] == secret[end - at]):
                    end += 1
                spans.append((at, end))
                at = reading.find(secret[:size], at + 1)
            end = reading.find(secret[-size:]) + size
            while end >= size:  # from a match of its last characters, as far back as it goes
                start = end - size
                while (start > 0 and end - start < len(secret)
                       and reading[start - 1] == secret[-(end - start) - 1]):
                    start -= 1
                spans.append((start, end))
                end = reading.find(secret[-size:], end - size + 1) + size
        if spans:
            shown, end = [], 0
            for start, stop in sorted(spans):       # overlapping spans merge into one ***
                if start > end or not shown:
                    shown += [reading[end:start], "***"]
                end = max(end, stop)
            return "".join(shown) + reading[end:]
    return text


_CREDENTIAL_HEADER = re.compile(
    r"auth|key|token|secret|cookie|password|session|signature|bearer"
    # whole words only, so that PATH, PWD (the directory), BYPASS and PGPASSFILE are no secrets:
    # PGPASS, DB_PASSWD, MYSQL_PWD, GH_PAT, CREDENTIALS, --creds, and the flag -t
    r"|(?<![a-z])(?:pg)?pass(?:wd|phrase)?(?![a-z])|[_-]pwd(?![a-z])"
    r"|(?<![a-z])(?:pat|creds?|credentials?)(?![a-z])|^-t$", re.I)


def _header_secrets(headers: dict) -> list:
    """The secrets in request headers, for ``_scrubbed``: every value, and the parts of a
    credential.

    A header that can carry a credential (Authorization, Proxy-Authorization, api-key,
    x-api-key, a cookie, any ``*-token``) also gives each part of its value (the token
    after ``Bearer``/``Basic``/``Token``, a cookie's values) and what a Basic credential
    decodes to (``user:password``, the password).
    """
    secrets = []
    for name, value in headers.items():
        if value is None:
            continue
        secrets.append(str(value).strip())
        if _CREDENTIAL_HEADER.search(str(name)):
            # "Bearer <token>", "a=<value>; b=<value>"
            for part in re.split(r"[\s,;]+", str(value)):
                secrets += [part, part.partition("=")[2], *_basic_secrets(part)]  # a cookie's value
    return secrets


def _query_secrets(url: Any) -> list:
    """The values of a URL's query, for ``_scrubbed``: as written and decoded, and a part with no
    "=" whole (a key may be passed as ``?key=…``, ``?api-key=…`` or ``?TOKEN``).

    >>> _query_secrets("http://h/v1?key=abc+def%C3%A9&TOKEN#x")
    ['abc+def%C3%A9', 'abc defé', 'TOKEN']
    """
    query = url.partition("?")[2].partition("#")[0] if isinstance(url, str) else ""
    secrets = []
    for part in re.split("[&;]", query):
        name, equals, value = part.partition("=")
        raw = value if equals else name
        secrets += [raw, unquote(raw.replace("+", " "))] if raw else []
    return list(dict.fromkeys(secrets))


def _basic_secrets(credential: str) -> list:
    """``user:password`` and the password a Basic credential decodes to; [] when it is not one."""
    import base64
    import binascii

    try:
        decoded = base64.b64decode(credential, validate=True).decode("utf-8")
    except (binascii.Error, ValueError):    # not base64, or not text
        return []
    return [decoded, decoded.partition(":")[2]] if ":" in decoded else []


def _names_model(message: str, model: Any) -> bool:
    """Whether a server's message names the model as a whole word: model "m" is not named by "not
    found"."""
    if not isinstance(model, str) or not model:
        return False
    # Not inside a longer name: no name character may touch it, nor a "." or ":" that goes on
    # ("name3" is not in "name3.1" or "name3:latest", but is in "name3." ending a sentence).
    return re.search(rf"(?<![\w.:/-]){re.escape(model)}(?![\w/-]|[.:][\w/-])", message) is not None






def _text_of(content: Any) -> str:
    """Message content as text: a string, or the text parts of a list; anything else reads as ""."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part["text"] for part in content if isinstance(part, dict)
                       and isinstance(part.get("text"), str))
    return ""


def _reasoning_of(message: dict) -> str:
    """A separate reasoning field of a message or delta (vLLM, llama.cpp, DeepSeek, Ollama), or
    ""."""
    for key in ("reasoning_content", "reasoning"):
        if isinstance(message.get(key), str):
            return message[key]
    return ""


def _reported_usage(usage: Any) -> Optional[dict]:
    """prompt_tokens and completion_tokens from a usage object; None when it reports neither.

    A count that is not a whole number from 0 to 10**9 (a float, a bool, a
    negative, a number thousands of digits long) is not a count any server can mean: it
    reads as 0.
    """
    if not isinstance(usage, dict):
        return None
    counts = {key: usage.get(key) for key in ("prompt_tokens", "completion_tokens")}
    counts = {key: v if _is_int(v) and 0 <= v <= 10 ** 9 else None for key,
              v in counts.items()}
    if all(v is None for v in counts.values()):
        return None
    return {key: v or 0 for key, v in counts.items()}


# -- Models, adaptations to a server (skip on first read) ------------------------------
# the table of what a server may refuse by name, and what every later request does instead

@dataclass(frozen=True)
class _Adaptation:
    """A part of the request that a server may reject by name, how its refusal reads, and what
    every later request does instead (internal)."""

    rejected: str                       # what the server rejected, as the log names it
    key: str                            # the body's key it is about
    # the server's message (without the URL) names it; None: the key in quotes ('stop', "stream",
    # `temperature`), since bare, the word is common
    refusal: Optional[re.Pattern] = None
    # the refused body held it, so the refusal is about that body; None: the body holds the key
    holds: Optional[Callable[[dict], bool]] = None
    # changes a body, in place, to do without it; None: the body drops ``dropped``, or the key
    change: Optional[Callable[[dict], None]] = None
    dropped: tuple = ()
    statuses: tuple = (400, 422)        # the HTTP statuses such a refusal comes with
    cuts_stops: bool = False            # the client cuts each reply at its stop strings itself

    def refused(self, message: str) -> bool:
        refusal = self.refusal or re.compile(rf"['\"`]{self.key}['\"`]")
        return refusal.search(message) is not None

    def held(self, body: dict) -> bool:
        return self.holds(body) if self.holds is not None else self.key in body

    def instead(self, body: dict) -> None:
        if self.change is not None:
            self.change(body)
        for key in self.dropped or (() if self.change else (self.key,)):
            body.pop(key, None)


def _fold_system(body: dict) -> None:
    """Fold the system messages into the first user message, for chat templates without a system
    role."""
    messages = body["messages"]
    system = "\n\n".join(m["content"] for m in messages if m.get("role") == "system"
                         and m.get("content"))
    rest = [dict(m) for m in messages if m.get("role") != "system"]
    for message in rest:
        if message.get("role") == "user":
            message["content"] = (f"{system}\n\n{message.get('content') or ''}" if system
                                  else message.get("content"))
            body["messages"] = rest
            return
    body["messages"] = [{"role": "user", "content": system}] + rest


_FORMAT_REJECTED = re.compile(r"response_format|json_schema|json_object", re.I)
# Every adaptation to a server, in the order a refusal is matched: the first row whose refusal the
# message shows, about a part the refused body held, is adapted to once and remembered; every
# later body then does without that part, whatever extra_body says.
_ADAPTATIONS = (
    _Adaptation("stream_options", "stream_options", re.compile(r"\bstream_options\b")),
    _Adaptation("stream", "stream", dropped=("stream", "stream_options")),
    _Adaptation("stop", "stop", cuts_stops=True),
    _Adaptation("temperature", "temperature"),
    # "'max_tokens' is not supported ... Use 'max_completion_tokens' instead"
    _Adaptation("max_tokens (renamed max_completion_tokens)", "max_tokens",
                re.compile(r"(?s)^(?=.*max_completion_tokens).*['\"`]max_tokens['\"`]"),
                change=lambda body: body.update(max_completion_tokens=body.pop("max_tokens"))
                if "max_tokens" in body else None),
    _Adaptation("max_tokens", "max_tokens"),
    _Adaptation("frequency_penalty", "frequency_penalty", re.compile(r"\bfrequency_penalty\b")),
    # first json_schema falls back to json_object, then any format to none
    _Adaptation("response_format json_schema", "response_format", _FORMAT_REJECTED,
                lambda body: isinstance(body.get("response_format"), dict)
                and body["response_format"].get("type") == "json_schema",
                lambda body: body.update(response_format={"type": "json_object"})
                if "response_format" in body else None),
    _Adaptation("response_format", "response_format", _FORMAT_REJECTED),
    # a chat template without a system role: often llama.cpp's 500 "Jinja exception", or "roles
    # must alternate" (docs/NOTES.md, "The client")
    _Adaptation("the system role", "messages", re.compile(
        r"system[ _](?:role|message|prompt)s?\b[^.]{0,40}\b"
        r"(?:not supported|unsupported|not allowed)"
        r"|roles must alternate|(?:not supported|unsupported|invalid)\b[^.]{0,20}\brole[ "
        r":'\"`]+system\b", re.I),
                lambda body: any(isinstance(m, dict) and m.get("role") == "system"
                                 for m in body["messages"]),
                _fold_system, statuses=(400, 422, 500)),
)


def _refused(status: Optional[int], message: str, body: Optional[dict] = None
             ) -> Optional[_Adaptation]:
    """The row of _ADAPTATIONS a refusal asks for (with body: about a part that body held), or
    None."""
    return next((row for row in _ADAPTATIONS if status in row.statuses
                 and row.refused(message) and (body is None or row.held(body))), None)


# -- Models, reading a streamed reply (skip on first read) -----------------------------
# what one request brought back, and a streamed reply as its pieces arrive

@dataclass
class _Reply:
    """What one request brought back (internal)."""

    text: str = ""
    reasoning: str = ""
    finish_reason: Optional[str] = None
    usage: Optional[dict] = None
    stopped_early: bool = False
    model: Optional[str] = None       # the model the server says answered


class _StreamState:
    """A streamed reply as its pieces arrive: the text, where to stop reading, what the server
    reported (internal)."""

    def __init__(self, on_delta: Optional[Callable], scanner: Any, repetition: bool,
                 stops: list) -> None:
        self.pieces: list = []
        self.chars = 0
        self.tail = ""  # the last characters of the reply: all the loop check looks at
        self.reasoning: list = []
        self.finish_reason: Optional[str] = None
        self.usage: Optional[dict] = None
        self.ended = False              # [DONE] or a finish_reason came: the stream ended cleanly
        self.stopped_early = False
        self.dropped = 0                # characters after the action's end, left out of the reply
        self.model: Optional[str] = None   # the model a chunk names
        self._on_delta, self._scanner = on_delta, scanner
        self._repetition, self._stops = repetition, stops

    def add(self, piece: str) -> bool:
        """Take the next piece of the reply; True when reading should stop here."""
        if not piece:
            return False
        cut = self._scanner.feed(piece) if self._scanner is not None else None
        if cut is None and self._scanner is not None and self._scanner.too_deep:
            # the parser refuses such a reply whatever follows, and a looping model nests on for
            # minutes (docs/NOTES.md, "Streaming"). (A mismatched bracket is read on: it may be a
            # draft in reasoning whose <think> the server dropped, which a later </think> ends.)
            cut = self._scanner.broken_at
        # the first action just closed or nested too deep: the rest is not needed
        if cut is not None:
            self.dropped = len(piece) - max(0, cut - self.chars)
            piece = piece[:max(0, cut - self.chars)]
            self.stopped_early, self.finish_reason = True, "stop"
        self.pieces.append(piece)
        self.chars += len(piece)
        self.tail = (self.tail + piece)[-_REPEAT_WINDOW:]
        if self._on_delta is not None and piece:
            self._on_delta(piece)
        if cut is None and self._repetition and _repeating_tail(self.tail):
            self.finish_reason = "repetition"
            return True
        if cut is None and any(stop in self.tail for stop in self._stops):
            # a stop sequence the server would not take: cut client-side
            self.finish_reason = "stop"
            return True
        return cut is not None

    def reply(self) -> _Reply:
        # a reply cut early never saw the usage chunk
        usage = None if self.stopped_early else self.usage
        return _Reply("".join(self.pieces), "".join(self.reasoning), self.finish_reason, usage,
                      self.stopped_early, self.model)


# -- Models, replaying a trace (skip on first read) ------------------------------------
# the records of a saved run, read by MockLLM.from_trace; _json_lines also reads batch results

def _trace_records(path: str) -> list:
    """The records of a trace (JSON Lines) or a saved result (one JSON value, a UTF-8 BOM allowed),
    read in one pass: when not one line is JSON, the file is one value over many lines.

    A trace's last line cut short (a write that failed half-way) is left out, with a warning;
    ValueError for any other line that is not JSON.
    """
    with open(path, "rb") as handle:
        data = handle.read()
    records: list = []
    end, problem = 0, None
    for end, number, value in _json_lines(io.BytesIO(data)):  # noqa: B007 (read after)
        if isinstance(value, ValueError):
            problem = f"line {number}: {value}"
            break
        records.append(value)
    if not records:
        try:
            records, problem = [json.loads(data.decode("utf-8-sig", "replace"))], None
        except RecursionError:  # nested too deeply for the json module
            problem = "nested too deeply"
        except ValueError:
            problem = problem or ("its one line is cut short" if data[end:].strip() else None)
    elif problem is None and data[end:].strip():
        _log.warning("%s: its last line is cut short (%d bytes, no end): left out", path,
                     len(data) - end)
    if problem is not None:
        raise ValueError(f"{path} is neither a saved result (JSON) nor a trace (JSON Lines): "
                         f"{problem}")
    return records


def _json_lines(handle: Any) -> Iterable[tuple]:
    """Each non-blank line of a JSON Lines file open in binary mode: (the offset it ends at, its
    number, its value, or the ValueError that says why it is not JSON).

    A last line without its line break is whole when it is JSON, else a write cut short, left out:
    the one reader of traces (replay) and of batch results files.
    """
    end = 0
    for number, line in enumerate(handle, 1):
        end += len(line)
        if not line.strip():
            continue
        try:
            # not splitlines: U+2028 is text; a BOM may start the file
            value = json.loads(line.decode("utf-8-sig" if number == 1 else "utf-8", "replace"))
        except (ValueError, RecursionError) as exc:
            if not line.endswith(b"\n"):
                return
            value = exc if isinstance(exc, ValueError) else ValueError("nested too deeply")
        yield end, number, value


def _record_steps(record: Any) -> list:
    """The steps one record holds: a saved result's, or the step a trace line is."""
    if isinstance(record, dict) and isinstance(record.get("steps"), list):
        return record["steps"]
    if isinstance(record, dict) and record.get("event") == "step":
        return [record]
    return []


# -- MCP -------------------------------------------------------------------------------
# ToolRegistry.add_mcp: an MCP server's tools as ordinary Tools, over stdio (a command) or
# Streamable HTTP (a URL); one connection per server, shared by every caller, a reader routing
# answers by id

_MCP_DEFAULT_TIMEOUT = 30.0   # seconds per request when neither add_mcp nor the registry sets one


def _add_mcp(registry: ToolRegistry, server: Any, *, name: Optional[str] = None,
             env: Optional[dict] = None, cwd: Any = None, tools: Optional[Iterable[str]] = None,
             timeout: Optional[float] = None, headers: Optional[dict] = None,
             missing_ok: bool = False, config_name: Optional[str] = None) -> list:
    """Connect, list the tools, register the chosen ones that can be; the names the server offers.

    ``config_name`` (the server's name in --mcp-config) names it in messages and prefixes a tool
    whose name is taken. A tool that cannot be registered is left out: ``registry.left_out`` and a
    warning say why. ToolError (and nothing registered, the server stopped) for a server that cannot
    be started or reached or answers wrongly, a name in ``tools`` the server lacks (unless
    ``missing_ok``) or left out, or a name already taken.
    """
    _check_setting("timeout", timeout, optional=True)
    if name is not None:
        _check_tool_name(name)
    seconds = timeout if timeout is not None else registry.default_timeout or _MCP_DEFAULT_TIMEOUT
    wanted = None if tools is None else [tools] if isinstance(tools, str) else list(tools)
    session = _McpSession(_mcp_transport(server, env, cwd, headers, name or config_name), seconds)
    registered: list = []
    try:
        session.open()
        specs = session.list_tools()
        if wanted is not None:
            offered = [spec["name"] for spec in specs]
            missing = [tool for tool in wanted if tool not in offered]
            if missing and not missing_ok:
                raise ToolError(f"MCP server {session.label} has no tool {missing[0]!r} (it has: "
                                f"{', '.join(offered) or 'none'})")
            specs = [spec for spec in specs if spec["name"] in wanted]
        built, left_out = _mcp_built(session, specs, name, seconds)
        refused = next((tool for tool in wanted or [] if tool in left_out), None)
        if refused is not None:
            raise ToolError(f"MCP server {session.label}: tool {refused!r} was left out: "
                            f"{left_out[refused]}")
        for remote, tool in built:
            if tool.name in registry and config_name is not None:
                renamed = replace(tool, name=_mcp_local_name(config_name, remote))
                _log.warning("MCP server %s: tool %r is registered as %r (an earlier tool has its "
                             "name)", session.label, remote, renamed.name)
                tool = renamed
            if tool.name in registry:
                raise ToolError(f"MCP server {session.label}: the tool name {tool.name!r} is "
                                "taken; give the server a prefix with name=... (CLI: name the "
                                "servers in --mcp-config, and a tool whose name is taken is "
                                "registered as NAME_tool)")
            registry.register(tool)
            registered.append(tool.name)
    except BaseException as exc:
        for tool in registered:               # nothing stays half-registered
            registry._tools.pop(tool, None)
        session.close()
        if isinstance(exc, Exception) and not isinstance(exc, AgentError):
            # an answer of a shape no check foresaw: still the server's doing, not a crash
            raise ToolError(f"MCP server {session.label} could not be added: "
                            f"{type(exc).__name__}: {session.scrub(_text(exc))[:300]}") from None
        raise
    registry._servers.append(session)
    if left_out:
        registry.left_out.update({(f"{name}_{remote}" if name else remote): why
                                  for remote, why in left_out.items()})
        # one line, however many: registry.left_out holds them all
        _log.warning("MCP server %s: %d of its %d tools left out: %s", session.label,
                     len(left_out), len(specs),
                     _cut("; ".join(f"{remote!r} ({why})" for remote, why in left_out.items()),
                          2000))
    return [spec["name"] for spec in specs]


def _mcp_built(session: _McpSession, specs: list, prefix: Optional[str], seconds: float) -> tuple:
    """The listed tools as [(its name on the server, Tool)], and {name: why} of those left out:
    a schema that cannot be enforced, a name that is not valid or is another tool's.

    A Tool has a short description, the schema without annotations, and asks to confirm when the
    server marks it destructive.
    """
    built: list = []
    left_out: dict = {}
    for spec in specs:
        remote = spec["name"]
        schema = spec.get("inputSchema")
        if not remote:
            left_out[remote] = "its name is empty"
            continue
        if not isinstance(schema, dict) or schema.get("type") != "object":
            left_out[remote] = "it has no inputSchema of \"type\": \"object\""
            continue
        annotations = spec.get("annotations") if isinstance(spec.get("annotations"), dict) else {}
        local = _mcp_local_name(prefix, remote)
        # the description's first paragraph, or its first sentence when that paragraph is over 300
        # characters
        description = spec.get("description")
        summary = ""
        if isinstance(description, str):
            summary = " ".join(re.split(r"\n\s*\n", description.strip(), maxsplit=1)[0].split())
            if len(summary) > 300:
                summary = re.split(r"(?<=[.!?])\s", summary, maxsplit=1)[0][:300]
        try:
            tool = Tool(local, summary or remote, _listed(schema, False),
                        _mcp_caller(session, remote, seconds),
                        seconds + _McpSession.GRACE_SECONDS,
                        annotations.get("destructiveHint") is True)
        except ToolError as exc:
            why = str(exc).replace(f"tool {local!r}: ", "", 1)
            left_out[remote] = _cut(f"its inputSchema cannot be enforced: {why}", 500)
            continue
        if any(tool.name == other.name for _, other in built):
            left_out[remote] = f"its name as a tool, {tool.name!r}, is that of another of its tools"
        else:
            built.append((remote, tool))
    return built, left_out


def _mcp_local_name(prefix: Optional[str], remote: str) -> str:
    """The name a server's tool is registered under: prefixed, made of valid characters, cut to
    64."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", f"{prefix}_{remote}" if prefix else remote)[:64]


def _mcp_caller(session: _McpSession, remote: str, seconds: float) -> Callable[..., str]:
    """The function a Tool runs: one tools/call; every failure raises _ToolFailed with the ERROR
    text the model reads."""
    def call(**arguments: Any) -> str:
        try:
            result = session.request("tools/call",
                                     {"name": remote, "arguments": arguments}, seconds)
        except _McpRpcError as exc:
            raise _ToolFailed(_MCP_REFUSED.format(tool=remote, text=_mcp_sentence(exc))) from None
        except _McpTimeout:
            raise _ToolFailed(_MCP_NO_ANSWER.format(tool=remote, seconds=seconds)) from None
        except _McpFailure as exc:
            raise _ToolFailed(_MCP_FAILED.format(tool=remote, text=_mcp_sentence(exc))) from None
        # what the model reads: text joined, other content as one line each
        if result.get("resultType") == "input_required":
            raise _ToolFailed(_MCP_INPUT_REQUIRED.format(tool=remote))
        blocks = result.get("content") if isinstance(result.get("content"), list) else []
        texts = [block["text"] for block in blocks if isinstance(block, dict)
                 and block.get("type") == "text"
                 and isinstance(block.get("text"), str)]
        others = [_mcp_block(block) for block in blocks
                  if not (isinstance(block, dict) and block.get("type") == "text")]
        if not texts and "structuredContent" in result:
            texts = [json.dumps(result["structuredContent"], ensure_ascii=False, default=str)]
        text = "\n".join(texts + others)
        if result.get("isError") is True:
            raise _ToolFailed(_MCP_IS_ERROR.format(tool=remote,
                                                   text=_mcp_sentence(text or _MCP_NO_TEXT)))
        return text or _MCP_NOTHING

    call.__name__ = call.__qualname__ = re.sub(r"\W", "_", remote) or "mcp_tool"
    return call


def _mcp_sentence(value: Any) -> str:
    text = " ".join(_text(value).split()) or "(no message)"
    return text if text.endswith((".", "!", "?")) else text + "."


def _mcp_block(block: Any) -> str:
    """One non-text content block as a line: a text model cannot see an image, so it is told what
    there was."""
    if not isinstance(block, dict):
        return f"[content that is not an object: {_shown(block)}]"
    kind = block.get("type")
    if kind in ("image", "audio"):
        size = len(block["data"]) * 3 // 4 if isinstance(block.get("data"), str) else 0
        return (f"[{kind}: {block.get('mimeType') or 'unknown type'}, about {size:,} bytes, "
                "not shown]")
    if kind == "resource_link":
        title = f"{block.get('name')}: " if block.get("name") else ""
        return f"[resource link: {title}{block.get('uri')}]"
    if kind == "resource":
        resource = block.get("resource") if isinstance(block.get("resource"), dict) else {}
        if isinstance(resource.get("text"), str):
            return resource["text"]
        size = len(resource["blob"]) * 3 // 4 if isinstance(resource.get("blob"), str) else 0
        return (f"[resource {resource.get('uri')}: {resource.get('mimeType') or 'binary'}, about "
                f"{size:,} bytes]")
    return f"[{_text(kind)} content, not shown]"


class _McpFailure(Exception):
    """An MCP request failed: the connection is gone, or the answer cannot be read (internal); the
    message says why."""


class _McpRpcError(_McpFailure):
    """The server answered a request with a JSON-RPC error (internal): ``code`` and ``data`` are its
    own."""

    def __init__(self, message: str, code: Any = None, data: Any = None) -> None:
        super().__init__(message)
        self.code, self.data = code, data


class _McpTimeout(_McpFailure):
    """No answer within the request's time (internal)."""


class _McpGone(_McpFailure):
    """The connection cannot carry a request: the server exited, cannot be reached, or was closed
    (internal)."""


class _McpSession:
    """One connection to an MCP server: ids, the answers routed to their callers, the protocol era
    (internal).

    A transport (_McpStdio, _McpHttp) sends a message and hands every message that arrives to
    ``deliver``, from its reader thread or from the caller's. Each caller waits on its own queue, so
        a hung request times out alone.
    """

    VERSION = "2026-07-28"  # the current revision: no handshake, every request carries _meta
    # the handshake era (initialize, notifications/initialized), which most servers speak
    OLD_VERSION = "2025-11-25"
    OLD_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
    # a modern server's answer to a version it does not speak: still a modern server
    UNSUPPORTED_VERSION = -32022
    META = "io.modelcontextprotocol/"
    CLIENT = {"name": "agent.py", "version": __version__}
    # a tool's limit in the registry is its request's, plus this: the request ends first
    GRACE_SECONDS = 1.0
    # one message (a stdio line, an HTTP body); a larger one ends the connection
    MAX_MESSAGE_BYTES = 32 * 2**20
    # replies to a server's requests sent in a row when each reply's answer holds another request
    CHAINED_REPLIES = 10

    def __init__(self, transport: Any, seconds: float) -> None:
        self.transport, self.seconds, self.label = transport, seconds, transport.label
        # the verdict of open(): True for self.VERSION (no handshake), False for the older ones
        self.modern = False
        self.version: Optional[str] = None
        self._lock = threading.Lock()
        self._pending: dict = {}            # id -> the queue of the caller waiting for that answer
        self._ids = itertools.count(1)
        # replies to the server's own requests that this thread is sending, see _answer_server
        self._replying = threading.local()
        transport.session = self

    def scrub(self, text: str) -> str:
        """text with the server's secrets (its headers, env=, tokens in its command or URL) as
        ``***``: every text the server sends passes here before a message, the model or a log."""
        return _scrubbed(text, self.transport.secrets)

    def open(self) -> None:
        """Find the era (server/discover first; any other error, or silence, means the handshake
        era); ToolError."""
        self.transport.start()
        try:
            self._handshake(time.monotonic() + self.seconds)
        except _McpFailure as exc:
            raise ToolError(f"MCP server {self.label} could not be opened: {exc}") from None
        _log.info("MCP server %s speaks %s", self.label, self.version)

    def _handshake(self, deadline: float) -> None:
        box: queue.SimpleQueue = queue.SimpleQueue()
        discover = self._send("server/discover", {}, box, deadline, modern=True)
        initialize = None
        probe_end = min(deadline,
                        time.monotonic() + getattr(self.transport, "probe_seconds", math.inf))
        while True:
            answer = self._next(box, probe_end if initialize is None else deadline)
            # silent: a slow start, or an old server that ignores it
            if answer is None and initialize is None:
                initialize = self._send_initialize(box, deadline)
                continue
            if answer is None:
                raise _McpTimeout("no answer to server/discover or initialize within "
                                  f"{self.seconds:g} s")
            if answer.get("id") == discover and self._is_modern(answer):
                self.modern, self.version = True, self.VERSION
                return
            if answer.get("id") == discover and initialize is None:
                initialize = self._send_initialize(box, deadline)
            elif answer.get("id") == initialize and "result" in answer:
                self._adopt_old(answer["result"])
                return
            elif answer.get("id") == initialize and "failure" in answer:
                raise answer["failure"]
            elif (answer.get("id") == initialize
                  and self._error_code(answer) != self.UNSUPPORTED_VERSION):
                raise _McpRpcError(f"initialize failed: {self._error_text(answer)}")

    def _is_modern(self, answer: dict) -> bool:
        """True for a discover result that offers our version; ToolError for a server that speaks
        none of ours."""
        result = answer.get("result")
        if isinstance(result, dict):
            versions = result.get("supportedVersions") or [self.VERSION]
            return isinstance(versions, list) and self.VERSION in versions
        supported = (answer.get("error", {}).get("data", {})
                     if isinstance(answer.get("error"), dict) else {})
        supported = supported.get("supported") if isinstance(supported, dict) else None
        if self._error_code(answer) == self.UNSUPPORTED_VERSION and isinstance(supported, list) \
                and not any(version in self.OLD_VERSIONS for version in supported):
            spoken = _cut(", ".join(map(_text, supported)), 200)
            raise _McpFailure(f"it speaks only protocol versions {spoken}; agent.py speaks "
                              f"{self.VERSION} and {self.OLD_VERSION}")
        return False

    def _send_initialize(self, box: queue.SimpleQueue, deadline: float) -> Any:
        return self._send("initialize", {"protocolVersion": self.OLD_VERSION, "capabilities": {},
                                         "clientInfo": self.CLIENT}, box, deadline, modern=False)

    def _adopt_old(self, result: Any) -> None:
        version = result.get("protocolVersion") if isinstance(result, dict) else None
        if version not in self.OLD_VERSIONS:
            raise _McpFailure(f"initialize answered with protocol version "
                              f"{_cut(_text(version, repr), 100)}, which agent.py does not speak")
        self.modern, self.version = False, version
        self.transport.send({"jsonrpc": "2.0", "method": "notifications/initialized"},
                            time.monotonic() + self.seconds)

    def request(self, method: str, params: dict, seconds: Optional[float] = None) -> dict:
        """Send one request and wait for its answer: the result; _McpRpcError, _McpTimeout or
        _McpFailure."""
        deadline = time.monotonic() + (seconds or self.seconds)
        box: queue.SimpleQueue = queue.SimpleQueue()
        ident = self._send(method, params, box, deadline, self.modern)
        try:
            answer = self._next(box, deadline)
        finally:
            self._forget(ident)
        if answer is None:
            self._cancel(ident, method)
            raise _McpTimeout(f"no answer to {method} within {seconds or self.seconds:g} s")
        if "failure" in answer:
            raise answer["failure"]
        if "error" in answer:
            error = answer["error"] if isinstance(answer["error"], dict) else {}
            raise _McpRpcError(self._error_text(answer), error.get("code"), error.get("data"))
        result = answer.get("result")
        if not isinstance(result, dict):
            raise _McpFailure(f"the server answered {method} with a result that is not an object")
        return result

    def list_tools(self) -> list:
        """Every tool the server lists, page by page; ToolError for a listing that is not one."""
        specs: list = []
        cursor = None
        for _ in range(100):     # pages read at most
            try:
                result = self.request("tools/list", {"cursor": cursor} if cursor else {})
            except _McpFailure as exc:
                raise ToolError(f"MCP server {self.label} could not list its tools: "
                                f"{exc}") from None
            page = result.get("tools")
            if not isinstance(page, list) or not all(isinstance(spec, dict)
                                                     and isinstance(spec.get("name"), str)
                                                     for spec in page):
                raise ToolError(f"MCP server {self.label} answered tools/list without a list of "
                                "named tools")
            specs.extend(page)
            cursor = result.get("nextCursor")
            if not isinstance(cursor, str) or not cursor:
                return specs
        raise ToolError(f"MCP server {self.label} listed more than 100 pages of tools")

    def _send(self, method: str, params: dict, box: queue.SimpleQueue, deadline: float,
              modern: bool) -> int:
        ident = next(self._ids)
        if modern:
            params = {**params, "_meta": {self.META + "protocolVersion": self.VERSION,
                                          self.META + "clientCapabilities": {},
                                          self.META + "clientInfo": self.CLIENT}}
        with self._lock:
            self._pending[ident] = box
        try:
            self.transport.send({"jsonrpc": "2.0", "id": ident, "method": method,
                                 "params": params}, deadline)
        except _McpGone:
            self._forget(ident)
            raise
        # over HTTP the answer comes in the same exchange: it failed, as an answer
        except _McpFailure as exc:
            box.put({"id": ident, "failure": exc})
        return ident

    def _next(self, box: queue.SimpleQueue, deadline: float) -> Optional[dict]:
        """The next answer in box before deadline, or None; a failure put there is raised."""
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            try:
                answer = box.get(timeout=min(left, threading.TIMEOUT_MAX))
            except queue.Empty:
                continue
            if isinstance(answer, BaseException):
                raise answer
            return answer

    def _forget(self, ident: int) -> None:
        with self._lock:
            self._pending.pop(ident, None)

    def _cancel(self, ident: int, method: str) -> None:
        # within the tool's grace: a server that reads nothing cannot make the call overrun
        try:
            self.transport.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                 "params": {"requestId": ident, "reason": "timed out"}},
                                time.monotonic() + self.GRACE_SECONDS / 2)
        except _McpFailure as exc:
            _log.debug("MCP server %s: could not cancel %s: %s", self.label, method, exc)

    def deliver(self, arrived: Any) -> None:
        """Route a message that arrived (or each of a batch): an answer to its caller (a stray or
        repeated id is ignored), the server's own request to _answer_server."""
        # a batch (one of self.OLD_VERSIONS allows them) holds messages, never another batch
        for message in arrived if isinstance(arrived, list) else [arrived]:
            if not isinstance(message, dict):
                _log.warning("MCP server %s sent a message that is not an object; ignored",
                             self.label)
                continue
            if self.transport.secrets:
                self._scrub_strings(message)
            ident = message.get("id")
            if "method" in message:
                if "id" in message:
                    self._answer_server(message)
                continue  # a notification: progress and log messages, nothing to do
            with self._lock:
                # True is an int; not an id
                box = self._pending.pop(ident, None) if type(ident) is int else None
            if box is None:
                _log.warning("MCP server %s answered id %s, which no caller waits for; ignored",
                             self.label, _text(ident, repr)[:40])
                continue
            box.put(message)

    def _scrub_strings(self, message: dict) -> None:
        """Scrub every string and number in a message, and every object key, in place, at any
        depth (a loop: a deep message cannot exhaust the stack). A key or number that holds a
        secret becomes the scrubbed text."""
        holders: list = [message]
        strings: list = []                  # (holder, key, text) of each string or number value
        keyed: list = []                    # the objects, whose keys are texts too
        while holders:
            holder = holders.pop()
            if isinstance(holder, dict):
                keyed.append(holder)
            for key in range(len(holder)) if isinstance(holder, list) else list(holder):
                item = holder[key]
                if isinstance(item, str):
                    strings.append((holder, key, item))
                elif isinstance(item, (int, float)) and not isinstance(item, bool):
                    strings.append((holder, key, repr(item)))
                elif isinstance(item, (list, dict)):
                    holders.append(item)
        # one pass over them all finds any secret a text holds: a message of a million short
        # strings then costs one scrub, not a million
        joined = "\0".join([*(text for _, _, text in strings),
                             *(key for holder in keyed for key in holder)])
        if self.scrub(joined) == joined:
            return
        for holder, key, text in strings:
            if self.scrub(text) != text:
                holder[key] = self.scrub(text)
        for holder in keyed:
            if any(self.scrub(key) != key for key in holder):
                items = [(self.scrub(key), item) for key, item in holder.items()]
                holder.clear()
                holder.update(items)

    def _answer_server(self, message: dict) -> None:
        """A server's own request: ping is answered; sampling, elicitation and roots are not
        offered.

        Over HTTP a reply is a POST whose answer may hold the server's next request: that one is
        queued and sent by this loop, not by a call inside the send, so a server that answers
        every reply with a new request gets self.CHAINED_REPLIES replies within one deadline, not
        a deep stack.
        """
        if message.get("method") == "ping":
            reply = {"jsonrpc": "2.0", "id": message["id"], "result": {}}
        else:
            reply = {"jsonrpc": "2.0", "id": message["id"],
                     "error": {"code": -32601, "message": "agent.py offers no such method"}}
        queued = getattr(self._replying, "queue", None)
        if queued is not None:
            queued.append(reply)
            return
        self._replying.queue = queued = collections.deque([reply])
        deadline = time.monotonic() + min(self.seconds, 5.0)
        try:
            for _ in range(self.CHAINED_REPLIES):
                if not queued or time.monotonic() >= deadline:
                    break
                self.transport.send(queued.popleft(), deadline)
            if queued:
                _log.warning("MCP server %s kept sending requests in answer to our replies; "
                             "%d left unanswered", self.label, len(queued))
        except _McpFailure as exc:
            _log.debug("MCP server %s: could not answer its request: %s", self.label, exc)
        finally:
            self._replying.queue = None

    @staticmethod
    def _error_code(answer: dict) -> Any:
        error = answer.get("error")
        return error.get("code") if isinstance(error, dict) else None


    @staticmethod
    def _error_text(answer: dict) -> str:
        error = answer.get("error")
        if not isinstance(error, dict):
            return "an error without a message"
        return (f"{_text(error.get('message'))[:500]} "
                f"(JSON-RPC error {_cut(_text(error.get('code')), 40)})")

    def fail_all(self, failure: _McpFailure) -> None:
        """Wake every waiting caller with failure (the connection is gone)."""
        with self._lock:
            boxes, self._pending = list(self._pending.values()), {}
        for box in boxes:
            box.put(failure)

    def close(self) -> None:
        self.fail_all(_McpFailure(f"the connection to MCP server {self.label} was closed"))
        self.transport.close()


# -- MCP, the transports: a command's pipes, an HTTP URL (skip on first read) ----------
# what carries the session's messages: a command's stdin and stdout, or POSTs to a URL

def _mcp_transport(server: Any, env: Optional[dict], cwd: Any, headers: Optional[dict],
                   name: Optional[str] = None) -> Any:
    """The transport for a command (a list, or a string split as a shell would, never run by one) or
    a URL; ``name`` names it in messages, in place of a label made of the command or URL."""
    label = None if name is None else repr(name)
    if isinstance(server, str) and re.match(r"https?://", server.strip(), re.I):
        if env or cwd:
            raise ToolError("env= and cwd= are for a server started as a command, not for a URL")
        return _McpHttp(server.strip(), headers or {}, label)
    if headers:
        raise ToolError("headers= are for a server at a URL; give a command's secrets with env=")
    if isinstance(server, str):
        import shlex

        argv = shlex.split(server, posix=os.name != "nt")
    elif isinstance(server, (list, tuple)) and all(isinstance(part, (str, os.PathLike))
                                                   for part in server):
        argv = [os.fspath(part) for part in server]
    else:
        raise ToolError("an MCP server is a command (a string or a list of strings) or an "
                        f"http(s):// URL, got {type(server).__name__}")
    if not argv:
        raise ToolError("empty MCP server command")
    # the server's environment: ours for PATH, HOME, locale and temp only, then what it is given
    # (no secret of ours)
    environment = {key: os.environ[key] for key in (
        "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "LANGUAGE", "TZ", "TMPDIR",
        "TEMP", "TMP", "SYSTEMROOT", "SYSTEMDRIVE", "WINDIR", "COMSPEC", "PATHEXT", "APPDATA",
        "LOCALAPPDATA", "USERPROFILE") if key in os.environ}
    environment.update({key: value for key, value in os.environ.items() if key.startswith("LC_")})
    for key, value in (env or {}).items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise ToolError(f"env= of an MCP server maps names to strings; {key!r} does not")
        environment[key] = value
    return _McpStdio(argv, environment, cwd, env or {}, label)


class _McpStdio:
    """A server started as a command: one JSON-RPC message per line on its stdin and stdout
    (internal).

    A reader thread hands every stdout line to the session; another keeps the last lines of stderr,
    the server's log, to quote when it dies. A line that is not JSON is skipped and logged; a line
    over _McpSession.MAX_MESSAGE_BYTES ends the connection (it cannot be skipped without reading
    it whole).
    The server runs in a process group of its own, so that closing stops the children it started
    (npx, uvx, docker and shell wrappers), and no write or close waits on it past a deadline.
    """

    probe_seconds = 5.0  # a server silent this long after server/discover is sent initialize too
    close_seconds = 2.0  # after stdin is closed, the wait before SIGTERM, and again before SIGKILL
    STDERR_LINES = 20    # lines of a server's stderr kept, to quote when it dies
    SKIPPED_LOGGED = 5   # non-JSON stdout lines logged as warnings; later ones at debug level

    def __init__(self, argv: list, env: dict, cwd: Any, given_env: dict,
                 label: Optional[str] = None) -> None:
        self.argv, self.env, self.cwd = argv, env, cwd
        # Secrets: a variable of env= named as a credential is (API_KEY, GITHUB_TOKEN), and so is a
        # token in the command (--access-token X, --api-key=X, TOKEN=X, mcp-remote's --header
        # "Authorization: Bearer X") and a URL's password, query and token-like path segments in
        # either. Other values are not: a path or a list scrubbed would mangle results.
        secrets: list = []
        for flag, arg in [*(("", f"{key}={value}") for key, value in given_env.items()),
                          *zip(["", *argv], argv)]:
            name, value = re.match(r"([^=:]*)[=:]?\s*(.*)", arg, re.S).groups()
            if value and _CREDENTIAL_HEADER.search(name):
                secrets += _header_secrets({name: value})
            elif flag.startswith("-") and "=" not in flag and _CREDENTIAL_HEADER.search(flag):
                secrets += _header_secrets({flag: arg})
            for url in re.findall(r"[A-Za-z][\w+.-]*://\S+", arg):
                secrets += _mcp_url_secrets(url)
        self.secrets = [secret for secret in secrets if secret]
        self.label = label or _cut(_scrubbed(" ".join([os.path.basename(argv[0]), *argv[1:]]),
                                             self.secrets), 100)
        self.session: Any = None
        self._process: Any = None
        self._failure: Optional[_McpFailure] = None
        self._stderr: collections.deque = collections.deque(maxlen=self.STDERR_LINES)
        self._write_lock = threading.Lock()
        self._threads: list = []
        self._skipped = 0

    def start(self) -> None:
        """Start the server, with no shell, in its own process group, and its reader threads;
        ToolError when it cannot be started."""
        import select
        import subprocess

        program = shutil.which(self.argv[0], path=self.env.get("PATH"))
        if program is None:
            raise ToolError(f"MCP server command {self.argv[0]!r} not found (on the PATH it is "
                            "given)")
        group = ({"start_new_session": True} if os.name == "posix" else
                 {"creationflags": getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)})
        try:
            self._process = subprocess.Popen([program, *self.argv[1:]], stdin=subprocess.PIPE,
                                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                             env=self.env, cwd=self.cwd, **group)
        except (OSError, ValueError) as exc:
            raise ToolError(f"MCP server {self.label} could not be started: "
                            f"{_scrubbed(str(exc), self.secrets)}") from None
        # writes wait for room in the pipe with poll, under their deadline; where there is no
        # poll (Windows), a write blocks as a file's does, and close() does not wait for it
        if hasattr(select, "poll"):
            os.set_blocking(self._process.stdin.fileno(), False)
        _MCP_OPEN.add(self)
        for target in (self._read, self._read_stderr):
            thread = threading.Thread(target=target, name="agent-mcp", daemon=True)
            thread.start()
            self._threads.append(thread)

    def send(self, message: dict, deadline: float) -> None:
        """Write one message as a line before deadline; _McpTimeout when the server reads none of
        it in time, _McpGone when it is gone or stopped reading mid-line (the line cannot be
        taken back)."""
        data = memoryview(_compact(message).encode("utf-8") + b"\n")
        # a writer waits for another only until its own deadline
        if not self._write_lock.acquire(timeout=max(0.0, min(deadline - time.monotonic(),
                                                              threading.TIMEOUT_MAX))):
            raise _McpTimeout(f"MCP server {self.label} read nothing of its stdin in time")
        try:
            if self._failure is not None:
                raise self._failure
            self._write(data, deadline)
        except (OSError, ValueError):
            raise _McpGone(self._exit_text()) from None
        finally:
            self._write_lock.release()

    def _write(self, data: memoryview, deadline: float) -> None:
        import select

        fd, total = self._process.stdin.fileno(), len(data)
        while data:
            try:
                data = data[os.write(fd, data):]
                continue
            except BlockingIOError:  # the pipe is full: wait for room until the deadline
                pass
            left = deadline - time.monotonic()
            if left <= 0 and len(data) == total:
                raise _McpTimeout(f"MCP server {self.label} read nothing of its stdin in time")
            if left <= 0:
                self._end(_McpGone(f"MCP server {self.label} stopped reading its stdin in the "
                                   "middle of a message; the connection was closed"))
                self._signal("kill")   # a half-written line cannot be taken back
                raise self._failure
            poll = select.poll()
            poll.register(fd, select.POLLOUT)
            poll.poll(left * 1000)

    def _read(self) -> None:
        stdout = self._process.stdout
        try:
            while True:
                # bounded: never a whole flood at once
                line = stdout.readline(_McpSession.MAX_MESSAGE_BYTES + 1)
                if not line:
                    break
                if len(line) > _McpSession.MAX_MESSAGE_BYTES:
                    self._end(_McpGone(f"MCP server {self.label} sent a message over "
                                       f"{_McpSession.MAX_MESSAGE_BYTES:,} bytes; the connection "
                                       "was closed"))
                    self._signal("kill")
                    return
                self._take(line)
        except (OSError, ValueError):
            pass
        self._end(_McpGone(self._exit_text()))

    def _take(self, line: bytes) -> None:
        """One stdout line: a message for the session, or a line that is not one (skipped and
        logged)."""
        if not line.strip():
            return
        try:
            message = json.loads(line)
        except (ValueError, RecursionError):
            message = None
        if isinstance(message, (dict, list)):
            self.session.deliver(message)
            return
        self._skipped += 1
        level = logging.WARNING if self._skipped <= self.SKIPPED_LOGGED else logging.DEBUG
        _log.log(level,
                 "MCP server %s printed a line that is not a JSON-RPC message; skipped: %r",
                 self.label, self.session.scrub(line[:200].decode("utf-8", errors="replace")))

    def _read_stderr(self) -> None:
        try:
            for line in iter(functools.partial(self._process.stderr.readline, 65536), b""):
                text = self.session.scrub(line.decode("utf-8", errors="replace").rstrip())
                self._stderr.append(text)
                _log.debug("MCP server %s: %s", self.label, text)
        except (OSError, ValueError):
            pass

    def _end(self, failure: _McpFailure) -> None:
        self._failure = self._failure or failure
        self.session.fail_all(self._failure)

    def _exit_text(self) -> str:
        """What happened to the server, with the last lines of its stderr (scrubbed, line by
        line, as they came)."""
        import subprocess

        try:
            code = self._process.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            code = None
        if len(self._threads) > 1:
            self._threads[1].join(timeout=1.0)   # the rest of its stderr
        what = "stopped answering" if code is None else f"exited with code {code}"
        tail = " | ".join(line for line in list(self._stderr) if line.strip())[-1000:]
        return f"MCP server {self.label} {what}" + (f"; its last stderr lines: {tail}" if tail
                                                    else "; no stderr")

    def close(self) -> None:
        """Close stdin, wait, then SIGTERM, wait, then SIGKILL, to the server's process group:
        nothing it started is left running, and nothing here waits on it past these waits."""
        import subprocess

        _MCP_OPEN.discard(self)
        process, threads, self._threads = self._process, self._threads, []
        if process is None or not threads:
            return
        self._failure = self._failure or _McpGone(f"the connection to MCP server {self.label} "
                                                  "was closed")
        # a writer stuck on a full pipe holds the lock until its deadline: then no stdin EOF,
        # straight to the signals, which end the write too
        self._close_stdin()
        for stop in (None, "terminate", "kill"):
            if stop is not None:
                self._signal(stop)
            try:
                process.wait(timeout=self.close_seconds)
                break
            except subprocess.TimeoutExpired:
                continue
        # the server is gone; what it started may live on in its group, holding its pipes or not
        for stop in ("terminate", "kill"):
            self._signal(stop)
            threads[0].join(timeout=self.close_seconds / 4)
            if not threads[0].is_alive():
                break
        for thread, pipe in zip(threads, (process.stdout, process.stderr)):
            thread.join(timeout=self.close_seconds / 4)
            if not thread.is_alive():  # closing a pipe a thread still reads would wait for it
                pipe.close()
        self._close_stdin()

    def _close_stdin(self) -> None:
        if self._write_lock.acquire(timeout=0.1):
            try:
                self._process.stdin.close()
            except OSError:
                pass
            finally:
                self._write_lock.release()

    def _signal(self, stop: str) -> None:
        """terminate or kill the server's process group (the process alone where there are no
        groups)."""
        import signal

        try:
            if os.name == "posix":
                os.killpg(self._process.pid, signal.SIGTERM if stop == "terminate"
                          else signal.SIGKILL)
            else:
                getattr(self._process, stop)()
        except OSError:  # the group is gone already
            pass


class _McpHttp:
    """A server at a URL (Streamable HTTP): each message is its own POST, answered by JSON or an SSE
    stream.

    The client's plumbing bounds every read (_Deadline, _Body, _EventStream), follows no redirect
    and never reaches a loopback server through a proxy; errors are scrubbed of the headers, the
    server's credentials.
    """

    def __init__(self, url: str, headers: dict, label: Optional[str] = None) -> None:
        try:
            parts = _http_url(url)
        except ValueError as exc:
            raise ToolError(f"invalid MCP server URL ({exc})") from None
        if parts.username is not None or parts.password is not None:
            raise ToolError("an MCP server URL names a host and holds no user or password (give "
                            "credentials as headers=)")
        if not isinstance(headers, dict) or not all(isinstance(value, str)
                                                    for value in headers.values()):
            raise ToolError("headers= of an MCP server maps names to strings")
        if headers and parts.scheme.lower() == "http" and not _is_loopback(url):
            raise ToolError("headers (credentials) are not sent over plain http:// to "
                            f"{parts.hostname}; use https://")
        self.url, self.headers = url, {str(key): value.strip() for key, value in headers.items()}
        self.secrets = [*_header_secrets(self.headers), *_mcp_url_secrets(url)]
        # no path or query: either may hold a token
        self.label = label or urlunsplit((parts.scheme, parts.netloc, "/\u2026" if parts.path
                                          not in ("", "/") or parts.query else "", "", ""))
        self.session: Any = None
        self.session_id: Optional[str] = None

    def start(self) -> None:
        _MCP_OPEN.add(self)

    def send(self, message: dict, end: float) -> None:
        """POST one message and hand what answers it to the session; _McpFailure (or a subclass)
        when it fails."""
        deadline = _Deadline(max(end - time.monotonic(), 0.0), end, self.label, name="timeout")
        try:
            response = self._open(message, deadline)
            if response is not None:
                try:
                    self._read(response, message, deadline)
                finally:
                    response.close()
        except LLMError as exc:              # a deadline passed, or the body is over the cap
            timeout = deadline.passed()
            raise (_McpTimeout if timeout else _McpFailure)(self.session.scrub(str(exc))) from None
        except _Retryable as exc:            # a stall or a break mid-answer
            raise _McpFailure(self.session.scrub(str(exc))) from None

    def _open(self, message: dict, deadline: _Deadline) -> Any:
        import http.client

        headers = self._headers(message)
        try:
            response, error = _request(self.url, deadline, deadline.left(),
                                       json.dumps(message).encode("utf-8"), headers)
        except (OSError, http.client.HTTPException) as exc:
            reason = getattr(exc, "reason", None) or exc
            if deadline.passed():
                raise deadline.expired() from None
            raise _McpGone(f"could not reach MCP server {self.label}: "
                           f"{self.session.scrub(str(reason)) or type(exc).__name__}") from None
        if error is not None:
            self._http_error(response, error.decode("utf-8", errors="replace"))
            return None
        return response

    def _headers(self, message: dict) -> dict:
        headers = {"Content-Type": "application/json",
                   "Accept": "application/json, text/event-stream",
                   "User-Agent": f"agent.py/{__version__}"}
        params = message.get("params") if isinstance(message.get("params"), dict) else {}
        if "_meta" in params:                # the modern era routes by these
            headers.update({"Mcp-Protocol-Version": _McpSession.VERSION,
                            "Mcp-Method": message["method"]})
            if message["method"] == "tools/call":
                # printable ASCII as it is, anything else in MCP's base64 form
                text = params["name"]
                if not re.fullmatch(r"[\x20-\x7e]*", text):
                    import base64
                    text = f"=?base64?{base64.b64encode(text.encode('utf-8')).decode('ascii')}?="
                headers["Mcp-Name"] = text
        elif self.session.version is not None:
            headers["Mcp-Protocol-Version"] = self.session.version
        if self.session_id is not None:
            headers["Mcp-Session-Id"] = self.session_id
        for name, value in self.headers.items():
            if _HEADER_CONTROL.search(value) or _HEADER_CONTROL.search(name):
                raise _McpGone(f"header {name!r} of MCP server {self.label} holds a control "
                               "character (its value is not shown)")
            headers[name] = value
        return headers

    def _http_error(self, exc: Any, text: str) -> None:
        """An error status: a JSON-RPC error in its body is delivered as the answer, anything else
        raised."""
        try:
            answer = json.loads(text)
        except (ValueError, RecursionError):
            answer = None
        if isinstance(answer, dict) and "error" in answer and "id" in answer:
            self.session.deliver(answer)
            return
        if 300 <= exc.code < 400:
            raise _McpFailure(f"HTTP {exc.code} from MCP server {self.label}: a redirect (agent.py "
                              "follows none; fix the URL)")
        hint = " (check the credentials in its headers)" if exc.code in (401, 403) else ""
        raise _McpFailure(f"HTTP {exc.code} from MCP server {self.label}{hint}: "
                          f"{_quoted_body(text, self.session.scrub)}")

    def _read(self, response: Any, message: dict, deadline: _Deadline) -> None:
        """Deliver the JSON answer, or each event of the stream until the answer to message has
        come."""
        if message.get("method") == "initialize":
            self.session_id = response.headers.get("Mcp-Session-Id") or self.session_id
        body = _Body(response, deadline, _McpSession.MAX_MESSAGE_BYTES, deadline.left())
        pieces, head = iter(body.read, b""), b""
        for piece in pieces:           # enough to see a BOM, which some servers send first
            head += piece
            if len(head) >= len(_BOM):
                break
        head = head[len(_BOM):] if head.startswith(_BOM) else head
        if "event-stream" not in (response.headers.get("Content-Type") or ""):
            text = b"".join([head, *pieces]).decode("utf-8", errors="replace")
            if text.strip():
                self._deliver(text)
            return
        events = _EventStream()
        for piece in itertools.chain([head] if head else [], pieces, [b""]):  # b"": the end
            for data in events.feed(piece):
                if self._deliver(data) == message.get("id") and "id" in message:
                    return

    def _deliver(self, text: str) -> Any:
        """Hand one JSON message to the session; the id it answers, if any."""
        try:
            answer = json.loads(text)
        except (ValueError, RecursionError):
            raise _McpFailure(f"MCP server {self.label} answered with something that is not JSON: "
                              f"{_quoted_body(text, self.session.scrub)}") from None
        self.session.deliver(answer)
        return answer.get("id") if isinstance(answer, dict) and "method" not in answer else None

    close_seconds = 2.0     # the DELETE's whole time

    def close(self) -> None:
        """End the session of a handshake-era server (DELETE, best effort, within close_seconds
        however slowly the server answers)."""
        _MCP_OPEN.discard(self)
        if self.session_id is None:
            return
        headers = {"Mcp-Session-Id": self.session_id, **self.headers}
        self.session_id = None
        seconds = self.close_seconds
        deadline = _Deadline(seconds, time.monotonic() + seconds, self.label, name="timeout")
        try:
            _request(self.url, deadline, seconds, None, headers, method="DELETE")[0].close()
        except Exception as exc:  # the server may be gone already; nothing is left running here
            _log.debug("MCP server %s: DELETE of the session failed: %s", self.label,
                       self.session.scrub(_text(exc)))


def _mcp_url_secrets(url: str) -> list:
    """What a URL may hold that is secret: its password, the values of its query, and a user name
    or path segment that looks like a token (16 characters or more, a digit among them), as some
    hosted servers put the key in the path, and a Sentry DSN or postgresql://TOKEN@host in the
    user name."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return []
    return [parts.password, *(item.partition("=")[2] for item in parts.query.split("&")),
            *(segment for segment in [parts.username or "", *parts.path.split("/")]
              if len(segment) >= 16 and re.search(r"\d", segment))]


_MCP_OPEN: set = set()   # transports still open, closed at interpreter exit


atexit.register(lambda: [transport.close() for transport in list(_MCP_OPEN)])


# -- Loop ------------------------------------------------------------------------------
# Agent.run is the loop; Step and AgentResult are its trace; the stop-reason table comes first

class _Stop(typing.NamedTuple):
    """What a stop reason means (internal): the result's summary line, and the CLI's exit code."""

    # formatted with the Agent's limits, steps, tokens (the run's total) and error (the last step's)
    summary: str
    # the CLI's exit code after a run that stopped so (its help says what each code means)
    exit_code: int


# Every stop reason, in one place: the loop's summaries, the CLI's exit codes and help, and batch
# counts read it.
_STOPS = {
    "final": _Stop("answered in {steps} step(s)", 0),
    "max_steps": _Stop("no final answer within max_steps={max_steps}", 1),
    "repeat_limit": _Stop("the same call was repeated more than "
                          "max_repeats={max_repeats} times", 1),
    "format_errors": _Stop("more than max_format_errors={max_format_errors} unparseable replies in "
                           "a row", 1),
    "time_limit": _Stop("ran past max_seconds={max_seconds}", 1),
    "token_limit": _Stop("used {tokens} tokens, over max_total_tokens={max_total_tokens}", 1),
    "llm_error": _Stop("the model endpoint failed: {error}", 3),
}
STOP_REASONS = tuple(_STOPS)
# the loop's clock for max_seconds and step times (tests replace it); tools keep their own
_now = time.monotonic


@dataclass
class Step:
    """One model turn: the raw reply, the parsed action, what was sent back, what went wrong."""

    index: int                            # 1-based
    raw: Optional[str] = None             # the model's reply; None if the model call failed
    action: Optional[Action] = None       # None if the reply could not be parsed
    observation: Optional[str] = None  # the observation message sent back (_observation), or None
    error: Optional[str] = None           # what went wrong in this step, or None
    llm_seconds: float = 0.0
    tool_seconds: float = 0.0
    # the client's finish_reason for this reply, when it reports one
    finish_reason: Optional[str] = None
    reasoning: Optional[str] = None       # a separate reasoning field the server sent, never parsed
    # what the agent changed for this call (ladder rungs, budgets)
    notes: list[str] = field(default_factory=list)
    # made before this step's call (memory)
    summary_calls: list[_SummaryCall] = field(default_factory=list)
    # replies to this step's call that were not kept as raw, in order: a tool rung's call that only
    # copied its tool's example, asked again without the rung
    discarded_raw: list[str] = field(default_factory=list)
    # the max_context_chars a context overflow of this step's call set for the rest of the run
    overflow_budget: Optional[int] = None

    def to_dict(self) -> dict:
        data = asdict(self)
        if self.action is not None:
            data["action"]["repairs"] = list(self.action.repairs)
        return data


@dataclass
class AgentResult:
    """The outcome of a run: the answer (or None), why it stopped, every step and message."""

    answer: Optional[str]
    stop_reason: str                      # one of STOP_REASONS
    steps: list[Step]
    messages: list[dict]  # the whole conversation, never trimmed; pass back as history
    usage: dict  # prompt_tokens, completion_tokens, total_tokens, estimated,
    #                                       estimated_steps (the steps whose call reported no usage:
    # estimated)
    seconds: float
    summary: str = ""                     # one line: how the run ended

    @property
    def ok(self) -> bool:
        return self.stop_reason == "final"

    @property
    def last_observation(self) -> Optional[str]:
        return next((s.observation for s in reversed(self.steps)
                     if s.observation is not None), None)

    def to_dict(self) -> dict:
        """The whole result as plain JSON data: ``json.dumps(..., allow_nan=False)`` always
        works."""
        return self._plain({
            "answer": self.answer, "stop_reason": self.stop_reason, "summary": self.summary,
            "last_observation": self.last_observation, "usage": dict(self.usage),
            "seconds": self.seconds, "steps": [step.to_dict() for step in self.steps],
            "messages": [dict(m) for m in self.messages]})

    @staticmethod
    def _plain(value: Any) -> Any:
        # Tool arguments may hold anything a custom client or tool put there: text keys,
        # lists for tuples, and text for non-finite floats, huge ints and other objects.
        if isinstance(value, dict):
            plain = AgentResult._plain
            return {key if isinstance(key, str) else _text(key): plain(item) for key,
                    item in value.items()}
        if isinstance(value, (list, tuple)):
            return [AgentResult._plain(item) for item in value]
        if _is_int(value):
            try:
                # as json writes it: Python 3.11+ refuses ints over 4,300 digits
                int.__repr__(value)
            except ValueError:
                return _text(value, hex)  # exact, and hexadecimal has no such limit
            return value
        if value is None or isinstance(value, (str, bool)) or (type(value) is float
                                                               and math.isfinite(value)):
            return value
        return _text(value)

    def save(self, path: Union[str, bytes, os.PathLike]) -> None:
        """Write the result as JSON, atomically; ``MockLLM.from_trace(path)`` replays it.

        ``path`` is anything ``open()`` takes: text, bytes or a path object. The text
        goes to a temporary file beside the target that then replaces it, so the old
        file survives any failure; the temporary file is created 0600, the new file
        keeps the old one's permission bits (a new one stays 0600), and a symlink is
        written through to the file it points to. A lone surrogate (a model's
        ``"\\ud83d"``, an undecodable file name) is written as its JSON escape and reads
        back unchanged. Raises OSError when the file cannot be written.
        """
        text = json.dumps(self.to_dict(), ensure_ascii=False, indent=1, allow_nan=False)
        # replace the file a symlink points to, not the link
        target = os.path.realpath(os.fspath(path))
        # short: a target name at the system's length limit still fits
        name = f".{os.urandom(6).hex()}.tmp"
        temp = os.path.join(os.path.dirname(target),
                            os.fsencode(name) if isinstance(target, bytes) else name)
        try:
            # Private from the start: the result never sits in a file more open than the target (or
            # 0600).
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
            descriptor = os.open(temp, flags, 0o600)
            # Only strings can hold surrogates, and backslashreplace writes one as its JSON escape
            # (\ud83d).
            with open(descriptor, "w", encoding="utf-8", errors="backslashreplace") as handle:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
            if os.path.exists(target):
                # the permission bits, as stat.S_IMODE
                os.chmod(temp, os.stat(target).st_mode & 0o7777)
            os.replace(temp, target)
        except BaseException:
            try:
                os.remove(temp)
            except OSError:
                pass
            raise


class Agent:
    """The ReAct loop: ask the model, parse its action, run the tool, send the observation back.

    ``run(task)`` runs it once; one Agent may run many tasks. Constructor options
    (``llm`` and ``tools`` may be positional; every limit is checked when the Agent is built):
      llm
        the model client: anything with ``chat(messages) -> str`` (see ``LLM``)
      tools (default: None)
        a ToolRegistry, or an iterable of Tools and plain functions; None: no tools
      system_prompt (default: None)
        None: ``SYSTEM_PROMPT`` with the tools and a worked example; in your own text
        ``{tools}`` is replaced by the tool list
      max_steps (default: 10)
        model calls per run before it stops with "max_steps"
      max_repeats (default: 2)
        repeats of one call (not run again) before the run stops
      max_format_errors (default: 3)
        replies in a row that cannot be read before the run stops
      max_observation_chars (default: 4000)
        longer tool output is cut, keeping its head and its tail
      max_context_chars (default: None)
        a budget in characters for the conversation sent; over it old steps are dropped
        (``memory``); None: send it all
      max_seconds (default: None)
        a run's wall-clock limit, checked between steps; it also caps tool timeouts and model calls
      max_total_tokens (default: None)
        a run's token limit, as the server reports usage (else estimated)
      on_step (default: None)
        called with each Step as it ends
      on_wait (default: None)
        ``on_wait(step, what)``, called as a wait starts, with the step's index and what is awaited
        ("waiting for the model", "running NAME (limit N s)"), and with ``what=None`` as it ends;
        a tool registered with confirm=True is not announced, since its prompt needs the terminal
      confirm (default: None)
        ``confirm(name, arguments) -> bool``, asked before a tool registered with
        confirm=True; None declines every such call
      constrain (default: 'auto')
        the decoding ladder, for a client whose chat takes ``response_schema``: 'auto' sends a
        schema when it helps (a first call may only call a tool, unless the task fits none; the
        action schema after a failed reply), 'always' the action schema from the second call too,
        'never' none
      memory (default: 'digest')
        what stands in for dropped steps: 'digest' (a line each), 'summary' (the model's
        notes) or 'none'
    """

    _CONSTRAIN_MODES = ("auto", "always", "never")
    # Memory: what stands in for the steps a context budget drops, joined to the task's message (a
    # message of its own after the task would break the alternation of roles); its texts are in
    # the table of Errors and settings.
    _MEMORY_MODES = ("digest", "summary", "none")
    # per-call options it may pass
    _CHAT_OPTIONS = ("response_schema", "temperature", "max_seconds", "frequency_penalty")
    # at least this once a failed reply repeats: a deterministic loop needs sampling
    _HOT_TEMPERATURE = 0.7
    # Sent with the schema: under constrained decoding a small model may loop inside a string until
    # the token limit, which the penalty prevents (docs/NOTES.md, "The schema rung").
    _CONSTRAINED_PENALTY = 0.5

    def __init__(self, llm: LLM, tools: _Tools = None, *, system_prompt: Optional[str] = None,
                 max_steps: int = 10, max_repeats: int = 2, max_format_errors: int = 3,
                 max_observation_chars: int = 4000, max_context_chars: Optional[int] = None,
                 max_seconds: Optional[float] = None, max_total_tokens: Optional[int] = None,
                 on_step: Optional[Callable[[Step], None]] = None,
                 on_wait: Optional[Callable[[int, Optional[str]], None]] = None,
                 confirm: Optional[Callable[[str, dict], bool]] = None, constrain: str = "auto",
                 memory: str = "digest") -> None:
        for name, value in {"max_steps": max_steps, "max_repeats": max_repeats,
                            "max_format_errors": max_format_errors,
                            "max_observation_chars": max_observation_chars}.items():
            _check_setting(name, value)
        for name, value in {"max_context_chars": max_context_chars, "max_seconds": max_seconds,
                            "max_total_tokens": max_total_tokens}.items():
            _check_setting(name, value, optional=True)   # None: no such limit
        if constrain not in self._CONSTRAIN_MODES:
            raise ValueError(f"invalid constrain {constrain!r} (must be one of "
                             f"{', '.join(self._CONSTRAIN_MODES)})")
        if memory not in self._MEMORY_MODES:
            raise ValueError(f"invalid memory {memory!r} (must be one of "
                             f"{', '.join(self._MEMORY_MODES)})")
        self.llm = llm
        if isinstance(tools, ToolRegistry):
            self.tools = tools
        else:
            self.tools = ToolRegistry()
            for tool in tools or ():
                self.tools.register(tool)
        self.system_prompt = _render_prompt(system_prompt, self.tools)
        self.max_steps = max_steps                  # model calls per run
        self.max_repeats = max_repeats              # repeats of one call before the run stops
        self.max_format_errors = max_format_errors  # format errors in a row that stop the run
        self.max_observation_chars = max_observation_chars  # longer tool output keeps head and tail
        self.max_context_chars = max_context_chars  # None: send the whole conversation
        self.max_seconds = max_seconds  # checked between steps; caps tool timeouts and model calls
        self.max_total_tokens = max_total_tokens    # reported by the server, else estimated
        self.on_step = on_step                      # called with each Step as it ends
        self.on_wait = on_wait          # told when a model call or a tool starts, and ends
        self.confirm = confirm  # asked before tools registered with confirm=True
        self.constrain = constrain                  # the decoding ladder: auto, always or never
        self.memory = memory  # what stands in for steps a context budget drops
        # checked once: the per-call options llm.chat takes, those it names, or all of them when it
        # takes **kwargs
        try:
            parameters = inspect.signature(llm.chat).parameters.values()
        except (AttributeError, TypeError, ValueError):  # no chat, or a builtin without a signature
            parameters = []
        self._accepts = frozenset(self._CHAT_OPTIONS) if any(
            p.kind is p.VAR_KEYWORD for p in parameters) else frozenset(
            p.name for p in parameters
            if p.name in self._CHAT_OPTIONS and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD))
        # the prompt's worked example
        self._example = _example(self.tools) if system_prompt is None else None
        if constrain == "always" and "response_schema" not in self._accepts:
            _log.warning("constrain='always', but %s.chat takes no response_schema: running "
                         "unconstrained", type(llm).__name__)

    # The loop: a run, one step at a time, and the limits checked between steps
    def run(self, task: str, history: Optional[list[dict]] = None) -> AgentResult:
        """Run the loop on ``task`` until the model answers or a limit stops it.

        Sent back to the model as an observation, and the run goes on: an unknown
        tool, invalid arguments, a tool that raises or times out, a declined
        confirmation, a repeated call (not run again), and a reply that cannot be
        parsed, repeats itself or was cut off (up to ``max_format_errors`` in a
        row). After a format error later calls send the action schema, after a
        failed reply repeats an earlier one a raised temperature, and the last
        attempt allowed may only answer (``constrain``).
        A context overflow sets a context budget for the rest of the run and retries
        once. Stops the run, with a ``stop_reason`` and every step kept: one of
        ``STOP_REASONS`` (``_STOPS`` says what each means), ``llm_error`` when the
        model client raises. Nothing a
        model or a tool does makes this raise; ValueError only for a task that is
        not text or a malformed ``history`` (a list of ``{"role", "content"}``
        messages). An exception from your own ``on_step`` propagates, and so does
        Ctrl-C; the step in progress is kept in the trace, marked ``interrupted``.
        A ``confirm`` callback that raises counts as declined.
        """
        state = self._start(task, history)
        stop = None
        while stop is None:
            stop = self._over_budget(state) or self._step(state)
        return self._finish(state, stop)

    def _start(self, task: str, history: Optional[list]) -> _RunState:
        if not isinstance(task, str) or not task.strip():
            raise ValueError(f"invalid task {task!r} (must be non-empty text)")
        if history is not None and not isinstance(history, list):
            raise ValueError(f"invalid history {type(history).__name__} (must be a list of "
                             "messages)")
        messages = []
        for i, message in enumerate(history or []):
            if not (isinstance(message, dict)
                    and message.get("role") in ("system", "user", "assistant")
                    and isinstance(message.get("content"), str)):
                raise ValueError(f"invalid history message {i} (must be {{'role': "
                                 f"system|user|assistant, 'content': str}})")
            messages.append({"role": message["role"], "content": message["content"]})
        if not messages or messages[0]["role"] != "system":
            messages.insert(0, {"role": "system", "content": self.system_prompt})
        if messages[-1]["role"] == "user":  # keep roles alternating: join the task to it
            messages[-1] = {"role": "user", "content": f"{messages[-1]['content']}\n\n{task}"}
        else:
            messages.append({"role": "user", "content": task})
        head_chars = sum(len(m["content"]) for m in messages)
        state = _RunState(messages=messages, head=len(messages), head_chars=head_chars,
                          started=_now(), budget=self.max_context_chars, memory=self.memory)
        if self.constrain == "always" and "response_schema" in self._accepts:
            state.schema = self.tools.action_schema()
        if len(self.tools) and self.constrain != "never":   # the task alone, not the history
            state.fits_no_tool = _fits_no_tool(task, self.tools)
        return state

    def _over_budget(self, state: _RunState) -> Optional[str]:
        # No tool starts with less than the floor left, so after the first step such a run is over.
        floor = _MIN_START_SECONDS if state.steps else 0.0
        if self.max_seconds is not None and _now() - state.started > self.max_seconds - floor:
            return "time_limit"
        used = state.usage["prompt_tokens"] + state.usage["completion_tokens"]
        if self.max_total_tokens is not None and used > self.max_total_tokens:
            return "token_limit"
        return None

    def _step(self, state: _RunState) -> Optional[str]:
        step = Step(index=len(state.steps) + 1)
        try:
            return self._query(state, step) or self._act(state, step)
        # Ctrl-C, or a callback that raised: the trace still gets this step
        except BaseException as exc:
            step.error = step.error or f"interrupted: {type(exc).__name__}"
            raise
        finally:
            state.steps.append(step)
            if self.on_step is not None:
                self.on_step(step)

    # Asking the model: the call, its tokens, the context it is sent, its options (the ladder's
    # rungs), a context overflow
    def _query(self, state: _RunState, step: Step) -> Optional[str]:
        """Ask the model; record the reply, what the client reported and the tokens. "llm_error" if
        it raises."""
        started = _now()
        self._wait(step, "waiting for the model")
        try:
            raw = self._chat(state, step)
        except Exception as exc:  # LLMError, or whatever a custom client raises
            step.llm_seconds = _now() - started
            step.error = str(exc) if isinstance(exc, LLMError) else f"{type(exc).__name__}: {exc}"
            spent = self.max_seconds is not None and self._time_left(state) < _MIN_START_SECONDS
            # the agent's own budget ended the call, not the server
            return "time_limit" if spent else "llm_error"
        finally:
            self._wait(step, None)
        step.llm_seconds = _now() - started
        step.raw = raw if isinstance(raw, str) else ("" if raw is None else str(raw))
        finish_reason = getattr(self.llm, "last_finish_reason", None)
        reasoning = getattr(self.llm, "last_reasoning", None)
        step.finish_reason = finish_reason if isinstance(finish_reason, str) else None
        step.reasoning = reasoning if isinstance(reasoning, str) and reasoning else None
        _log.debug("step %d: model call took %.3f s", step.index, step.llm_seconds)
        self._count_tokens(state, step.raw)
        state.append("assistant", step.raw)
        return None

    def _count_tokens(self, state: _RunState, raw: str,
                      prompt_chars: Optional[int] = None) -> dict:
        """Add the last call's tokens to the run's and return them: the client's ``last_usage``,
        else an estimate at 4 characters a token of raw and of the prompt (``prompt_chars``, by
        default the conversation sent)."""
        counts = _reported_usage(getattr(self.llm, "last_usage", None))
        if counts is None:
            if prompt_chars is None:
                prompt_chars = state.head_chars + state.tail_chars
            counts = {"prompt_tokens": prompt_chars // 4, "completion_tokens": len(raw) // 4}
            state.estimated()
        state.usage["prompt_tokens"] += counts["prompt_tokens"]
        state.usage["completion_tokens"] += counts["completion_tokens"]
        return counts

    def _chat(self, state: _RunState, step: Step) -> Any:
        """One model call with this run's options; after a context overflow, trim and retry once."""
        # may make a summary call first, so the options come after it
        messages = self._context(state, step)
        options = self._options(state)
        first = "response_schema" in options and self._first_call(state)
        tool_rung = first and not state.fits_no_tool
        if tool_rung:
            self._rung(step,
                       "the first call of a run may only call a tool (a response_schema of the "
                       "tool calls)")
        elif first:
            self._rung(step, "the task, in English, shares no word with any tool, so the first "
                             "call may call a tool or answer (a response_schema of the tool calls "
                             "and the final shape)")
        try:
            raw = self.llm.chat(messages, **options)
        except LLMError as exc:
            if exc.kind != "context_overflow":
                raise
            self._overflowed(state, step, exc)
            messages, options = self._context(state, step), self._options(state)
            raw = self.llm.chat(messages, **options)
        if first:
            raw = self._named(state, step, raw, messages, options)
        return self._untooled(state, step, raw, messages, options) if tool_rung else raw

    def _named(self, state: _RunState, step: Step, raw: Any, messages: list,
               options: dict) -> Any:
        """The tool rung's reply; when it names no registered tool, the reply to the same messages
        with the tools whose words its name shares (all of them when none does) as the names."""
        try:
            action = parse_action(raw if isinstance(raw, str) else "")
        except ActionFormatError:
            return raw
        if action.kind != "tool_call" or action.name in self.tools:
            return raw
        schema = self.tools.action_schema()
        calls = schema["anyOf"][:-1]
        names = _sharing(action.name, self.tools)
        kept = [c for c in calls if c["properties"]["name"]["const"] in names] or calls
        return self._again(state, step, raw, messages,
                           dict(options, response_schema=dict(schema, anyOf=kept)),
                           f"the call named {action.name!r}, which is not a tool, so it is not run "
                           "and the model is asked again with the names of "
                           + (", ".join(names) if names else "every tool"))

    def _again(self, state: _RunState, step: Step, raw: Any, messages: list, options: dict,
               why: str) -> Any:
        """The reply to the same messages with other options, the first reply kept in the step's
        ``discarded_raw`` and its tokens counted; ``why`` goes in the step's notes."""
        step.discarded_raw.append(raw if isinstance(raw, str) else str(raw))
        self._rung(step, why)
        self._count_tokens(state, raw)
        self._wait(step, "waiting for the model")   # nothing was run: a new reply is awaited
        if "max_seconds" in options:
            options = dict(options, max_seconds=self._time_left(state))
        return self.llm.chat(messages, **options)

    def _untooled(self, state: _RunState, step: Step, raw: Any, messages: list,
                  options: dict) -> Any:
        """The tool rung's reply, or, when its call only copies its tool's example, the model's
        reply to the same messages without the rung: the task may need no tool."""
        try:
            action = parse_action(raw if isinstance(raw, str) else "")
        except ActionFormatError:
            return raw
        copy = _description_copy(action, self.tools, state.user_text)
        if copy is None:
            return raw
        # the action schema, which allows the final shape: with no schema, a small model wrote
        # prose (docs/NOTES.md, "The tool rung")
        options = dict(options, response_schema=state.schema or self.tools.action_schema())
        return self._again(state, step, raw, messages, options,
                           f"the call only copied {copy}, which no user message names, so it is "
                           "not run and the model is asked again with the action schema, which "
                           "allows the final answer")

    def _context(self, state: _RunState, step: Step) -> list[dict]:
        """What the next call sends; over the context budget, the oldest steps are dropped and
        remembered."""
        if not state.over_budget():
            return state.context()
        notes, first = state.note, state.dropped // 2
        state.trim()
        if self.memory == "summary" and state.dropped // 2 > first:
            self._summarise(state, step, notes, state.steps[first:state.dropped // 2])
        return state.context(trimmed=True)

    def _summarise(self, state: _RunState, step: Step, notes: str, dropped: list[Step]) -> None:
        """memory="summary": the model's notes on the dropped steps become the note; on any failure,
        the digest."""
        limit, text = state.memory_limit() - len(_SUMMARY_HEADER) - 3, ""
        # no call with less room than this: a summary that short would hold less than the digest
        if limit < 100:
            problem = (f"the context budget leaves no room for a summary ({max(0, limit)} "
                       "characters)")
        else:
            # the prompt, then the task, the earlier notes and the dropped steps in full, the whole
            # cut to the context budget, which the model is known to take; about 6 characters a
            # word, and room to spare
            system = _SUMMARY_PROMPT.format(words=max(20, limit // 8))
            steps = "\n".join(_digest_line(step, state.calls, None) for step in dropped)
            request = _SUMMARY_REQUEST.format(task=state.messages[state.head - 1]["content"],
                                              notes=notes.strip() or "(none yet)", steps=steps)
            call = self._summary_call(state, [
                {"role": "system", "content": system},
                {"role": "user",
                 "content": _cut(request, max(1000, state.budget - len(system)), ends=True)}])
            step.summary_calls.append(call)
            text = (call.raw or "").strip()
            # why a summary reply cannot stand in for the dropped steps (None: it can)
            if call.raw is None:
                problem = f"the summary call failed: {call.error}"
            elif call.finish_reason == "length":
                problem = call.error = "the summary was cut off at the token limit"
            elif call.finish_reason == "repetition":
                problem = call.error = "the summary kept repeating itself"
            elif not text:
                problem = call.error = "the summary was empty"
            elif len(text) > limit:
                problem = call.error = (f"the summary was too long ({len(text)} characters, at "
                                        f"most {limit})")
            else:
                problem = call.error = None
        if problem is not None:
            step.notes.append(f"memory: {problem}; the digest of the dropped steps was "
                              "sent instead")
        else:
            state.note = f"\n\n{_SUMMARY_HEADER.format(n=state.dropped // 2)}\n{text}"
            step.notes.append(f"memory: the model summarised {len(dropped)} dropped step(s) in "
                              f"{len(text)} characters")
        _log.info("step %d: %s", step.index, step.notes[-1])

    def _summary_call(self, state: _RunState, request: list[dict]) -> _SummaryCall:
        """One model call for the summary, timed and counted against max_total_tokens; it never
        raises."""
        options = {}
        if self.max_seconds is not None and "max_seconds" in self._accepts:
            options["max_seconds"] = self._time_left(state)
        call, started = _SummaryCall(), _now()
        try:
            raw = self.llm.chat(request, **options)
            call.raw = raw if isinstance(raw, str) else ("" if raw is None else str(raw))
            reason = getattr(self.llm, "last_finish_reason", None)
            call.finish_reason = reason if isinstance(reason, str) else None
        except Exception as exc:  # LLMError, or whatever a custom client raises
            call.error = str(exc) if isinstance(exc, LLMError) else f"{type(exc).__name__}: {exc}"
        call.seconds = _now() - started
        if call.raw is None:
            return call                   # a failed call: no reply, no tokens to count
        counts = self._count_tokens(state, call.raw, sum(len(m["content"]) for m in request))
        call.prompt_tokens, call.completion_tokens = (counts["prompt_tokens"],
                                                      counts["completion_tokens"])
        return call

    def _options(self, state: _RunState) -> dict:
        """The per-call options for the next call: the ladder's rungs and what is left of
        max_seconds."""
        options: dict = {}
        schema = self._rung_schema(state)
        if schema is not None:
            options["response_schema"] = schema
            if "frequency_penalty" in self._accepts:
                options["frequency_penalty"] = self._CONSTRAINED_PENALTY
        # A final answer does not loop, and sampled hot a small model's answer is a coin toss
        # (docs/NOTES.md, "The answer rung").
        if state.hot and not state.answering():
            configured = getattr(self.llm, "temperature", None)
            options["temperature"] = (max(self._HOT_TEMPERATURE, configured)
                                      if _is_number(configured) else self._HOT_TEMPERATURE)
        if self.max_seconds is not None and "max_seconds" in self._accepts:
            options["max_seconds"] = self._time_left(state)
        return options

    def _first_call(self, state: _RunState) -> bool:
        """Whether the next call is the first of a run with tools and more than one step (with one,
        it must be able to answer): the tool rung's call, or a free one (_fits_no_tool)."""
        return not state.steps and len(self.tools) > 0 and self.max_steps > 1

    def _rung_schema(self, state: _RunState) -> Optional[dict]:
        """The response_schema of the next call: the tool rung (the first call of a run may only
        call a tool), the answer rung (the final shape alone), or the action schema once a reply
        failed."""
        if self.constrain == "never" or "response_schema" not in self._accepts:
            return None
        if self._first_call(state):
            schema = _tool_rung(self.tools)
            # A task that fits no tool may be answered at once, still in one JSON object: a small
            # model writes prose without a schema (docs/NOTES.md, "The tool rung").
            return schema if not state.fits_no_tool else dict(
                schema, anyOf=schema["anyOf"] + self.tools.action_schema()["anyOf"][-1:])
        # The answer rung: the final shape without its "thought". A model whose last reply copied
        # "thought": "<why>" goes on from that thought to "answer": "<the answer>"; with no thought
        # to write, it answers from the result (docs/NOTES.md, "The answer rung"). A new dict each
        # call, as the action schema is: a client may change what it is given.
        if state.answering():
            return {"type": "object",
                    "properties": {"type": {"const": "final"},
                                   "answer": {"type": "string", "minLength": 1}},
                    "required": ["type", "answer"], "additionalProperties": False}
        return state.schema

    def _time_left(self, state: _RunState) -> Optional[float]:
        """Seconds left of max_seconds (None: no limit); what a model call or a tool may take at
        most."""
        if self.max_seconds is None:
            return None
        return max(0.0, self.max_seconds - (_now() - state.started))

    def _overflowed(self, state: _RunState, step: Step, exc: LLMError) -> None:
        """Set a context budget for the rest of this run; raise LLMError with a hint when that
        cannot help."""
        state.overflows += 1
        sent = state.head_chars + state.tail_chars
        if state.budget is not None or state.overflows > 1:
            raise LLMError(f"{exc} (the conversation still does not fit the model's context "
                           "window; set a smaller max_context_chars)", exc.status,
                           exc.kind) from None
        n_ctx, n_prompt = exc.n_ctx, exc.n_prompt_tokens
        if all(_is_int(n) and n > 0 for n in (n_ctx, n_prompt)):
            state.budget = sent * n_ctx // n_prompt
        else:
            state.budget = sent * 3 // 4
        if state.head_chars >= state.budget:
            raise LLMError(f"{exc} (the system prompt and the task alone, {state.head_chars} "
                           "characters, do not fit the model's context window, about "
                           f"{state.budget} characters: shorten them or use a model with a longer "
                           "context)", exc.status, exc.kind) from None
        step.overflow_budget = state.budget
        step.notes.append(f"context overflow: max_context_chars={state.budget} for the rest of "
                          "this run; retried")
        _log.info("step %d: %s", step.index, step.notes[-1])

    # Acting on the reply: an answer, a call to run, a repeat, a reply that cannot be used
    def _act(self, state: _RunState, step: Step) -> Optional[str]:
        """Parse the reply; answer, or run the call (a repeat gets the earlier result, a third call
        of one tool on its own results the first), and send the observation."""
        try:
            action = self._parse(step, state)
        except ActionFormatError as exc:
            return self._format_error(state, step, exc)
        state.format_errors = 0
        step.action = action
        if action.kind == "final":
            state.answer = action.answer
            return "final"
        key = (action.name, _canonical(action.arguments))
        earlier = state.calls.get(key)
        started = (state.chain_start(action) if earlier is None and self.constrain != "never"
                   else None)
        if started is not None:   # not run: the model computes on past its task
            self._answer_rung(state, step, _PAST_TASK)
            state.calls[key] = started._replace(step=step.index)   # sent again, it is a repeat
            text = _IN_HAND.format(result=started.result)
        elif earlier is None:
            if action.name not in self.tools:
                self._climb(state, step, "the model called a tool that does not exist")
            result = self._run_tool(state, step, action)
            state.calls[key] = _Earlier(step.index, result.text, result.failed)
            text = (result.text if result.failed
                    else _returned(action.name, action.arguments, result.text))
        else:
            earlier = state.calls[key] = earlier._replace(repeats=earlier.repeats + 1)
            if earlier.repeats > self.max_repeats:
                step.error = (f"the call {action.name} with the same arguments was repeated "
                              f"{earlier.repeats} times")
                return "repeat_limit"
            text = self._repeated(state, step, earlier)
        if "extra_actions" in action.repairs:
            text = f"{text}\n{_ONE_ACTION}"
        return self._observe(state, step, text)

    def _repeated(self, state: _RunState, step: Step, earlier: _Earlier) -> str:
        """The observation for a repeated call; when the call had succeeded, or had failed and may
        not come again, the answer rung too."""
        if self.constrain == "never":
            return _REPEAT.format(step=earlier.step, result=earlier.result)
        if earlier.failed and earlier.repeats == self.max_repeats:   # the next repeat stops the run
            return self._give_up(state, step, earlier)
        # a deterministic loop on a failed call needs sampling
        if earlier.failed:
            self._sample_hotter(state, step, "a call that failed was repeated")
            return _REPEAT.format(step=earlier.step, result=earlier.result)
        self._answer_rung(state, step, "a call that already succeeded was repeated")
        return _IN_HAND.format(result=earlier.result)

    def _give_up(self, state: _RunState, step: Step, earlier: _Earlier) -> str:
        """The last repeat allowed of a failed call: the answer rung, with the model's own thought.

        Told only that the call will not work, a small model answers "Yes, I can do that"; with
        its thought quoted last, it answers from it (docs/NOTES.md, "The answer rung")."""
        self._answer_rung(state, step, "a call that failed was repeated for the last time allowed")
        text = _GIVE_UP.format(step=earlier.step)
        thought = (step.action.thought or "").strip()
        return _YOUR_THOUGHT.format(text=text, thought=_cut(thought, 300, one_line=True)) \
            if thought else text

    def _answer_rung(self, state: _RunState, step: Step, why: str) -> None:
        state.answer_rung = step.index + 1
        schema = (" (a response_schema of the final shape alone)"
                  if "response_schema" in self._accepts else "")
        if state.hot:
            schema += ", at the client's own temperature"
        self._rung(step, f"{why}: the next call asks for the final answer{schema}")

    def _parse(self, step: Step, state: _RunState) -> Action:
        """parse_action, with what the client reported: a reply that repeated itself or was cut off
        is refused, and so is one that copied the prompt or answers nothing."""
        if step.finish_reason == "repetition":
            raise ActionFormatError(_REPEATED, step.raw)
        try:
            action = parse_action(step.raw)
        except ActionFormatError:
            if _repeating_tail(step.raw):  # a whole reply that arrived without the streaming check
                raise ActionFormatError(_REPEATED, step.raw) from None
            if step.finish_reason == "length":
                raise ActionFormatError(_CUT_OFF, step.raw) from None
            raise
        action = self._own_answer(state, step, self._final_as_call(action))
        # the example only where the run's system prompt is the one that shows it
        example = self._example if state.messages[0]["content"] == self.system_prompt else None
        task = state.messages[state.head - 1]["content"]
        copied = _copied(action, example, state.user_text, task)
        if copied is not None:
            raise _refuse(copied, _CALL_SHAPE if action.kind == "tool_call" else _BOTH_SHAPES)
        if action.kind == "final" and not action.answer.strip():
            raise _refuse(_EMPTY_ANSWER, _FINAL_SHAPE)
        if action.kind == "final" and _repeats_a_refusal(action.answer, state.steps):
            raise _refuse(_COPIED_REFUSAL, _FINAL_SHAPE)
        # An answer built on a sum the model got wrong is sent back once with the right result,
        # and the next call may only answer (docs/NOTES.md, "The loop"). Not after other unusable
        # replies, at the last step or at the answer rung; and if no other answer comes, this one
        # is the run's (_finish).
        if (action.kind == "final" and step.index < self.max_steps and not state.format_errors
                and self.max_format_errors and not state.answering()
                and state.refused_answer is None):
            for where, text in (("answer", action.answer), ("thought", action.thought or "")):
                problem = _miscalculated(text, where, action.answer, task)
                if problem:
                    state.refused_answer = step.index, action.answer
                    self._answer_rung(state, step, "a final answer's sum was wrong")
                    raise _refuse(problem, _FINAL_SHAPE)
        return action

    def _final_as_call(self, action: Action) -> Action:
        """The action; a call to "final" or "final_answer" with an answer alone as its arguments,
        where no tool has that name, is the final answer written as a call (docs/NOTES.md, "The
        final answer as a call"), tagged ``final_as_call``; any other call to it is refused with
        the final shape. A final answer beside such a name (``"name": "final", "answer": …``) is
        refused where a tool has that name: the tool's arguments go in "arguments"."""
        if action.kind == "final" and action.name in self.tools:
            raise _refuse(f'"{action.name}" is a tool: put its arguments in "arguments"; to give '
                          'the final answer, use "type": "final" and no "name"')
        if (action.kind != "tool_call" or action.name in self.tools
                or _Keys.spelling(action.name) not in _Keys.FINAL_NAMES):
            return action
        answer = action.arguments.get("answer")
        if not set(action.arguments) <= {"answer", "thought"} or answer in _Keys.EMPTY:
            raise _refuse(f'"{action.name}" is not a tool; to give the final answer, use "type": '
                          '"final" with your answer in "answer"', _FINAL_SHAPE)
        repairs = action.repairs + ("final_as_call",)
        if not isinstance(answer, str):    # as a final answer's: a number, a list, turned into text
            answer, repairs = json.dumps(answer, ensure_ascii=False), repairs + ("answer_not_text",)
        thought = action.arguments.get("thought")
        return Action("final", answer=answer, repairs=repairs,
                      thought=thought if isinstance(thought, str) else action.thought)

    def _own_answer(self, state: _RunState, step: Step, action: Action) -> Action:
        """The action; from the answer rung on, a final answer without the rung's words when the
        model wrapped it in them (checked for copies after that)."""
        if action.kind != "final" or not state.answer_rung or state.answer_rung > step.index:
            return action
        # The rung's words before and after the result, whatever the spaces between them: a model
        # that copies wraps its answer in them. The tail is searched for, then the spaces before
        # it stripped: a pattern that starts with \s* retries from every space of a long run.
        head, tail = (r"\s+".join(map(re.escape, words.split()))
                      for words in _IN_HAND.split("{result}"))
        own = re.sub(r"\A\s*" + head + r"\s*", "", action.answer, count=1, flags=re.I)
        found = re.search(tail + r"\s*\Z", own, re.I)
        own = own[:found.start()].rstrip() if found else own
        # and the ask that ends a refusal, with the start of its shape ("… is 395. Reply with …")
        asked = own.find(_ASK_FOR_SHAPE.strip())
        after = own[asked + len(_ASK_FOR_SHAPE.strip()):].strip()
        if asked > 0 and (not after or after.startswith('{"type"') or after == "{"):
            own = own[:asked].rstrip(" .:;,")
        if own == action.answer or not own.strip():     # nothing would be left: the answer stays
            return action
        step.notes.append("the answer held the agent's own words around the result; they were "
                          "left out of it")
        _log.info("step %d: %s", step.index, step.notes[-1])
        return replace(action, answer=own)

    def _run_tool(self, state: _RunState, step: Step, action: Action) -> _ToolResult:
        started = _now()
        tool = self.tools.get(action.name) if self.on_wait is not None else None
        told = tool is not None and not tool.confirm   # a confirmation prompt needs the terminal
        if told:
            limits = [limit for limit in (self.tools.default_timeout if tool.timeout is None
                                          else tool.timeout, self._time_left(state))
                      if limit is not None]
            self._wait(step, f"running {action.name}"
                             + (f" (limit {min(limits):.3g} s)" if limits else ""))
        try:
            # a copy: what the tool, confirm or an overridden call does to its arguments is not the
            # model's call, which its observation, the trace and the digest show
            result = self.tools._loop_result(action.name, copy.deepcopy(action.arguments),
                                             confirm=self.confirm,
                                             max_chars=self.max_observation_chars,
                                             timeout=self._time_left(state))
        finally:
            if told:
                self._wait(step, None)
        step.tool_seconds = _now() - started
        _log.debug("step %d: tool %s took %.3f s", step.index, action.name, step.tool_seconds)
        if result.failed:
            step.error = result.text
        return result

    def _format_error(self, state: _RunState, step: Step, exc: ActionFormatError) -> Optional[str]:
        state.format_errors += 1
        step.error = str(exc)
        self._climb(state, step, "a reply could not be used")
        state.failed.add(step.raw)
        if state.format_errors > self.max_format_errors:
            return "format_errors"
        left = self.max_format_errors - state.format_errors + 1
        # The last attempt asks for the final answer: a model that cannot write a call in three
        # tries rarely writes one in the fourth, and an answer is more use than format_errors
        # (docs/NOTES.md, "The answer rung").
        if left == 1 and self.constrain != "never":
            self._answer_rung(state, step, "the next unusable reply would stop the run")
        return self._observe(state, step, _ATTEMPTS_LEFT.format(error=step.error, left=left,
                                                                s="s" if left != 1 else ""))

    # The decoding ladder, and what the hook hears
    def _climb(self, state: _RunState, step: Step, why: str) -> None:
        """The decoding ladder, after a failed reply or an unknown tool: send the action schema,
        whose names are the registered ones; when a failed reply repeats, sample hotter."""
        if self.constrain == "never":
            return
        # A constrained reply that looped is as deterministic as one sent twice: both call for
        # sampling.
        looped = state.schema is not None and step.finish_reason == "repetition"
        if state.schema is None and "response_schema" in self._accepts:
            state.schema = self.tools.action_schema()
            penalty = (f" with frequency_penalty={self._CONSTRAINED_PENALTY}"
                       if "frequency_penalty" in self._accepts else "")
            self._rung(step,
                       f"{why}: from the next call on, the action schema is sent "
                       f"(response_schema){penalty}")
        if looped or step.raw in state.failed:
            self._sample_hotter(state, step, "a constrained reply looped" if looped else
                                "the same failed reply came twice")

    def _sample_hotter(self, state: _RunState, step: Step, why: str) -> None:
        if not state.hot and "temperature" in self._accepts:
            state.hot = True
            self._rung(step,
                       f"{why}: from the next call on, a temperature of at least "
                       f"{self._HOT_TEMPERATURE} is sent")

    def _rung(self, step: Step, note: str) -> None:
        step.notes.append(f"decoding ladder: {note}")
        _log.info("step %d: %s", step.index, step.notes[-1])

    def _wait(self, step: Step, what: Optional[str]) -> None:
        if self.on_wait is not None:
            self.on_wait(step.index, what)

    # Ending a step, and the run
    def _observe(self, state: _RunState, step: Step, text: str) -> Optional[str]:
        """Send text back as this step's observation; "max_steps" when that was the last step
        allowed."""
        step.observation = _observation(text, step.index, self.max_steps)
        state.append("user", step.observation)
        if (step.index + 1 == self.max_steps and self.constrain != "never"
            and state.answer_rung <= step.index):
            self._answer_rung(state, step, "the next call is the last one allowed")
        return "max_steps" if step.index >= self.max_steps else None

    def _finish(self, state: _RunState, stop: str) -> AgentResult:
        refused = state.refused_answer if stop != "final" else None
        if refused is not None:     # no other answer came: the history ends with this one
            state.answer = refused[1]
            reply = next(s.raw for s in state.steps if s.index == refused[0])
            if state.messages[-1]["role"] == "user":
                state.append("assistant", reply)
            else:                   # in place of the unusable reply that ended the run
                state.messages[-1] = {"role": "assistant", "content": reply}
        usage = dict(state.usage,
                     total_tokens=state.usage["prompt_tokens"] + state.usage["completion_tokens"],
                     estimated_steps=list(state.usage["estimated_steps"]))
        last_error = state.steps[-1].error if state.steps else None
        summary = _STOPS[stop].summary.format(
            steps=len(state.steps), max_steps=self.max_steps, max_repeats=self.max_repeats,
            max_format_errors=self.max_format_errors, max_seconds=self.max_seconds,
            tokens=usage["total_tokens"], max_total_tokens=self.max_total_tokens, error=last_error)
        if refused is not None:
            summary, stop = (f"answered in step {refused[0]}, whose sum was wrong; then {summary}",
                             "final")
        return AgentResult(answer=state.answer if stop == "final" else None, stop_reason=stop,
                           steps=state.steps, messages=state.messages, usage=usage,
                           seconds=_now() - state.started, summary=summary)


# -- Loop, the run's state: calls made, memory, copy checks (skip on first read) -------
# _RunState holds what one run accumulates; trim() drops old steps for the context budget, and a
# digest line each (or the model's summary) stands in for them. _copied and _description_copy find
# a reply that copies the prompt or a tool's example instead of doing the task.

class _Earlier(typing.NamedTuple):
    """A call already run in this run (internal): the step that ran it, its result, how often it
    came again."""

    step: int
    result: str
    failed: bool          # the call failed (its result is the ERROR text)
    repeats: int = 0


@dataclass
class _RunState:
    """What one run accumulates (internal)."""

    messages: list[dict]
    head: int                             # messages[:head] (system ... task) are always sent
    head_chars: int
    started: float
    steps: list[Step] = field(default_factory=list)
    tail_chars: int = 0                   # characters in messages[head + dropped:]
    dropped: int = 0                      # messages after the head left out of what is sent
    format_errors: int = 0                # unparseable replies in a row
    # a final answer sent back once for a wrong sum: its step, and the answer
    refused_answer: Optional[tuple[int, str]] = None
    calls: dict = field(default_factory=dict)   # (name, canonical arguments) -> _Earlier
    usage: dict = field(default_factory=lambda: {"prompt_tokens": 0, "completion_tokens": 0,
                                                 "estimated": False, "estimated_steps": []})
    answer: Optional[str] = None
    budget: Optional[int] = None  # max_context_chars for this run; a context overflow may set one
    overflows: int = 0                    # context overflows reported by the client
    schema: Optional[dict] = None  # the action schema, sent once the ladder's first rung is taken
    hot: bool = False                     # second rung: a raised temperature is sent
    failed: set[str] = field(default_factory=set)    # raw replies that could not be parsed
    answer_rung: int = 0                  # the step whose model call may send only a final answer
    fits_no_tool: bool = False            # the task's first call is free (_fits_no_tool)
    memory: str = "digest"  # what stands in for dropped steps: digest, summary or none
    # joined to the task while steps are dropped ("\n\n" and the digest, the summary or a count),
    # counted in what is sent
    note: str = ""
    digest: list[str] = field(default_factory=list)  # one line per dropped step
    digest_chars: int = 0                 # characters in the digest's lines, line breaks included

    _TRIM_TO = 0.6  # over budget, trim to this share of it, so later calls share their prefix
    _MEMORY_SHARE = 0.2  # the digest or the summary takes at most this share of the context budget
    _DIGEST_CALL_CHARS = 60    # a digest line shows this much of the call ...
    _DIGEST_RESULT_CHARS = 100  # ... and this much of the start of its result

    def append(self, role: str, content: str) -> None:
        """Add a message to the conversation and count its characters."""
        self.messages.append({"role": role, "content": content})
        self.tail_chars += len(content)

    def user_text(self) -> str:
        """The text of the conversation's user messages: what the model was given to work from,
        each observation without the call it names (the model's own words, not given to it)."""
        results = {step.observation: _observation_result(step.observation,
                                                         (step.action.name, step.action.arguments))
                   for step in self.steps if step.observation and step.action is not None
                   and step.action.kind == "tool_call"}
        return "\n".join(results.get(m["content"], m["content"]) for m in self.messages
                         if m["role"] == "user")

    def chain_start(self, action: Action) -> Optional[_Earlier]:
        """The call that began a chain, when this call would compute on past the task: the chain's
        first call held every number of the task, and this is the third call in a row to its tool,
        each earlier one succeeded with a result that is one number, and each next call's
        arguments hold that number ("What is 17 * 23 + 4?": "(17*23)+4" gives 395, then "395+22"
        417, then "417+29"). A step-by-step computation, whose first call leaves out a number of
        the task, and a lookup (ids, listings, dates) are no chain (docs/NOTES.md, "The answer
        rung")."""
        calls = [s.action for s in self.steps
                 if s.action is not None and s.action.kind == "tool_call"][-2:]
        ran = [(a, self.calls.get((a.name, _canonical(a.arguments)))) for a in calls]
        if len(ran) < 2 or any(r is None or r.failed or a.name != action.name for a, r in ran):
            return None
        (first, started), (second, fed) = ran
        task = self.messages[self.head - 1]["content"] if self.head else ""

        def numbers(value: Any) -> set:
            texts = [value] if isinstance(value, str) else [str(v) for _, v in _leaves(value)]
            return {n for text in texts for n in re.findall(r"\d+(?:\.\d+)?", str(text))}

        def feeds(result: _Earlier, then: dict) -> bool:
            return (re.fullmatch(r"\s*-?\d+(?:\.\d+)?\s*", result.result) is not None
                    and result.result.strip().lstrip("-") in numbers(then))
        chained = (bool(numbers(task)) and numbers(task) <= numbers(first.arguments)
                   and feeds(started, second.arguments) and feeds(fed, action.arguments))
        return started if chained else None

    def answering(self) -> bool:
        """Whether the next model call is the answer rung's (it may send only a final answer)."""
        return self.answer_rung == len(self.steps) + 1

    def estimated(self) -> None:
        """Note that the step under way (not yet in steps) has token counts estimated, not
        reported."""
        self.usage["estimated"] = True
        if len(self.steps) + 1 not in self.usage["estimated_steps"]:
            self.usage["estimated_steps"].append(len(self.steps) + 1)

    def over_budget(self) -> bool:
        """Whether what the next call would send is longer than the context budget."""
        return (self.budget is not None
                and self.head_chars + len(self.note) + self.tail_chars > self.budget)

    def trim(self) -> None:
        """Drop the oldest step pairs down to about 60% of the budget, and write the note that
        stands in for them.

        Dropping well below the budget at once lets the calls until the next trim share
        their prefix, so a server can reuse its processed prompt; each pair is dropped
        once, and its digest line written once (amortised O(1) per step). The system
        prompt, the task and the latest pair are always kept.
        """
        target = self.budget * self._TRIM_TO
        while (self.head_chars + self._note_room() + self.tail_chars > target
               and len(self.messages) - self.head - self.dropped > 2):
            first = self.head + self.dropped
            self.tail_chars -= (len(self.messages[first]["content"])
                                + len(self.messages[first + 1]["content"]))
            if self.memory != "none":
                line = _digest_line(self.steps[self.dropped // 2], self.calls,
                                    self._DIGEST_RESULT_CHARS)
                self.digest.append(line)
                self.digest_chars += len(line) + 1
            self.dropped += 2
        self.note = (self.digest_note() if self.memory != "none"
                     else f"\n\n{_DROPPED_NOTE.format(n=self.dropped // 2)}")

    def _note_room(self) -> int:
        """What the note will take once the pairs dropped so far are in it (the summary's room: the
        digest's)."""
        if self.memory == "none":
            return len(_DROPPED_NOTE) + 2
        return min(self.memory_limit(), len(_DIGEST_HEADER) + 3 + self.digest_chars)

    def memory_limit(self) -> int:
        """The most characters the note (the digest or the summary, with its header) may take.

        A share of the budget, and no more than the budget leaves beside the head and the steps
        still sent.
        """
        return max(0, min(int(self.budget * self._MEMORY_SHARE),
                          self.budget - self.head_chars - self.tail_chars))

    def digest_note(self) -> str:
        """The digest of every dropped step: one line each, bounded, the same for the same
        history."""
        header = _DIGEST_HEADER.format(n=self.dropped // 2)
        lines, limit = self.digest, self.memory_limit() - len(header) - 3
        if self.digest_chars <= limit:
            return f"\n\n{header}\n" + "\n".join(lines)
        # Over the limit, the first lines and the newest that fit: half the room goes to the first
        # lines and the rest to the newest, as a long observation keeps its head and tail; a line
        # longer than half the room is cut to it, so the first and the newest line show when
        # anything does. One line between says how many were left out.
        room = limit - len(_DIGEST_GAP.format(n=len(lines))) - 1
        width = room // 2 - 1                 # a line and its line break in half the room
        head = tail = used = 0
        while head < len(lines) and used + min(len(lines[head]), width) + 1 <= room // 2:
            used += min(len(lines[head]), width) + 1
            head += 1
        while head + tail < len(lines) and used + min(len(lines[-1 - tail]), width) + 1 <= room:
            used += min(len(lines[-1 - tail]), width) + 1
            tail += 1
        kept = [_cut(line, width) for line in lines[:head] + lines[len(lines) - tail:]]
        gap = _DIGEST_GAP.format(n=len(lines) - head - tail)
        return f"\n\n{header}\n" + "\n".join(kept[:head] + [gap] + kept[head:])

    def context(self, trimmed: bool = False) -> list[dict]:
        """What is sent: the whole conversation, or, once steps are dropped, the note in their
        place.

        The note (the digest, the summary or a count) is joined to the task's message and
        stays the same until the next trim, so the calls between two trims share their prefix.
        ``trimmed``: this call trimmed, and a latest reply still over the trim's target is
        shortened.
        """
        sent = self.messages
        if self.dropped:
            task = self.messages[self.head - 1]
            joined = {"role": task["role"], "content": task["content"] + self.note}
            sent = (self.messages[:self.head - 1] + [joined]
                    + self.messages[self.head + self.dropped:])
        return self._shorten_latest(sent) if trimmed else sent

    def _shorten_latest(self, sent: list[dict]) -> list[dict]:
        """A trim that left only the latest pair over its target: a reply that ran to the token
        limit.

        That reply is sent as its head and tail, cut to the trim's target; result.messages keeps it
        whole.
        """
        over = (self.head_chars + len(self.note) + self.tail_chars
                - int(self.budget * self._TRIM_TO))
        if over <= 0 or len(sent) <= self.head or sent[-2]["role"] != "assistant":
            return sent
        reply = sent[-2]["content"]
        kept = _cut(reply, max(200, len(reply) - over), ends=True)
        return sent[:-2] + [{"role": "assistant", "content": kept}, sent[-1]]


@dataclass
class _SummaryCall:
    """A model call that summarised the steps a trim dropped (memory="summary"), kept on the step it
    came before."""

    raw: Optional[str] = None             # the reply; None if the call failed
    # the client's finish_reason for this reply, when it reports one
    finish_reason: Optional[str] = None
    seconds: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    # why the digest was sent instead: the call's error, or what was wrong with its reply; None when
    # the summary was used
    error: Optional[str] = None


def _digest_line(step: Step, calls: dict, result_chars: Optional[int]) -> str:
    """A dropped step as ``index. name(arguments) → the start of its result``; a repeat or an unread
    reply says so.

    ``calls`` is the run's (name, canonical arguments) -> _Earlier: a call first run in another step
    is a repeat. A tool's error shows as its result does, starting with ``ERROR:``.
    """
    action = step.action
    if action is None or action.kind != "tool_call":
        return f"{step.index}. {_DIGEST_UNREADABLE}"
    arguments = ", ".join(f"{key}={json.dumps(value, ensure_ascii=False, default=str)}"
                          for key, value in action.arguments.items())
    call = _cut(f"{action.name}({arguments})", _RunState._DIGEST_CALL_CHARS, one_line=True)
    earlier = calls.get((action.name, _canonical(action.arguments)))
    if earlier is not None and earlier.step != step.index:
        return f"{step.index}. {call} → {_DIGEST_REPEAT.format(step=earlier.step)}"
    result = _observation_result(step.observation or "", (action.name, action.arguments)) or ""
    if any(_PAST_TASK in note for note in step.notes):
        result = _PAST_TASK
    return f"{step.index}. {call} → {_cut(result, result_chars, one_line=True)}"


def _repeats_a_refusal(answer: str, steps: list) -> bool:
    """Whether an answer holds, whole, the problem that refused an earlier reply of the run
    (spaces, quotes and case aside), one of 30 characters or more: a model read the refusal as the
    answer ("The key 'thought' appears twice with different values; write each key once.")."""
    def plain(text: str) -> str:
        return " ".join(re.sub(r"[\"'`]", "", text).lower().split())
    problems = (plain(_asked_problem(s.error)) for s in steps if s.action is None and s.error)
    return any(len(problem) >= 30 and problem in plain(answer) for problem in problems)


# A sum written out (_miscalculated): a run of digits, operators, brackets and spaces; then what
# it is said to equal, and nothing after that goes on with the arithmetic ("= 25%", "= 4 + 1",
# "= 6e5", "= 11:15").
_SUM_RUN = re.compile(r"[\d.,()\s+\-*/\u00d7\u00f7]+")
_NUMBER = r"(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)"   # "1,234.5", "12", ".5"
_SUM = re.compile(rf"(?:\(\s*)*{_NUMBER}(?:\s*\))*"
                  rf"(?:\s*[-+*/\u00d7\u00f7]\s*(?:\(\s*)*{_NUMBER}(?:\s*\))*)+")
_SAID_TO_EQUAL = re.compile(rf"(?:=(?![=>])|equals\b|is equal to\b)\s*(-?{_NUMBER})"
                            r"(?![eE]?[ \t]*[-+*/\u00d7\u00f7^%(:\d?]"
                            r"|[ \t]*(?:percent|per[ \t]*cent|pct)\b|[ \t]*[A-Za-z]+\.?[ \t]*\d)")
# a sentence that says a sum is wrong quotes it ("17 * 23 + 4 = 417 is false")
_GAINSAID = re.compile(r"(?i)\b(?:not|no|false|wrong|incorrect|untrue|isn't)\b")


def _miscalculated(text: str, where: str, answer: str, given: str = "") -> Optional[str]:
    """The problem to send back for the first sum in ``text`` whose result is wrong ("17 * 23 +
    4 = 417"), or None; ``where`` names the text. Let be: a sum whose right result ``answer``
    shows as a number, or the text does after it ("17 * 23 = 401. No: 391"), and one that
    ``given`` (the task) holds, claim and all.

    Only numbers, ``+ - * / × ÷`` and brackets count as a sum (at most 100 characters),
    evaluated by safe_eval; a result is right when it is the sum rounded or cut to its own
    decimals, to its trailing zeros ("= 1,160"), or to thousands, millions, … ("= 7 million").
    Let be, as part of something else: a sum right after a letter, a quote or another sign
    ("x2 + 3", "10:30 + 45", "\\times 3 + 5"), after a word that follows a number ("3 times 4 +
    2", "20% of 50 + 10"), one with a range or a date in it ("18-25", "12/25 - 12/11"), one in a
    sentence that says no to something, one that may have dots as thousands separators ("1.000 +
    500 = 1.500"), and a result followed by a unit and a number ("= 2 h 5 min") or by "percent".
    Each run of sum characters is read once, and what stands around it within 200 characters, so
    the work is linear in the text; only the first hundred sums are evaluated.

    >>> _miscalculated("24 + 21 + 6 + 8 = 79 km", "thought", "79 km")
    'your thought says 24 + 21 + 6 + 8 = 79, but 24 + 21 + 6 + 8 is 59'
    >>> [_miscalculated(t, "answer", t) for t in ("10 / 3 = 3.33", "x * 3 + 4 = 10", "5 = 5",
    ...                                            "3 times 4 + 2 = 14", "2 + 2 = 5 is false")]
    [None, None, None, None, None]
    """
    read, given = 0, re.sub(r"\s", "", given)
    for run in _SUM_RUN.finditer(text):
        said = _SAID_TO_EQUAL.match(text, run.end())
        # the sum is the run's last part after a sentence's ". " or ", " ("4.85. 2 * 4.85"), or, if
        # that is not one, its last line, a "*" bullet aside ("* 17 * 23"; "- 5 + 3" may be -5 + 3)
        expression = re.split(r"[.,]\s", run.group())[-1].strip()
        if len(expression) > 100 or not _SUM.fullmatch(expression):
            expression = re.sub(r"\A\*\s+", "", expression.split("\n")[-1].strip())
        if said is None or len(expression) > 100 or not _SUM.fullmatch(expression):
            continue
        start = run.start() + run.group().rindex(expression)
        # what stands around it, within 200 characters: the words before, and its sentence
        head, tail = text[max(0, start - 200):start], text[said.end():said.end() + 200]
        # the words before it on its line, a bullet aside, and none after a sentence's end
        words = re.sub(r"\A\s*\*\s+", "", head.split("\n")[-1]).split()[-2:]
        words = [] if words and words[-1][-1] in ".!?" else words
        before = head[-1:]
        sentence = re.split(r"[.!?\n]\s", head)[-1] + re.split(r"[.!?\n]\s|[?]", tail)[0]
        if ((before and not before.isspace()) or re.search(r"\d-\d|\d/\d.*\d/\d", expression)
                or (words and not words[-1].rstrip(",;:!").isalpha())
                or (words and len(words[-1].rstrip(",;:!")) == 1)
                or (len(words) > 1 and re.search(r"\d", words[-2]))
                or tail[:1] == "?" or _GAINSAID.search(sentence)):
            continue
        if re.sub(r"\s", "", f"{expression}={said.group(1)}") in given:
            continue
        read += 1
        if read > 100:         # the first hundred sums: the work is bounded whatever the reply
            break
        claimed = said.group(1).replace(",", "")
        # "1.000 + 500 = 1.500" may be a thousand and five hundred
        if re.search(r"\d\.\d{3}(?!\d)", f"{expression} {claimed}"):
            continue
        try:
            value = safe_eval(expression.replace(",", "").replace("\u00d7", "*")
                              .replace("\u00f7", "/"))
        except UnsafeExpression:       # division by zero
            continue
        if not (abs(value) < 1e15 and len(claimed) < 18):
            continue
        decimals = len(claimed.partition(".")[2])
        zeros = 0 if decimals else len(claimed) - len(claimed.rstrip("0"))
        room = max(10 ** -decimals, 10 ** zeros / 2 if zeros else 0)   # rounded, or cut
        # rounded to its own last digit, or, for a value that large, to thousands, millions, …
        if any(abs(value - float(claimed) * 10 ** scale) < room * 10 ** scale
               for scale in (0, 3, 6, 9, 12) if not scale or abs(value) >= 10 ** scale):
            continue
        shown = f"{value:.10g}" if isinstance(value, float) else str(value)
        if any(re.search(rf"(?<![\d.]){re.escape(shown)}(?![\d]|\.\d)", later.replace(",", ""))
               for later in (answer, text[said.end():])):
            continue
        return _MISCALCULATED.format(where=where, claim=f"{expression} = {said.group(1)}",
                                     expression=expression, value=shown)
    return None


def _copied(action: Action, example: Optional[_Example], seen: Callable[[], str], task: str
            ) -> Optional[str]:
    """What of the prompt a reply copied in place of its own content (placeholders, the worked
    example), or None; ``seen()`` is the text of the conversation's user messages, ``task`` the
    task's message.

    A copied thought is let through: it runs nothing, and refusing it refused calls that were
    right. A placeholder the task names (``echo "..."``) is the task's value, not a copy; the
    task alone counts, since the refusals the model is sent quote the placeholders."""
    arguments = [(f'argument "{key}"', value) for key, value in _leaves(action.arguments)]
    for where, value in [("answer", action.answer), ("tool name", action.name)] + arguments:
        # one of the prompt's placeholders, in any case, or an ellipsis however it is typed ("...",
        # "....", "…")
        shown = value.strip() if isinstance(value, str) else None
        if (shown is not None and (shown.lower() in _PLACEHOLDERS
                                   or (len(shown) > 1 and not shown.strip(".\u2026")))
                and shown.lower() not in task.lower()):
            return _COPIED_PLACEHOLDER.format(where=where, value=shown)
    if example is None:
        return None
    # its answer, or one of its thoughts written as the answer ("2 * 29 EUR + 22 EUR = 80 EUR.")
    texts = {example.final["answer"], example.final["thought"],
             *(c["thought"] for c, _ in example.calls)}
    if action.kind == "final" and action.answer.strip() in texts:
        return _COPIED_ANSWER
    if any((action.name, action.arguments) == (c["name"], c["arguments"])
           for c, _ in example.calls):
        return _COPIED_CALL
    # An example's argument in a registered tool runs a call about the example's task, not the
    # model's (docs/NOTES.md, "The prompt"). It is one only when nothing the model was given
    # names the example's subjects (a task, or a tool result, about the Louvre may ask for that).
    queries = {v.strip().lower() for c, _ in example.calls for _, v in _leaves(c["arguments"])}
    for where, value in arguments:
        if (isinstance(value, str) and value.strip().lower() in queries
                and not any(s.lower() in seen().lower() for s in example.subjects)):
            return _COPIED_ARGUMENT.format(where=where)
    return None


def _tool_rung(registry: ToolRegistry) -> dict:
    """The tool rung's schema: a call of a registered tool, with its arguments; and, with two tools
    or more, a call of a name that is no tool, with no arguments, which the loop does not run
    (``Agent._named``).

    Under the registered names alone, the first letters the model writes decide: a model that
    wants get_employee, made to go on from "get_", gets a get_ tool that does not fit. The other
    name's arguments are empty: as any object, a tiny model wrote a schema into them until it was
    cut off (docs/NOTES.md, "The tool rung")."""
    schema = registry.action_schema()   # with its $defs: the calls may refer to them
    calls = schema["anyOf"][:-1]
    if len(calls) > 1:
        other = copy.deepcopy(calls[0])
        other["properties"].update(
            name={"type": "string", "pattern": _none_of(t.name for t in registry)},
            arguments={"type": "object", "properties": {}, "additionalProperties": False})
        calls.append(other)
    return dict(schema, anyOf=calls)


def _none_of(names: Iterable[str]) -> str:
    """A regular expression of the tool names (letters, digits, "_" and "-") that are none of
    ``names``, for a schema's "pattern".

    A trie of the names, written out: at each of its nodes, a character that no name goes on
    with, then any name's characters, or one that a name does, then the rest of the pattern from
    there. No lookahead, "." or bounded repeat (llama.cpp's grammars take no lookahead, its "."
    lets a string end in a quote, and many "{0,n}" fail to parse); only a name's characters, so no
    name it takes is refused as a call written into a name, or repaired into a registered one
    (" search" is "search").

    >>> [bool(re.fullmatch(_none_of(["get", "get_price"]), s)) for s in ("get", "get_", "get_age")]
    [False, True, True]
    """
    alphabet = "-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz"

    def but(taken: set) -> str:   # a class of the alphabet's characters but these, as ranges
        runs: list = []
        for char in (c for c in alphabet if c not in taken):
            if runs and ord(char) == ord(runs[-1][-1]) + 1:
                runs[-1] += char
            else:
                runs.append(char)
        return "[" + "".join(r if len(r) < 3 else f"{r[0]}-{r[-1]}" for r in runs) + "]"

    trie: dict = {}
    for name in names:
        node = trie
        for char in name:
            node = node.setdefault(char, {})
        node[""] = {}
    anything = but(set()) + "*"

    def rest(node: dict, first: bool = False) -> str:
        chars = sorted(c for c in node if c)
        group = "(" + "|".join([but(set(chars)) + anything]
                               + [c + rest(node[c]) for c in chars]) + ")"
        return group if first or "" in node else group + "?"

    return f"^{rest(trie, first=True)}$"


# English words a task and a tool share without meaning the same thing (_fits_no_tool), cut as
# _words cuts them; "now" is not one: a task about the present cannot be answered from memory
_COMMON_WORDS = frozenset(word[:5] for word in """about all also and any are been can could did does
each find for from get give has have how into its let make many more most much need one our please
right some tell than that the their then there these this those was were what when where which who
whom why will with would you your""".split())


def _words(text: str) -> set:
    """The words of text that say what it is about: three letters or more, lower-cased, each cut to
    its first five letters ("prices" and "price" are one), a word in "ies" also with "y" ("cities"
    is "city" too); the parts of a name are words ("get_price" and "getPrice": "get", "price")."""
    words = re.findall(r"[^\W\d_]{3,}", re.sub(r"([a-z])([A-Z])", r"\1 \2", text).lower())
    return {w[:5] for w in words} | {w[:-3] + "y" for w in words if w.endswith("ies")}


def _fits_no_tool(task: str, registry: ToolRegistry) -> bool:
    """True when the task is in English (it has a common English word), has no digit (arithmetic,
    or data to look up by), and shares no other word with any tool's name, description or
    parameters: then its first call is free (docs/NOTES.md, "The tool rung").

    A task in another language shares no word with English tools whatever it asks, so it keeps
    the rung."""
    task_words = _words(task)
    if re.search(r"\d", task) or not task_words & _COMMON_WORDS:
        return False
    listed = " ".join(x for t in registry
                      for x in [t.name, t.description, *_descriptions(t.parameters, True)]
                      if isinstance(x, str))
    return not (task_words - _COMMON_WORDS) & _words(listed)


def _sharing(name: str, registry: ToolRegistry) -> list:
    """The registered tools that share a word with ``name``: a word of their description or of
    their parameters, or of their own name that no other tool's name has ("get" of get_price, beside
    get_weather, tells neither); a word that more than half of the tools have tells none apart.

    Words are _words ("employees" is "emplo").

    >>> tools = ToolRegistry()
    >>> for name in ("get_price", "get_weather", "find_employee"):
    ...     _ = tools.register(lambda x: x, name=name, description=name.replace("_", " "))
    >>> _sharing("get_employees", tools), _sharing("getWeather", tools), _sharing("get_age", tools)
    (['find_employee'], ['get_weather'], [])
    """
    names = {t.name: _words(t.name) for t in registry}
    texts = {t.name: _words(" ".join(x for x in [t.description, *_descriptions(t.parameters, True)]
                                    if isinstance(x, str)))
             | (names[t.name] - set().union(*(w for n, w in names.items() if n != t.name)))
             for t in registry}
    common = {w for w in set().union(*texts.values())
              if sum(w in t for t in texts.values()) * 2 > len(texts)}
    words = _words(name) - common
    return [n for n, t in texts.items() if words & t]


def _description_copy(action: Action, registry: ToolRegistry, seen: Callable[[], str]
                      ) -> Optional[str]:
    """The examples of the called tool's description that a call's arguments only copy, each where
    no user message names it (``'get_weather's example "Rome"'``), or None.

    A model made to call a tool on a task that needs none copies it: get_weather({"city":
    "Rome"}) for "thank you" in French (docs/NOTES.md, "The tool rung")."""
    tool = registry.get(action.name) if action.kind == "tool_call" else None
    if tool is None:
        return None
    # the value after "e.g." in a description: quoted, or one word without its final stop
    eg = re.compile(r"""\be\.g\.,?\s+(?:"([^"]{1,100})"|'([^']{1,100})'|([^\s"']{1,100}?))
                        [.,;:)]{0,3}(?:\s|\Z)""", re.X)
    texts = (next(g for g in m.groups() if g) for text in _descriptions(tool.parameters)
             for m in eg.finditer(text))
    examples = {text.strip().lower(): text for text in texts}
    # every argument must be one: a call with a value of its own (the task's city, and the
    # example's unit) is the model's
    values = [str(value).strip().lower() for _, value in _leaves(action.arguments)]
    if not values or not all(v in examples and v not in seen().lower() for v in values):
        return None
    return " and ".join(f'{action.name}\'s example "{examples[v]}"' for v in dict.fromkeys(values))


def _descriptions(schema: Any, keys: bool = False) -> Iterable[str]:
    """Every description in a JSON Schema, and its examples' texts; with ``keys``, its properties'
    names too."""
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == "description" and isinstance(value, str):
                yield value
            elif key == "examples" and isinstance(value, list):
                yield from (f'e.g. "{v}"' for v in value if isinstance(v, (str, int, float)))
            else:
                if keys and key == "properties" and isinstance(value, dict):
                    yield from value
                yield from _descriptions(value, keys)
    elif isinstance(schema, list):
        for item in schema:
            yield from _descriptions(item, keys)


def _leaves(value: Any, key: str = "") -> Iterable:
    """(key, value) for every text, number or boolean inside nested arguments."""
    if isinstance(value, dict):
        for name, item in value.items():
            yield from _leaves(item, f"{key}.{name}" if key else str(name))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _leaves(item, f"{key}[{i}]")
    else:
        yield key, value


# -- Batch -----------------------------------------------------------------------------
# run_batch runs a task list through one Agent on a few threads that share its client;
# each result is appended to a JSON Lines file as its run ends, so a second call resumes

def run_batch(agent: Agent, tasks: Iterable[dict], *, workers: int = 4, out: Optional[str] = None,
              traces: Optional[str] = None,
              on_result: Optional[Callable[[dict], None]] = None) -> dict:
    """Run the tasks through ``agent`` on ``workers`` threads that share its client; the summary.

    A task is ``{"id": text or number, "task": text}``, with an optional ``"expect"``: a number the
    answer must hold (within a relative 1e-6) or a text it must contain, ignoring case; other
    fields are copied to its result. ``tasks`` is read as the workers need it, so a generator keeps
    memory flat. Each result (the task's fields, ``solved`` when there is an ``expect``,
    ``stop_reason``, ``answer``, ``steps``, ``format_errors``, ``prompt_tokens``,
    ``completion_tokens``, ``estimated_tokens``, ``seconds``, ``error`` and, with ``traces``,
    ``trace``) goes to ``on_result``, in this thread, as its run ends.

    ``out`` (a path): each result is appended there as one JSON line and flushed,
    and a task whose id is already there is skipped, so a second call resumes; a
    cut-off last line (a crash in mid-write) is dropped and its task runs again. The
    call holds ``out`` locked (``flock``, where the system has it) until it returns.
    ``traces`` (a directory): each whole result is saved there (``AgentResult.save``),
    one file per id (``_trace_name``), so ``MockLLM.from_trace`` (``--replay``)
    replays it. The summary counts every result in ``out``, earlier ones too
    (``_Tally.summary``).

    A first KeyboardInterrupt starts no more tasks, lets the running ones end and be written,
    then raises KeyboardInterrupt; a second one raises at once (the runs in flight are lost, the
    ones that ended are written, no line is half-written). ValueError for a malformed task or an
    id that came before (the tasks before it have run), and, before any task runs, for an
    ``out`` that another run holds, that is no regular file or that holds a line that is no
    result; OSError when ``out`` or ``traces`` cannot be written; an exception from
    ``on_result`` or the agent's ``on_step`` stops the batch the same way and is raised.
    """
    import signal   # noqa: F401  (loaded now: a Ctrl-C inside its first import was not held)
    _check_setting("workers", workers)
    tally = _Tally()
    results = _ResultsFile(out, tally.add) if out is not None else None
    if traces is not None:
        os.makedirs(traces, exist_ok=True)
    feed = _Feed(tasks, results.ids if results else set())
    # 1. The workers: each puts ("result", record), ("error", exc) and at its end ("done", None);
    # bounded, so that a slow writer holds them back.
    outbox: queue.Queue = queue.Queue(maxsize=workers)

    def work() -> None:
        try:
            item = feed.next()
            while item is not None:
                outbox.put(("result", _run_task(agent, item, traces)))
                item = feed.next()
        # a bad task, or the user's own on_step: the batch stops and raises it
        except BaseException as exc:
            outbox.put(("error", exc))
        finally:
            outbox.put(("done", None))

    error, interrupted, running = None, False, workers
    # a result taken from the outbox and not yet written, then written and not yet passed on: a
    # Ctrl-C may land between any two lines, and deliver() finishes what it left
    pending = unpassed = None

    def deliver(pass_on: bool = True) -> None:
        nonlocal pending, unpassed
        with _interrupts_held():   # a Ctrl-C waits for the line and the count
            if pending is not None:
                if results is not None:
                    results.write(pending)
                tally.add(pending, earlier=False)
                pending, unpassed = None, pending
        if pass_on and unpassed is not None and on_result is not None:
            value, unpassed = unpassed, None
            on_result(value)

    try:
        for number in range(workers):   # daemons: after a second Ctrl-C the runs in flight drop
            threading.Thread(target=work, name=f"agent-batch-{number + 1}", daemon=True).start()
        # 2. Write and pass on each result as it comes, until the workers are done; the Ctrl-C
        # rule.
        while running:
            try:
                # an item taken is an item counted: a Ctrl-C inside Queue.get, after it took the
                # item, lost a result (so the wait is short, and a Ctrl-C waits for its end)
                with _interrupts_held():
                    try:
                        kind, value = outbox.get(timeout=0.1)
                    except queue.Empty:
                        kind = value = None
                    if kind == "done":
                        running -= 1
                    elif kind == "error":
                        error = error or value
                        feed.stop.set()
                    elif kind == "result":
                        pending = value
                if kind == "result":
                    deliver()
            except KeyboardInterrupt:
                if interrupted:   # at once; a run that ended before it is written all the same
                    deliver(pass_on=False)
                    while not outbox.empty():
                        kind, value = outbox.get_nowait()
                        if kind == "result":
                            pending = value
                            deliver(pass_on=False)
                    raise
                interrupted = True
                feed.stop.set()
                _log.warning("interrupted: no more tasks start; the running ones end and are "
                             "written (interrupt again to stop at once)")
                deliver()
            # the writer or on_result failed: stop, let the runs end, raise it
            except BaseException as exc:
                error = error or exc
                feed.stop.set()
    finally:
        if results is not None:
            results.close()
    if error is not None:
        raise error
    if interrupted:
        raise KeyboardInterrupt
    return tally.summary()


class _interrupts_held:
    """A block that a Ctrl-C does not interrupt: in the main thread, SIGINT's handler is called as
    the block ends, once, if the signal came during it. Elsewhere a plain block (Python raises
    KeyboardInterrupt in the main thread only)."""

    def __enter__(self) -> None:
        import signal
        self._came: list = []
        self._old = None
        # a handler installed outside Python (getsignal: None) could not be put back
        if (threading.current_thread() is threading.main_thread()
                and signal.getsignal(signal.SIGINT) is not None):
            self._old = signal.signal(signal.SIGINT, lambda _, frame: self._came.append(frame))

    def __exit__(self, *exc: Any) -> None:
        import signal
        if self._old is None:
            return
        signal.signal(signal.SIGINT, self._old)
        if self._came and callable(self._old):
            self._old(signal.SIGINT, self._came[0])
        elif self._came and self._old == signal.SIG_DFL:
            os.kill(os.getpid(), signal.SIGINT)


def _task_problem(item: Any) -> Optional[str]:
    """What makes item no task, or None: it needs a non-empty task, an id of text or a number, a
    usable expect."""
    if not isinstance(item, dict):
        return f"a task is a JSON object, not {_json_type(item)}"
    if not isinstance(item.get("task"), str) or not item["task"].strip():
        return 'no non-empty "task" text'
    key = item.get("id")
    if not ((isinstance(key, str) and key.strip()) or _is_number(key)):
        return f'"id" must be non-empty text or a number, not {_shown(key)}'
    if isinstance(key, float) and not math.isfinite(key):   # 1e400: written as no number reads
        return f'"id" must be non-empty text or a finite number, not {_shown(key)}'
    if "expect" in item and not (isinstance(item["expect"], str) or _is_number(item["expect"])):
        return f'"expect" must be text or a number, not {_shown(item["expect"])}'
    return None


def _id_key(task_id: Any) -> str:
    """The id as it is compared: its JSON text, so 7 and "7" are two ids."""
    return json.dumps(task_id)


def _task_file(path: str, shard: tuple = (1, 1)) -> Iterable[tuple]:
    """Each non-blank line of a task file that falls to shard K of N: (its number, the task, or None
    and the problem).

    Lines are counted in the file, so N machines can split one file without talking. OSError when it
    cannot be read.
    """
    with open(path, encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, 1):
            if not _in_shard(number, shard) or not line.strip():
                continue
            try:
                item = json.loads(line, parse_constant=_not_finite)
            except (ValueError, RecursionError):
                yield number, None, "not valid JSON"
                continue
            problem = _task_problem(item)
            yield number, (None if problem else item), problem


def _in_shard(number: int, shard: tuple) -> bool:
    """Whether line number (from 1) falls to shard K of N: lines K, K+N, K+2N, ..."""
    k, n = shard
    return (number - 1) % n == k - 1


class _Feed:
    """The tasks, handed to the workers one at a time (internal): each checked, ids already done
    skipped."""

    def __init__(self, tasks: Iterable[dict], done: set) -> None:
        self._tasks, self._done, self._seen = iter(tasks), done, set()
        self._lock = threading.Lock()
        self.stop = threading.Event()       # set: hand out no more tasks
        self.position = 0                   # tasks read so far

    def next(self) -> Optional[dict]:
        """The next task to run; None when there are no more or the batch stops. ValueError for a
        bad one."""
        with self._lock:
            for item in self._tasks if not self.stop.is_set() else ():
                self.position += 1
                problem = _task_problem(item)
                if problem is not None:
                    raise ValueError(f"task {self.position}: {problem}")
                key = _id_key(item["id"])
                if key in self._seen:
                    raise ValueError(f"task {self.position}: the id {key} came before")
                self._seen.add(key)
                if key not in self._done:
                    return item
            return None


def _run_task(agent: Agent, item: dict, traces: Optional[str]) -> dict:
    """Run one task; its result line (the task's fields, then the run's), its whole result saved
    under traces."""
    result = agent.run(item["task"])
    record = dict(item)
    if "expect" in item:
        record["solved"] = _solved(result.answer, item["expect"])
    format_errors = sum(1 for step in result.steps if step.raw is not None and step.action is None)
    record.update(stop_reason=result.stop_reason, answer=result.answer, steps=len(result.steps),
                  format_errors=format_errors, prompt_tokens=result.usage["prompt_tokens"],
                  completion_tokens=result.usage["completion_tokens"],
                  estimated_tokens=result.usage["estimated"], seconds=round(result.seconds, 3),
                  error=None if result.ok else (result.steps[-1].error if result.steps else None))
    if traces is not None:
        path = os.path.join(traces, _trace_name(item["id"]))
        try:
            result.save(path)
            record["trace"] = path
        except OSError as exc:
            record["trace"] = f"not saved: {exc.strerror or exc}"
    return record


def _solved(answer: Optional[str], expect: Any) -> bool:
    """Whether answer holds expect: a number in it within the tolerance, or the text, ignoring
    case."""
    if answer is None:
        return False
    if isinstance(expect, str):
        return expect.casefold() in answer.casefold()
    # each number in the answer: 1,024 and 1024 alike, signs, decimals, exponents
    for match in re.finditer(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?"
                             r"|[-+]?\.\d+", answer):
        try:
            if math.isclose(float(match.group().replace(",", "")), expect, rel_tol=1e-6,
                            abs_tol=1e-9):
                return True
        except OverflowError:   # an expect beyond a float: no answer's number is near it
            continue
    return False


def _trace_name(task_id: Any) -> str:
    """A file name for the id's trace, one per id: a text id in lower-case letters, digits and
    ``_.-`` is its own name, any other id (a number, capitals, other characters) a cleaned name,
    ``@`` and a hash of its JSON text.

    So 7 and "7" get two files, and so do "A" and "a" where the file system ignores case.

    >>> _trace_name("arith-1"), _trace_name(7)
    ('arith-1.json', '7@7902699be42c8a8e.json')
    """
    text = str(task_id)
    if isinstance(task_id, str) and re.fullmatch(r"[a-z0-9_-][a-z0-9_.-]{0,99}", text):
        return f"{text}.json"
    import hashlib

    digest = hashlib.sha256(_id_key(task_id).encode("utf-8", "surrogatepass")).hexdigest()[:16]
    # no leading dot: the file is not hidden
    return f"{re.sub(r'[^A-Za-z0-9_.-]', '_', text)[:80].lstrip('.')}@{digest}.json"


def _write_json_line(handle: Any, record: Any) -> None:
    """Append record to an unbuffered binary file as one JSON line (None: only the line break) in
    one write, whole: a short write goes on with the rest. What JSON cannot hold is written as text
    (``AgentResult._plain``), a lone surrogate as its escape; ``_json_lines`` reads it back. The one
    writer of the results file and the --trace file."""
    text = "" if record is None else json.dumps(AgentResult._plain(record), ensure_ascii=False,
                                                allow_nan=False)
    data = (text + "\n").encode("utf-8", "backslashreplace")
    while data:
        data = data[handle.write(data):]


class _ResultsFile:
    """The results file (internal), held by one run: the ids already in it, then one writer that
    appends a whole line per result."""

    def __init__(self, path: str, count: Callable[..., None]) -> None:
        self.path, self.ids = path, set()
        self._handle = _open_results(path)
        try:
            self._read(count)
        except BaseException:
            self._handle.close()
            raise

    def _read(self, count: Callable[..., None]) -> None:
        """Collect the ids already written and count each result (``_Tally.add``); drop a cut-off
        last line."""
        end = 0
        for end, record in _whole_lines(self._handle, self.path):  # noqa: B007 (read after)
            self.ids.add(_id_key(record["id"]))
            count(record, earlier=True)
        if self._handle.seek(0, os.SEEK_END) > end:   # a crash in mid-write: its task runs again
            self._handle.truncate(end)
        elif end:
            self._handle.seek(end - 1)
            if self._handle.read(1) != b"\n":   # a whole last line without its line break
                _write_json_line(self._handle, None)

    def write(self, record: dict) -> None:
        _write_json_line(self._handle, record)

    def close(self) -> None:
        self._handle.close()


def _open_results(path: str, create: bool = True) -> Optional[io.FileIO]:
    """The results file, open to read and to append, locked for this run; None when it does not
    exist and create is false.

    ValueError when it is not a regular file (a pipe, a terminal or a device would hang the run or
    lose its results) or another run holds it; OSError when it cannot be opened.
    """
    import stat

    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        if not create:
            return None
        mode = stat.S_IFREG
    # O_NONBLOCK: a FIFO put in the file's place after the check does not hold the open
    flags = (os.O_RDWR | os.O_APPEND | (os.O_CREAT if create else 0)
             | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    handle = open(os.open(path, flags, 0o666), "rb+", buffering=0) if stat.S_ISREG(mode) else None
    try:
        mode = os.fstat(handle.fileno()).st_mode if handle is not None else mode
        if not stat.S_ISREG(mode):
            kind = "a directory" if stat.S_ISDIR(mode) else "a pipe, a terminal or a device"
            raise ValueError(f"{path} is {kind}, not a file: the results must go to a file that a "
                             "second run can resume from")
        unlocked = None
        try:
            import fcntl

            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except ImportError:
            unlocked = "no fcntl on this system"
        except BlockingIOError:
            raise ValueError(f"{path} is in use by another batch run: let that one end (or stop "
                             "it), then run again to resume") from None
        except OSError as exc:   # a file system without locks
            unlocked = exc.strerror or str(exc)
        if unlocked and create:   # said by the run, not by the CLI's look before it
            _log.warning("%s is not locked (%s): two runs on it at once would each run every task",
                         path, unlocked)
    except BaseException:
        if handle is not None:
            handle.close()
        raise
    return handle


def _whole_lines(handle: io.FileIO, path: str) -> Iterable[tuple]:
    """Each whole line of an open results file: (the offset it ends at, its record); as
    ``_json_lines`` reads it."""
    with open(handle.fileno(), "rb", closefd=False) as lines:   # buffered: lines are read fast
        lines.seek(0)
        for end, number, record in _json_lines(lines):
            # a line that is no result: a wrong --out, a task file among them, would be appended to
            if not (isinstance(record, dict) and _task_problem(dict(record, task="-")) is None
                    and isinstance(record.get("stop_reason"), str)):
                raise ValueError(f"{path} line {number} is not a result line (JSON with an id and "
                                 "a stop_reason): is it the results file of a batch? Pass another "
                                 "--out")
            yield end, record


class _Tally:
    """The counts behind a batch's summary (internal): a few numbers per result, and each one's
    seconds."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.done = self.earlier = self.checked = self.solved = 0
        self.steps = self.format_errors = self.prompt_tokens = self.completion_tokens = 0
        self.estimated = False
        self.reasons = dict.fromkeys(STOP_REASONS, 0)
        self.seconds = array.array("d")      # 8 bytes a result: kept for the percentiles

    def add(self, record: dict, earlier: bool = False) -> None:
        """Count one result line; earlier: it was in the results file before this run."""
        self.done += 1
        self.earlier += earlier
        if "solved" in record:
            self.checked += 1
            self.solved += record["solved"] is True
        reason = record.get("stop_reason")
        self.reasons[reason] = self.reasons.get(reason, 0) + 1
        for name in ("steps", "format_errors", "prompt_tokens", "completion_tokens"):
            value = record.get(name)
            setattr(self, name, getattr(self, name) + (value if _is_int(value) else 0))
        self.estimated = self.estimated or record.get("estimated_tokens") is True
        if _is_number(record.get("seconds")):
            self.seconds.append(float(record["seconds"]))

    def summary(self) -> dict:
        """The summary as plain data: solved, stop reasons, per-task means, tokens, seconds
        p50/p95."""
        per_task = max(self.done, 1)
        ordered = sorted(self.seconds)
        return {"tasks": self.done, "earlier": self.earlier, "checked": self.checked,
                "solved": self.solved,
                "solved_percent": round(100 * self.solved / self.checked, 1) if self.checked
                else None, "stop_reasons": {reason: n for reason, n in self.reasons.items() if n},
                "steps_per_task": round(self.steps / per_task, 2),
                "format_errors_per_task": round(self.format_errors / per_task, 2),
                "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "estimated_tokens": self.estimated, "seconds_p50": _percentile(ordered, 50),
                "seconds_p95": _percentile(ordered, 95),
                "wall_seconds": round(time.monotonic() - self.started, 3)}


def _percentile(ordered: list, percent: float) -> Optional[float]:
    """The nearest-rank percentile of sorted numbers; None for none.

    >>> _percentile([1.0, 2.0, 3.0, 4.0], 50), _percentile([1.0, 2.0, 3.0, 4.0], 95)
    (2.0, 4.0)
    """
    if not ordered:
        return None
    return ordered[max(0, math.ceil(percent / 100 * len(ordered)) - 1)]


# -- Calculator and demo ---------------------------------------------------------------
# safe_eval, arithmetic over an ast whitelist (the demo's calculator tool)

_MAX_EXPR_CHARS = 10_000      # longer input is refused before parsing
_MAX_NESTING = 100            # brackets deeper than this are refused before parsing
_MAX_AST_DEPTH = 250          # nodes nested deeper (unary chains, calls) are refused
_MAX_INT_DIGITS = 4300        # Python's own int-to-text limit
_INT_LIMIT = 10 ** _MAX_INT_DIGITS


def _divide(a, b):
    # Exact division of integers stays an integer: (128*3+40)/4 is 106, not 106.0.
    if type(a) is int and type(b) is int and b and a % b == 0:
        return a // b
    return a / b


def _power(base, exponent):
    # Refuse a power whose result would pass the digit cap before computing it.
    if type(base) is int and type(exponent) is int and exponent > 0 and abs(base) > 1:
        if exponent * math.log10(abs(base)) > _MAX_INT_DIGITS + 1:
            raise UnsafeExpression(f"{base} ** {exponent} would have more than {_MAX_INT_DIGITS} "
                                   "digits")
    return base ** exponent


def _round(number, ndigits=None):
    if ndigits is not None and (type(ndigits) is not int or abs(ndigits) > _MAX_INT_DIGITS):
        raise UnsafeExpression(f"round() digits must be an integer within ±{_MAX_INT_DIGITS}")
    return round(number, ndigits)


_BINARY_OPS = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: _divide,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: _power,
}
_UNARY_OPS = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_FUNCTIONS = {
    "abs": abs, "round": _round, "min": min, "max": max, "sqrt": math.sqrt, "exp": math.exp,
    "log": math.log, "log10": math.log10, "log2": math.log2, "sin": math.sin, "cos": math.cos,
    "tan": math.tan, "asin": math.asin, "acos": math.acos, "atan": math.atan,
    "floor": math.floor, "ceil": math.ceil,
}
_CONSTANTS = {"pi": math.pi, "e": math.e, "tau": math.tau}
_OPERATOR_SYMBOLS = {
    ast.LShift: "<<", ast.RShift: ">>", ast.BitOr: "|", ast.BitAnd: "&", ast.MatMult: "@",
    ast.BitXor: "^ (use ** for powers)", ast.Invert: "~", ast.Not: "not",
}
_SYNTAX_NAMES = {
    ast.Lambda: "lambda", ast.JoinedStr: "f-strings", ast.NamedExpr: "assignment (:=)",
    ast.ListComp: "comprehensions", ast.SetComp: "comprehensions", ast.DictComp: "comprehensions",
    ast.GeneratorExp: "comprehensions", ast.Compare: "comparisons", ast.BoolOp: "and/or",
    ast.IfExp: "conditional expressions", ast.Subscript: "subscripts", ast.Attribute: "attributes",
    ast.List: "lists", ast.Tuple: "tuples", ast.Set: "sets", ast.Dict: "dicts",
    ast.Starred: "* unpacking", ast.Await: "await", ast.Yield: "yield",
}


def safe_eval(expr: str) -> int | float:
    """Evaluate an arithmetic expression without eval: ``ast`` plus a whitelist.

    Allowed: int and float literals, ``+ - * / // % **``, unary ``+ -``, parentheses, the
    functions in ``_FUNCTIONS`` and the constants ``pi e tau``. Exact division of integers stays
    an integer. Everything else -- names, attributes, strings, booleans, complex numbers,
    comparisons, lambdas, comprehensions -- raises ``UnsafeExpression`` naming the offending
    part, as do division by zero, overflow, ``inf``/``nan`` results, integers over
    ``_MAX_INT_DIGITS`` digits, input over ``_MAX_EXPR_CHARS`` characters and nesting over
    ``_MAX_NESTING`` levels. Nothing else is ever raised.

    >>> _MAX_INT_DIGITS, _MAX_EXPR_CHARS, _MAX_NESTING
    (4300, 10000, 100)
    >>> safe_eval("2 * (3 + 4)")
    14
    >>> safe_eval("(128*3+40)/4")
    106
    >>> safe_eval("sqrt(16) + pi")
    7.141592653589793
    >>> safe_eval("__import__('os')")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    agent.UnsafeExpression: calling __import__ is not allowed (functions: abs, round, ...)
    """
    if not isinstance(expr, str):
        raise UnsafeExpression(f"expected the expression as text, got {type(expr).__name__}")
    # long input, deep brackets and input the tokenizer warns about are refused before parsing
    if len(expr) > _MAX_EXPR_CHARS:
        raise UnsafeExpression(f"expression is {len(expr):,} characters long (limit "
                               f"{_MAX_EXPR_CHARS:,})", expr[:100])
    # Input on which Python's own tokenizer warns on stderr (the library never prints): a
    # backslash, or a number run into a keyword ("1if 1 else 2", "0x1for"). Neither can be
    # arithmetic, so it is refused before parsing; silencing warnings instead would change the
    # process-wide filters under other threads.
    noisy = re.search(r"\\|[0-9a-fA-F._jJ](?:and|else|for|if|in|is|not|or)", expr)
    if noisy:
        raise UnsafeExpression(f"not a valid arithmetic expression: {noisy.group()!r} (a "
                               "backslash, or a number run into a keyword)", expr)
    depth = 0
    for match in re.finditer(r"[][(){}]", expr):
        depth += 1 if match.group() in "([{" else -1
        if depth > _MAX_NESTING:
            raise UnsafeExpression(f"brackets nested more than {_MAX_NESTING} "
                                   "levels deep", expr[:100])
    try:
        # CPython refuses a tree ~3,000 levels deep, and 1+1+...+1 is a left spine that deep: such
        # a chain is split at its top-level operators. The size cap already bounds the work, so
        # only the shape is worked around.
        try:
            tree = ast.parse(expr.strip(), mode="eval").body
        except (RecursionError, MemoryError):
            tree = _parse_chain(expr.strip())
        return _check_number(_eval_node(tree, 0), expr)
    except UnsafeExpression as exc:
        exc.expression = expr
        raise
    except (SyntaxError, ValueError, TypeError) as exc:
        raise UnsafeExpression(f"not a valid arithmetic expression: {exc}", expr) from None
    except (RecursionError, MemoryError):
        raise UnsafeExpression("expression is nested too deeply", expr) from None
    except ZeroDivisionError:
        raise UnsafeExpression("division by zero", expr) from None
    except ArithmeticError as exc:  # OverflowError
        raise UnsafeExpression(f"result too large: {exc}", expr) from None


def _check_number(value, expr: str = ""):
    if type(value) is int:
        if abs(value) >= _INT_LIMIT:
            raise UnsafeExpression(f"integer result has more than {_MAX_INT_DIGITS} digits", expr)
        return value
    if type(value) is float:
        if not math.isfinite(value):
            raise UnsafeExpression(f"result is not a finite number ({value})", expr)
        return value
    if isinstance(value, complex):
        raise UnsafeExpression("complex results are not allowed", expr)
    raise UnsafeExpression(f"{type(value).__name__} values are not allowed", expr)


def _parse_chain(text: str) -> ast.AST:
    # Fold "a op b op c ..." with two precedence levels (+ - below * / // %);
    # each operand is parsed by ast alone, and _eval_node walks the spine in a loop.
    additive = {"+": ast.Add, "-": ast.Sub}
    multiplicative = {"*": ast.Mult, "/": ast.Div, "//": ast.FloorDiv, "%": ast.Mod}
    openers, closers = ("(", "[", "{"), (")", "]", "}")
    # 1. (start, end, symbol) of each binary + - * / // % outside brackets, found with tokenize
    lines = io.StringIO(text).readlines()
    offsets = list(itertools.accumulate(map(len, lines), initial=0))
    operand_types = (tokenize.NAME, tokenize.NUMBER, tokenize.STRING)
    cuts, depth, after_operand = [], 0, False
    try:
        for token in tokenize.generate_tokens(iter(lines).__next__):
            if token.type not in operand_types and token.type != tokenize.OP:
                continue  # line breaks, comments, the end marker
            depth += (token.string in openers) - (token.string in closers)
            if depth == 0 and after_operand and (token.string in additive
                                                 or token.string in multiplicative):
                start = offsets[token.start[0] - 1] + token.start[1]
                cuts.append((start, start + len(token.string), token.string))
            # A + or - right after an operand is binary; after an operator or "(" it is unary.
            after_operand = token.type in operand_types or token.string in closers
    except (tokenize.TokenError, SyntaxError) as exc:
        raise SyntaxError(f"{exc}") from None
    # 2. the operands between the cuts, folded
    if not cuts:
        raise RecursionError  # one deep operand (a unary chain): nothing to split
    total = total_op = term = term_op = None
    for start, end, symbol in zip([0] + [c[1] for c in cuts], [c[0] for c in cuts] + [len(text)],
                                  [c[2] for c in cuts] + [None]):
        node = ast.parse(text[start:end].strip(), mode="eval").body
        term = node if term_op is None else ast.BinOp(term, term_op(), node)
        term_op = multiplicative.get(symbol)
        if term_op is None:
            total = term if total_op is None else ast.BinOp(total, total_op(), term)
            total_op, term = additive.get(symbol), None
    return total


def _eval_node(node: ast.AST, depth: int):
    # Recursive walk over a whitelist; each branch names what it refuses.
    if depth > _MAX_AST_DEPTH:
        raise UnsafeExpression(f"expression is nested more than {_MAX_AST_DEPTH} levels deep")
    if isinstance(node, ast.BinOp):
        # 1+2+3+... is a long left spine, not deep nesting: walk it in a loop.
        chain = []
        while isinstance(node, ast.BinOp):
            chain.append(node)
            node = node.left
        value = _eval_node(node, depth + 1)
        for binop in reversed(chain):
            op = _BINARY_OPS.get(type(binop.op))
            if op is None:
                shown = _OPERATOR_SYMBOLS.get(type(binop.op), type(binop.op).__name__)
                raise UnsafeExpression(f"operator {shown} is not allowed")
            value = _check_number(op(value, _eval_node(binop.right, depth + 1)))
        return value
    if isinstance(node, ast.UnaryOp):
        op = _UNARY_OPS.get(type(node.op))
        if op is None:
            shown = _OPERATOR_SYMBOLS.get(type(node.op), type(node.op).__name__)
            raise UnsafeExpression(f"operator {shown} is not allowed")
        return op(_eval_node(node.operand, depth + 1))
    if isinstance(node, ast.Constant):
        value = node.value
        if type(value) in (int, float):
            return _check_number(value)
        if isinstance(value, bool):
            raise UnsafeExpression(f"booleans ({value}) are not numbers here")
        if isinstance(value, complex):
            raise UnsafeExpression(f"complex numbers ({value!r}) are not allowed")
        kind = {str: "strings", bytes: "bytes"}.get(type(value), repr(value))
        raise UnsafeExpression(f"{kind} not allowed in a calculation")
    if isinstance(node, ast.Name):
        if node.id in _CONSTANTS:
            return _CONSTANTS[node.id]
        if node.id in _FUNCTIONS:
            raise UnsafeExpression(f"function {node.id!r} must be called, e.g. {node.id}(2)")
        raise UnsafeExpression(f"name {node.id!r} is not allowed (constants: "
                               f"{', '.join(_CONSTANTS)})")
    if isinstance(node, ast.Call):
        name = node.func.id if isinstance(node.func, ast.Name) else None
        if name not in _FUNCTIONS:
            shown = name or (f".{node.func.attr}" if isinstance(node.func, ast.Attribute)
                             else "an expression")
            raise UnsafeExpression(f"calling {shown} is not allowed (functions: "
                                   f"{', '.join(_FUNCTIONS)})")
        if node.keywords:
            raise UnsafeExpression(f"keyword arguments are not allowed in {name}()")
        args = [_eval_node(arg, depth + 1) for arg in node.args]
        try:
            return _check_number(_FUNCTIONS[name](*args))
        except UnsafeExpression:
            raise
        except (ValueError, TypeError, ArithmeticError) as exc:
            raise UnsafeExpression(f"{name}() failed: {exc}") from None
    if isinstance(node, ast.Attribute):
        raise UnsafeExpression(f"attribute access '.{node.attr}' is not allowed")
    raise UnsafeExpression(f"{_SYNTAX_NAMES.get(type(node), type(node).__name__)} not allowed in a "
                           "calculation")


# -- Calculator and demo, the demo tools and the offline planner -----------------------
# the calculator and clock tools, and the planner MockLLM runs without a script

# the demo tools' names, which the offline planner calls
_CALCULATOR, _CLOCK = "calculator", "clock"


def _demo_tools() -> ToolRegistry:
    """A registry of the demo's two tools, plain functions as any user's: calculator and clock."""
    registry = ToolRegistry()

    @registry.register(name=_CALCULATOR)
    def calculator(expression: str) -> str:
        """Evaluate an arithmetic expression: + - * / // % **, parentheses, sqrt, log, sin, pi, ...

        Args:
            expression: The arithmetic to evaluate, e.g. "(128*3+40)/4".
        """
        value = safe_eval(expression)
        return str(value) if isinstance(value, int) else f"{value:.15g}"

    @registry.register(name=_CLOCK)
    def clock() -> str:
        """The current date and time in UTC."""
        return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())

    return registry


def _find_arithmetic(task: str) -> list:
    """The arithmetic expressions in a task, in order, ^ written **."""
    found = []
    # A run of arithmetic characters from a digit or "(", taken whole (no backtracking, so the scan
    # is linear); its end is then cut back to the last digit or ")".
    for match in re.finditer(r"[\d(][\d\s.+\-*/%()^_]*", task):
        candidate, end = match.group(), match.end() - match.start()
        # \d is isdecimal
        while end and not (candidate[end - 1].isdecimal() or candidate[end - 1] == ")"):
            end -= 1
        candidate = candidate[:end]
        # an operator between two operands
        if len(candidate) > 1 and re.search(r"[\d)]\s*(?:\*\*|[-+*/%^])\s*[-+(]*[\d(]", candidate):
            found.append(candidate.replace("^", "**"))
    return found


def _task_index(messages: list[dict]) -> Optional[int]:
    """Where the current task is: the last user message that does not answer a reply other than a
    final answer (an observation does; a task may even look like one). None when there is no user
    message."""
    for i in range(len(messages) - 1, -1, -1):
        before = messages[i - 1] if i else {}
        if messages[i]["role"] != "user":
            continue
        if before.get("role") != "assistant":
            return i
        try:                              # after a reply: only a final answer's
            if parse_action(before["content"]).kind == "final":
                return i
        except ActionFormatError:
            pass
    return None


def _offline_reply(messages: list[dict]) -> str:
    """The offline planner's next reply: the clock for a question about the time, the calculator for
    each arithmetic expression in the task, then a final answer from the observations."""
    task_at = _task_index(messages)
    task = messages[task_at]["content"] if task_at is not None else ""
    plan = [(_CLOCK, {})] if re.search(r"\b(?:time|date|clock|today|now)\b", task, re.I) else []
    plan += [(_CALCULATOR, {"expression": expr}) for expr in _find_arithmetic(task)]
    observed = [m["content"] for m in messages[(task_at or 0) + 1:] if m["role"] == "user"]
    results = [_observation_result(message, call) or ""
               for message, call in zip(observed, plan + [None] * len(observed))]
    if len(results) < len(plan):
        name, arguments = plan[len(results)]
        thought = ("I need the current time." if name == _CLOCK
                   else f"I will compute {arguments['expression']}.")
        return json.dumps({"type": "tool_call", "thought": thought, "name": name,
                           "arguments": arguments})
    if not plan:
        answer = ("I am the offline demo model: I can only tell the time and do arithmetic. "
                  "Pass --base-url (or set OPENAI_BASE_URL; see the README) to use a real model.")
    elif len(plan) == 1 and plan[0][0] == _CALCULATOR:
        answer = results[0]
    else:
        sentence = ", and ".join(f"the time is {result}" if name == _CLOCK
                                 else f"{args['expression']} = {result}"
                                 for (name, args), result in zip(plan, results))
        answer = sentence[0].upper() + sentence[1:] + "."
    return json.dumps({"type": "final", "thought": "I have everything I need.", "answer": answer})


# -- Calculator and demo, run(): one call, offline by default --------------------------
# after the demo it defaults to, as textwrap's wrap() comes after TextWrapper

def run(task: str, llm: Optional[LLM] = None, tools: _Tools = None, **options: Any) -> AgentResult:
    """Run one task in one call: ``Agent(llm, tools, **options).run(task)``.

    With no ``llm`` the offline ``MockLLM`` planner answers; with no ``tools`` the
    demo tools (``calculator``, ``clock``) are used.
    """
    return Agent(llm if llm is not None else MockLLM(),
                 tools if tools is not None else _demo_tools(), **options).run(task)


# -- CLI -------------------------------------------------------------------------------
# main() is python agent.py: parse the flags, build, run, print; the only place that prints

_DEMO_TASK = "What time is it now, and what is (128*3+40)/4?"
_BROKEN_PIPE = 141                          # 128 + SIGPIPE, as the shell reports a closed pipe
_EXIT_MEANINGS = {0: "answered", 1: "stopped without an answer", 2: "bad usage or configuration",
                  3: "the model endpoint failed", 130: "interrupted",
                  _BROKEN_PIPE: "the output pipe was closed"}


def main(argv: Optional[list[str]] = None) -> int:
    """The command line: parse, build, run, print. Returns the exit code; the only place that
    prints."""
    # stdout or stderr closed at the start (2>&-) points at devnull: the run goes on as usual
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        try:
            # EBADF when closed, or open only for reading (a shell script's own)
            os.write(stream.fileno(), b"")
        # a stream with no file below it (a test's StringIO): it works
        except io.UnsupportedOperation:
            continue
        except (AttributeError, OSError, ValueError):   # None, or a file descriptor that is closed
            setattr(sys, name, open(os.devnull, "w", encoding="utf-8"))
    try:
        args = _cli_args(argv)
    except SystemExit as exc:  # --help, --version, or bad usage
        return exc.code if isinstance(exc.code, int) else 2
    status = None if args.quiet else _StatusLine(sys.stderr.isatty())
    handler = _CliLog(status.say if status is not None else _cli_say)
    _log.addHandler(handler)
    _log.setLevel({0: logging.WARNING, 1: logging.INFO}.get(args.verbose, logging.DEBUG))
    try:
        return _cli_batch(args) if args.batch else _cli_run(args, status)
    except BrokenPipeError:  # the reader went away (| head): stop quietly
        # point stdout and stderr at devnull so the interpreter's last flush cannot fail
        devnull = os.open(os.devnull, os.O_WRONLY)
        for stream in (sys.stdout, sys.stderr):
            try:
                os.dup2(devnull, stream.fileno())
            except (OSError, ValueError, AttributeError):  # not a real file (captured in tests)
                pass
        os.close(devnull)
        return _BROKEN_PIPE
    finally:
        _log.removeHandler(handler)
        _log.setLevel(logging.NOTSET)
        if status is not None:
            status.close()


class _CliLog(logging.Handler):
    """The CLI's log lines on stderr, written as every other line of ours: one line each, controls
    escaped."""

    def __init__(self, say: Callable[[str], None]) -> None:
        super().__init__()
        self.say = say

    def emit(self, record: logging.LogRecord) -> None:
        try:
            warning = "warning: " if record.levelno >= logging.WARNING else ""
            self.say(f"agent.py: {warning}{record.getMessage()}")
        except Exception:  # a log line must never stop the run
            self.handleError(record)


def _cli_run(args: argparse.Namespace, status: Optional[_StatusLine]) -> int:
    """Build, open the trace, run and print; the exit code."""
    if args.interactive and sys.stdin is None:
        _cli_say("agent.py: -i reads questions from stdin, and stdin is closed")
        return 2
    try:
        # every option is checked before the trace file is opened
        agent, label, tasks = _cli_agent(args)
        trace = _Trace(args.trace) if args.trace else None
    except (ValueError, OSError, AgentError) as exc:
        _cli_say(f"agent.py: {exc}")
        return 2
    if status is not None and status.terminal and hasattr(agent.llm, "on_delta"):
        agent.llm.on_delta = status  # the CLI owns this client: one run at a time
    agent.on_step = _cli_on_step(args, trace, status, agent.llm)
    agent.on_wait = status.wait if status is not None else None
    if not args.quiet:
        _cli_say(f"agent.py: {label}")
    try:
        if args.interactive:
            code = _cli_interactive(agent, args, trace)
        else:
            history = None
            for task in tasks:     # the turns of a replayed conversation go on from each other
                code, result = _cli_once(agent, task, args, trace, history)
                history = result.messages
    except KeyboardInterrupt:
        _cli_say("agent.py: interrupted; the steps so far are kept in the trace")
        code = 130
    finally:
        agent.tools.close()                 # the MCP servers it started
        if trace is not None:
            trace.close()
    if trace is not None and trace.error is not None:
        _cli_say(f"agent.py: could not write the trace {trace.path}: "
                 f"{trace.error.strerror or trace.error}")
        return code or 2
    return code


def _cli_once(agent: Agent, task: str, args: argparse.Namespace, trace: Optional[_Trace],
              history: Optional[list[dict]] = None) -> tuple:
    # stdout holds the answer alone: what a tool prints goes to stderr, with the progress
    with contextlib.redirect_stdout(sys.stderr):
        result = agent.run(task, history)
    if trace is not None:
        trace.write("result", {key: value for key,
                               value in result.to_dict().items() if key != "steps"})
    if args.json:
        # ASCII-escaped when stdout's encoding cannot hold the text
        text = json.dumps(result.to_dict(), ensure_ascii=False, default=str)
        try:
            text.encode(getattr(sys.stdout, "encoding", None) or "utf-8")
        except (UnicodeEncodeError, LookupError):   # an ASCII terminal, or a lone surrogate
            text = json.dumps(result.to_dict(), default=str)
        _cli_say(text, sys.stdout)
    elif result.answer is not None:
        _cli_say(result.answer, sys.stdout)
    usage = result.usage
    steps = usage.get("estimated_steps") or []
    estimated = (f" (estimated for step{'s' if len(steps) > 1 else ''} "
                 f"{', '.join(map(str, steps))})" if steps else "")
    _log.info("usage: %s", f"{usage['prompt_tokens']} prompt + {usage['completion_tokens']} "
                           f"completion tokens{estimated}")
    if not result.ok:
        # out of time during a tool call: which tool was running
        last, running = result.steps[-1] if result.steps else None, ""
        if (result.stop_reason == "time_limit" and last is not None and last.action is not None
                and last.action.kind != "final" and (last.tool_seconds or last.error)):
            running = f", while {last.action.name} ran"
        _cli_say(f"agent.py: stopped ({result.stop_reason}): {result.summary}{running}")
        hint = _cli_hint(agent, result)
        if hint:
            _cli_say(f"agent.py: hint: {hint}")
    return _STOPS[result.stop_reason].exit_code, result


def _cli_hint(agent: Agent, result: AgentResult) -> Optional[str]:
    """The likely cause of a failed run, from the status and kind of the error that ended it."""
    failure = getattr(agent.llm, "last_error", None) if result.stop_reason == "llm_error" else None
    error, model = str(failure or ""), getattr(agent.llm, "model", None)
    not_served = re.search(r"not found|unknown|does not exist|no such|not available|not loaded",
                           error, re.I)
    if failure is not None and _names_model(error, model) and (
            failure.status == 404 or (failure.status == 400 and not_served)):
        try:                     # what the server says it serves (GET /models)
            names = agent.llm._served_models()
        except (AttributeError, LLMError):
            served = "GET /models lists what it serves"
        else:
            served = (f"it serves {_cut(', '.join(names[:20]), 300, one_line=True, escape=True)}: "
                      "pass one with --model" if names else "it lists none")
        return f"unknown model {model!r}: the server does not serve it ({served})"
    if failure is not None and failure.kind == "connection_refused":
        return "nothing answers at that address: is the server running, and is the port right?"
    if result.stop_reason == "format_errors":
        last = result.steps[-1].error if result.steps else None
        if last is not None and re.search(r"copied from the instructions|the instructions' "
                                          "example", _asked_problem(last)):   # _copied's problems
            return ("the model copied the instructions' placeholders or example in place of its "
                    "own action: try a larger model")
        return ("the model could not write the JSON action: try --constrain always, or a "
                "larger model")
    return None


def _cli_interactive(agent: Agent, args: argparse.Namespace, trace: Optional[_Trace]) -> int:
    """Questions from stdin, one conversation; steps count from 1 in each turn, as each turn is one
    run."""
    code, history = 0, None
    while True:
        sys.stderr.write("you> ")
        sys.stderr.flush()
        try:
            line = _cli_read_line()
        except UnicodeDecodeError as exc:
            _cli_say(f"agent.py: that line is not {exc.encoding} text: left out; type it again")
            continue
        if not line or line.strip() in ("exit", "quit"):
            return code
        if line.strip():
            code, result = _cli_once(agent, line.strip(), args, trace, history)
            history = result.messages


def _cli_read_line() -> str:
    """One line of stdin ("" at its end); UnicodeDecodeError for a line its encoding cannot read.

    Bytes are read a line at a time and decoded here, so a bad byte costs only its own line.
    """
    buffer = getattr(sys.stdin, "buffer", None)
    if buffer is None:   # a text stream with no bytes below it
        return sys.stdin.readline()
    return buffer.readline().decode(sys.stdin.encoding or "utf-8", sys.stdin.errors or "strict")


def _cli_say(text: str, stream: Any = None) -> None:
    """Write a line that may hold any str (lone surrogates too) to stderr or ``stream``, whatever
    its encoding.

    On stderr, one message is one line: control characters and line breaks in it are shown escaped,
    so text quoted from a server or a model cannot forge a line of ours. stdout (the answer, --json)
    gets the text as it is.
    """
    # _cut escapes the controls (\r, \v, \f, \x85); the other line breaks are escaped here
    text = re.sub("[\n\u2028\u2029]", lambda m: m.group().encode("unicode_escape").decode("ascii"),
                  _cut(text, None, escape=True)) if stream is None else text
    stream = stream if stream is not None else sys.stderr
    encoding = getattr(stream, "encoding", None) or "utf-8"
    stream.write((text + "\n").encode(encoding, "backslashreplace").decode(encoding, "replace"))
    stream.flush()


def _cli_number(name: str) -> Callable[[str], Any]:
    """An argparse type for the option name: a finite number in the range _SETTINGS gives, else exit
    2."""

    def parse(text: str) -> Any:
        try:
            value = int(text) if _SETTINGS[name].integer else float(text)
        except ValueError:
            value = text
        try:
            _check_setting(name, value)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
        return value
    return parse


def _default(cls: type, name: str) -> Any:
    """The default of a constructor argument: the CLI shows and uses the library's own."""
    return inspect.signature(cls).parameters[name].default


class _JoinWords(argparse.Action):
    """The task's words as one text (None when there are none): an unquoted task is the task
    meant."""

    def __call__(self, parser: Any, namespace: Any, values: Any,
                 option_string: Optional[str] = None) -> None:
        setattr(namespace, self.dest, " ".join(values) if values else None)


def _cli_parser() -> argparse.ArgumentParser:
    def meaning(code: int) -> str:   # an exit code, with the stop reasons (_STOPS) that lead to it
        reasons = ", ".join(reason for reason, stop in _STOPS.items() if stop.exit_code == code)
        return f"{code} {_EXIT_MEANINGS[code]}" + (f" ({reasons})" if reasons else "")

    parser = argparse.ArgumentParser(
        prog="agent.py", allow_abbrev=False,
        description="A ReAct agent for models without native function calling. With no model "
                    "configured it runs offline with a mock model.",
        epilog="The API key is read from OPENAI_API_KEY only (never a flag). Exit codes: "
               + ", ".join(meaning(code) for code in _EXIT_MEANINGS) + ".")
    add = parser.add_argument
    add("task", nargs="*", action=_JoinWords,
        help=f"the task; words not quoted are joined into one task (default: {_DEMO_TASK!r})")
    add("--model", help="model name (default: $OPENAI_MODEL; with only a base URL, the one model "
                        "the server serves)")
    add("--base-url", help="OpenAI-compatible base URL ending in /v1 (default: $OPENAI_BASE_URL)")
    add("--temperature", type=_cli_number("temperature"),
        help=f"sampling temperature (default {_default(OpenAICompatLLM, 'temperature')})")
    add("--max-tokens", type=_cli_number("max_tokens"), help="token limit per reply")
    add("--timeout", type=_cli_number("timeout"), metavar="SECONDS", help="connection and per-byte "
        f"timeout of a request (default {_default(OpenAICompatLLM, 'timeout')})")
    add("--max-steps", type=_cli_number("max_steps"), default=_default(Agent, "max_steps"),
        help=f"model calls per task (default {_default(Agent, 'max_steps')})")
    add("--max-seconds", type=_cli_number("max_seconds"),
        help="time budget of a task, model calls included")
    add("--max-context-chars", type=_cli_number("max_context_chars"),
        help="characters of conversation sent per call (default: all)")
    add("--memory", choices=Agent._MEMORY_MODES, default=_default(Agent, "memory"),
        help="what stands in for the steps --max-context-chars drops: a digest, one line per step "
             "(the default), a summary by the model (one more call per trim), or none")
    add("--constrain", choices=Agent._CONSTRAIN_MODES, default="auto",
        help="constrained decoding with the action schema: after a format error (auto, the "
             "default), always, never")
    add("--json-schema", action="store_true", help="the same as --constrain always")
    add("--tools", action="append", metavar="FILE.py",
        help="load tools from a Python file (repeatable): its ToolRegistry named 'tools', else "
             "every public function with a docstring; replaces the demo tools")
    add("--tool-timeout", type=_cli_number("default_timeout"), metavar="SECONDS",
        help=f"time limit of a tool call, for tools that set none (default "
             f"{_default(ToolRegistry, 'default_timeout'):g}; a --tools file's own ToolRegistry "
             "keeps its default unless this is given)")
    mcp = parser.add_argument_group("MCP servers",
                                    "Their tools join those of --tools; with either, the demo "
                                    "tools are left out. A tool whose name is taken is registered "
                                    "as NAME_tool, NAME being its server's name in --mcp-config "
                                    "(for a --mcp server, that is an error). A tool whose schema "
                                    "cannot be enforced is left out, with a warning that says why.")
    mcp.add_argument("--mcp", action="append", metavar="COMMAND_OR_URL",
                     help="an MCP server (repeatable): a command, "
                     "run without a shell (\"python -m mcp_server_time\"), or an http(s):// URL")
    mcp.add_argument("--mcp-config", metavar="FILE",
                     help="the servers of a JSON file in Claude Desktop's format: "
                     "{\"mcpServers\": {NAME: {\"command\", \"args\", \"env\"} or {\"url\", "
                     "\"headers\"}}}")
    mcp.add_argument("--mcp-tools", metavar="NAME,...",
                     help="keep only these MCP tools (as the servers name them)")
    add("--system-prompt", metavar="FILE",
        help="a system prompt from a file; {tools} in it lists the tools")
    add("--allow-http-key", action="store_true",
        help="send $OPENAI_API_KEY over plain http to a non-loopback host")
    add("--trace", metavar="FILE", help="write every step as a JSON line, as it happens")
    add("--replay", metavar="FILE", help="replay the model replies of a saved result or trace")
    add("--json", action="store_true", help="print the whole result as JSON on stdout")
    add("--quiet", action="store_true", help="no progress lines on stderr")
    add("-v", "--verbose", action="count", default=0,
        help="log retries, adaptations and ladder rungs; -vv: debug")
    add("--offline", action="store_true",
        help="use the offline mock model even if one is configured")
    add("-i", "--interactive", action="store_true",
        help="ask several questions in one conversation; steps count from 1 in each turn; "
             "'exit', 'quit' or end of input leaves")
    add("--version", action="version", version=f"agent.py {__version__}")

    def shard(text: str) -> tuple:
        """An argparse type for --shard K/N: 1 <= K <= N, else exit 2."""
        match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
        if not match or not 1 <= int(match[1]) <= int(match[2]):
            raise argparse.ArgumentTypeError(f"invalid shard {text!r} (must be K/N with 1 <= K <= "
                                             "N, such as 2/8)")
        return int(match[1]), int(match[2])

    batch = parser.add_argument_group("batch runs",
                                      "run every task of a file; the options above apply to each")
    batch.add_argument("--batch", metavar="FILE",
                       help='a JSON Lines file, a task a line: {"id": ..., "task": ...}, '
                       'optionally "expect": a number or text the answer must hold')
    batch.add_argument("--out", metavar="FILE",
                       help="with --batch: append each result here as a JSON line; "
                       "run again with the same --out to resume")
    batch.add_argument("--workers", type=_cli_number("workers"),
                       default=_default(run_batch, "workers"),
                       help=f"tasks run at once (default {_default(run_batch, 'workers')})")
    batch.add_argument("--traces", metavar="DIR",
                       help="save each task's whole result in DIR, for --replay")
    batch.add_argument("--shard", metavar="K/N", type=shard, default=(1, 1),
                       help="run only the tasks on lines K, K+N, K+2N, ... of the file (N "
                            "machines, one file)")
    return parser


def _cli_args(argv: Optional[list[str]]) -> argparse.Namespace:
    """The flags, the task's words anywhere among them; SystemExit for bad usage.

    A flag that does not exist is bad usage, never taken for a longer one, and the error names the
    flag meant.
    """
    parser = _cli_parser()
    args, unknown = parser.parse_known_intermixed_args(argv)
    if unknown:
        # the flags it may mean: those it abbreviates, else the closest spelling
        word = unknown[0].split("=", 1)[0]
        flags = [flag for flag in parser._option_string_actions if flag.startswith("--")]
        meant = " or ".join(flag for flag in flags if flag.startswith(word) and len(word) > 2)
        if not meant:
            close = difflib.get_close_matches(word, flags, n=1, cutoff=0.75)
            meant = close[0] if close else None
        parser.error("unrecognized argument "
                     f"{_cut(unknown[0], 40, one_line=True, escape=True)}"
                     + (f": did you mean {meant}?" if meant else ""))
    return args


def _cli_load_tools(path: str) -> Union[ToolRegistry, list]:
    """What a --tools file defines: its ToolRegistry named ``tools`` as it is, else its public
    functions with a docstring; ValueError when it cannot be loaded or defines none."""
    # the file's own `import agent` must get this module, so its ToolRegistry is ours
    sys.modules.setdefault("agent", sys.modules[__name__])
    name = "agent_tools_" + re.sub(r"\W", "_", os.path.splitext(os.path.basename(path))[0])
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ImportError("not a Python file")
        module = importlib.util.module_from_spec(spec)
        # as import does: a @dataclass under postponed annotations looks itself up
        sys.modules[name] = module
        spec.loader.exec_module(module)
    # the user's own code: any failure is a configuration error
    except (Exception, SystemExit) as exc:
        sys.modules.pop(name, None)
        raise ValueError(f"could not load tools from {path}: {type(exc).__name__}: {exc}") from None
    registry = getattr(module, "tools", None)
    if isinstance(registry, ToolRegistry):
        return registry
    functions = [value for key, value in vars(module).items() if not key.startswith("_")
                 and inspect.isfunction(value) and value.__module__ == name and value.__doc__]
    if not functions:
        raise ValueError(f"{path} defines no tools: no ToolRegistry named 'tools' and no public "
                         "function with a docstring")
    return functions


def _cli_mcp(registry: ToolRegistry, args: argparse.Namespace) -> None:
    """Add the servers of --mcp and --mcp-config, keeping the tools --mcp-tools names; ToolError for
    a name none has, and then no server is left running."""
    wanted = [name.strip() for name in args.mcp_tools.split(",")
              if name.strip()] if args.mcp_tools else None
    servers = [(server, {}) for server in args.mcp or []]
    if args.mcp_config:  # a Claude Desktop style file; ValueError when malformed
        path = args.mcp_config
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
        entries = data.get("mcpServers") if isinstance(data, dict) else None
        if not isinstance(entries, dict):
            raise ValueError(f"{path}: no \"mcpServers\" object")
        for name, entry in entries.items():
            if not isinstance(entry, dict) or entry.get("disabled") is True:
                continue
            # its name in the file names it in messages and prefixes a tool whose name is taken
            if isinstance(entry.get("url"), str):
                servers.append((entry["url"], {"headers": entry.get("headers"),
                                               "config_name": name}))
            elif isinstance(entry.get("command"), str) and isinstance(entry.get("args", []), list):
                servers.append(([entry["command"], *map(str, entry.get("args", []))],
                                {"env": entry.get("env"), "cwd": entry.get("cwd"),
                                 "config_name": name}))
            else:
                raise ValueError(f"{path}: server {name!r} has neither a \"command\" (with "
                                 "\"args\" a list) nor a \"url\"")
    offered: list = []
    try:
        for server, options in servers:
            offered += _add_mcp(registry, server, tools=wanted, missing_ok=True, **options)
        missing = [name for name in wanted or [] if name not in offered]
        if missing:
            raise ToolError(f"no MCP server has a tool {missing[0]!r} (--mcp-tools; they have: "
                            f"{', '.join(offered)})")
    except BaseException:
        registry.close()
        raise


def _cli_model(args: argparse.Namespace) -> tuple:
    """The model to drive and a one-line description of it; ValueError/OSError for bad
    configuration."""
    if args.replay:
        return MockLLM.from_trace(args.replay), f"replaying the replies in {args.replay}"
    model = args.model or os.environ.get("OPENAI_MODEL")
    base_url = args.base_url or os.environ.get("OPENAI_BASE_URL")
    if args.offline or not (model or base_url):
        return MockLLM(), ("offline demo model (for a local server pass --base-url URL or set "
                           "OPENAI_BASE_URL, e.g. http://localhost:8080/v1; --model NAME picks a "
                           "model)")
    if not base_url:
        default = _default(OpenAICompatLLM, "base_url")
        if not (os.environ.get("OPENAI_API_KEY") or "").strip():
            raise ValueError(f"no base URL: using {default}, which needs OPENAI_API_KEY, and it is "
                             "not set: set it, or pass --base-url URL (or set OPENAI_BASE_URL) for "
                             "a local server")
        _log.warning("no base URL: using %s (pass --base-url URL or set OPENAI_BASE_URL for a "
                     "local server)", default)
    options = {"model": model or "(asking the server)", "base_url": args.base_url,
               "max_tokens": args.max_tokens, "temperature": args.temperature,
               "timeout": args.timeout}
    if args.allow_http_key:
        options["allow_http_key"] = True
    llm = OpenAICompatLLM.from_env(**options)   # checks the base URL before any request
    if not model:       # the one model the server serves (GET /models), else ValueError
        url = llm._scrub(_models_url(llm.url))   # a key may be in its query
        try:
            # the client's own key rule, proxy rule, opener, deadlines
            names = llm._served_models(args.max_seconds)
        except LLMError as exc:
            error = llm._scrub(str(exc))
            if exc.kind == "connection_refused":
                raise ValueError(f"no server is listening at {llm._scrub(llm.base_url)} "
                                 f"({error}): start it, or check the port (--base-url, "
                                 "OPENAI_BASE_URL)") from None
            raise ValueError(f"no model named, and asking {url} failed ({error}): pass --model "
                             "NAME or set OPENAI_MODEL") from None
        if len(names) != 1:
            served = f"it serves {', '.join(names[:20])}" if names else "it lists none"
            raise ValueError(f"no model named, and {url} does not say which to use ({served}): "
                             "pass --model NAME or set OPENAI_MODEL")
        llm.model = names[0]
    return llm, f"model {llm.model} at {llm._scrub(llm.url)}"


def _cli_confirm(name: str, arguments: dict) -> bool:
    if sys.stdin is None or not sys.stdin.isatty():
        return False  # nobody to ask: decline
    sys.stderr.write(f"Run {name} {json.dumps(arguments)}? [y/N] ")
    sys.stderr.flush()
    try:
        return _cli_read_line().strip().lower() in ("y", "yes")
    except UnicodeDecodeError:
        return False


def _cli_agent(args: argparse.Namespace) -> tuple:
    """Build everything from the flags before anything is opened: the agent, its label and the
    tasks (one, or the turns of a replayed conversation).

    ValueError/OSError/AgentError when something is bad; a warning for what will not work as meant.
    """
    if args.task is not None and not args.task.strip():
        raise ValueError("empty task: give a task, or none at all for the demo")
    mcp = bool(args.mcp or args.mcp_config)
    # the demo tools, or those of the --tools files (the first file's own ToolRegistry, as it is,
    # holds them all), and where each came from
    if not args.tools and not mcp:
        registry, sources = _demo_tools(), {}
    else:
        loaded = [(path, _cli_load_tools(path)) for path in args.tools or []]
        registry = next((tools for _, tools in loaded if isinstance(tools, ToolRegistry)),
                        None) or ToolRegistry()
        sources = {tool.name: path for path, tools in loaded if tools is registry for tool in tools}
        for path, tools in loaded:
            for tool in (tools if tools is not registry else ()):
                try:
                    registry.register(tool)
                except (ToolError, ValueError, TypeError) as exc:  # a type hint, a name taken
                    raise ValueError(f"{path}: {exc}") from None
            sources.update({tool.name: path for tool in registry if tool.name not in sources})
    if args.tool_timeout is not None:
        registry.default_timeout = args.tool_timeout
    _cli_mcp(registry, args)
    _log.info("tools: %s",
              ", ".join(f"{tool.name} ({sources.get(tool.name, 'MCP' if mcp else 'demo')})"
                                     for tool in registry))
    system_prompt = None
    if args.system_prompt:
        with open(args.system_prompt, encoding="utf-8-sig") as handle:
            system_prompt = handle.read()
        if "{tools}" not in system_prompt:
            _log.warning("%s has no {tools}: the model will not see the tools, nor the reply "
                         "format unless the prompt gives it (see the README)", args.system_prompt)
    llm, label = _cli_model(args)
    if (args.tools or mcp) and isinstance(llm, MockLLM) and llm.replies is None:
        raise ValueError(f"the offline demo model only calls the demo tools ({_CALCULATOR}, "
                         f"{_CLOCK}), not those of --tools or --mcp: to use them with a model, "
                         "pass --base-url URL (or set OPENAI_BASE_URL), without --offline")
    tasks = (_cli_replayed(args.replay, registry, args.task) if args.replay
             else [args.task] if args.task else []) or [_DEMO_TASK]
    agent = Agent(llm, registry, system_prompt=system_prompt, max_steps=args.max_steps,
                  max_seconds=args.max_seconds, max_context_chars=args.max_context_chars,
                  memory=args.memory, constrain="always" if args.json_schema else args.constrain,
                  confirm=_cli_confirm)
    return agent, label, tasks


def _cli_replayed(path: str, registry: ToolRegistry, task: Optional[str]) -> list[str]:
    """The tasks to replay: the one given, else the saved run's, or each turn's of a saved ``-i``
    conversation in order (none when it holds none).

    Warns first when the saved replies call tools this run does not have.
    """
    records, called = _trace_records(path), set()
    for step in (step for record in records for step in _record_steps(record)):
        raw = step.get("raw") if isinstance(step, dict) else None
        try:                        # the tool a saved reply calls, read as the replay will read it
            action = parse_action(raw) if isinstance(raw, str) else None
        except ActionFormatError:
            continue
        if action is not None and action.kind == "tool_call":
            called.add(action.name)
    missing = sorted(name for name in called if name not in registry)
    if missing:
        _log.warning("the replayed run called %s, which this run does not have: every such call "
                     "will get 'unknown tool' (pass the --tools file it used)",
                     ", ".join(map(repr, missing)))
    if task:
        return [task]
    tasks, before = [], []
    for record in records:     # a result each turn
        messages = record.get("messages") if isinstance(record, dict) else None
        if not (isinstance(messages, list) and all(isinstance(m, dict)
                                                   and isinstance(m.get("content"), str)
                                                   and "role" in m for m in messages)):
            continue
        # A later turn's task is what it added to the turn before: a message, or the text joined
        # to that turn's last message (a run that stopped on an observation); else the last task.
        k, last, at = len(before), before[-1]["content"] if before else None, _task_index(messages)
        if k and len(messages) >= k and messages[k - 1]["content"].startswith(f"{last}\n\n"):
            tasks.append(messages[k - 1]["content"][len(last) + 2:])
        elif k and len(messages) > k and messages[k]["role"] == "user":
            tasks.append(messages[k]["content"])
        elif at is not None:
            tasks.append(messages[at]["content"])
        before = messages
    if not tasks:
        _log.warning("%s holds no task (its run did not finish): replaying it with the demo task",
                     path)
    return tasks


def _cli_progress(step: Step, first: Optional[int] = None) -> str:
    """The step's line: what the model did (its thought and call, or the reply it could not read),
    never the reply; after a call, ``→`` and the start of what came back, an error as such, or, for
    a repeat of the call of step ``first``, that it was not run again (never the agent's nudge)."""
    action = step.action
    if step.raw is None:
        what = f"model failed: {_cut(step.error, 200, one_line=True, escape=True)}"
    elif action is None:
        reason = _asked_problem(step.error or "")
        what = (f"unparseable reply {_cut(step.raw, 50, one_line=True, escape=True)!r}: "
                f"{_cut(reason, 90, one_line=True, escape=True)}")
    elif action.kind == "final":
        what = f"final answer: {_cut(action.answer, 70, one_line=True, escape=True)}"
    else:
        if first not in (None, step.index):
            came = f"the call of step {first} again: not run again"
        elif any(_PAST_TASK in note for note in step.notes):
            came = _PAST_TASK
        elif step.error is not None:     # the start of what came back: its error, else its result
            came = _cut(step.error if step.error.startswith("ERROR:") else f"ERROR: {step.error}",
                        90, one_line=True, escape=True)
        else:
            came = _cut(_observation_result(step.observation or "", (action.name, action.arguments))
                        or "", 60, one_line=True, escape=True)
        arguments = _cut(json.dumps(action.arguments, ensure_ascii=False), 60, one_line=True,
                         escape=True)
        what = f"{action.name} {arguments} → {came}"
    thought = (f" {_cut(action.thought, 60, one_line=True, escape=True)} |"
               if action and action.thought else "")
    seconds = step.llm_seconds + step.tool_seconds
    return f"[step {step.index}]{thought} {what} ({seconds:.2f} s)"


class _Trace:
    """The --trace file: one JSON line per event (a step, a result), written as it comes; a write
    error is kept for the end."""

    def __init__(self, path: str) -> None:
        self.path, self.error = path, None
        # a new file is private, as save() and --traces write theirs: the conversation goes in it
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_BINARY", 0)
        self._handle = open(os.open(path, flags, 0o600), "wb", buffering=0)

    def write(self, event: str, record: dict) -> None:
        if self.error is not None:
            return  # a full disk stays full: the run goes on, the end says so
        try:
            _write_json_line(self._handle, {"event": event, **record})
        except OSError as exc:
            self.error = exc

    def close(self) -> None:
        try:
            self._handle.close()
        except OSError as exc:
            self.error = self.error or exc


def _cli_on_step(args: argparse.Namespace, trace: Optional[_Trace], status: Optional[_StatusLine],
                 llm: Any) -> Callable[[Step], None]:
    # the one model name the server answered as, when it was not the one asked for
    warned: list = []
    firsts: dict = {}   # this run's calls: (name, canonical arguments) -> the step that made it

    def on_step(step: Step) -> None:
        # one whole line per step, flushed, so an interrupted run keeps its steps
        if trace is not None:
            trace.write("step", step.to_dict())
        if step.index == 1:
            firsts.clear()
        first = None
        if step.action is not None and step.action.kind == "tool_call":
            key = (step.action.name, _canonical(step.action.arguments))
            first = firsts.setdefault(key, step.index)
        if status is not None:
            status.say(_cli_progress(step, first))
        served = getattr(llm, "last_model", None) if step.raw is not None else None
        if (isinstance(served, str) and not warned
            and not served.startswith(getattr(llm, "model", ""))):
            # a server may answer with a dated snapshot of the name asked: a longer name is the
            # same model (docs/NOTES.md, "The command line")
            warned.append(served)
            _log.warning("the server answered as model %r, not %r: it may serve one model whatever "
                         "the name asked",
                         served, llm.model)
    return on_step


# -- CLI, batch runs -------------------------------------------------------------------
# --batch: check the task file, build the agent, run_batch with progress, print the summary

def _cli_batch(args: argparse.Namespace) -> int:
    """--batch: every check before anything runs, then the run; the exit code."""
    try:
        to_run = _cli_batch_check(args)
        agent, label, _ = _cli_agent(args)
    except (ValueError, OSError, AgentError) as exc:
        _cli_say(f"agent.py: {exc}")
        return 2
    agent.confirm = None  # nobody to ask while several tasks run: tools that ask first are declined
    progress = _BatchProgress(to_run, args)
    if not args.quiet:
        _cli_say(f"agent.py: {label}; {to_run} task(s) to run, {args.workers} at a time")
    try:
        # the tasks of this shard, read as the workers need them (the bad lines were reported)
        tasks = (item for _, item, _ in _task_file(args.batch, args.shard) if item is not None)
        summary = run_batch(agent, tasks, workers=args.workers, out=args.out,
                            traces=args.traces, on_result=progress)
    except KeyboardInterrupt:
        progress.clear()
        _cli_say(f"agent.py: interrupted; {progress.tally.done} result(s) written to {args.out}: "
                 "run the same command again to resume")
        return 130
    except (ValueError, OSError) as exc:   # --out or --traces cannot be written
        progress.clear()
        _cli_say(f"agent.py: {exc}")
        return 2
    progress.clear()
    # the summary (a table, or JSON with --json) on stdout; 3 when a task's model endpoint failed
    if args.json:
        _cli_say(json.dumps(dict(summary, model=label), ensure_ascii=False), sys.stdout)
    else:   # a small table, one figure a line, for reading (and pasting side by side)
        checked = summary["checked"]
        solved = (f"{summary['solved']} of {checked} ({summary['solved_percent']}%)" if checked
                  else "no task has expect")
        reasons = ", ".join(f"{reason} {n}" for reason, n in summary["stop_reasons"].items())
        estimated = " (estimated)" if summary["estimated_tokens"] else ""
        rows = [("endpoint", label),
                ("tasks", f"{summary['tasks']} ({summary['earlier']} from an earlier run)"),
                ("solved", solved), ("stop reasons", reasons or "none"),
                ("steps", f"{summary['steps_per_task']} per task"),
                ("format errors", f"{summary['format_errors_per_task']} per task"),
                ("tokens", f"{summary['prompt_tokens']} prompt, {summary['completion_tokens']} "
                           f"completion{estimated}"),
                ("seconds", f"p50 {summary['seconds_p50']}, p95 {summary['seconds_p95']} a task; "
                            f"{summary['wall_seconds']} in all")]
        _cli_say("\n".join(f"{name:<14}{value}" for name, value in rows), sys.stdout)
    failed = summary["stop_reasons"].get("llm_error", 0)
    if failed:
        _cli_say(f"agent.py: {failed} task(s) stopped with llm_error (the model endpoint failed); "
                 f"to run them again, remove their lines from {args.out} and run the same command")
    return _STOPS["llm_error"].exit_code if failed else 0


def _cli_batch_check(args: argparse.Namespace) -> int:
    """Refuse what does not go with --batch, report bad lines, refuse duplicate ids; the number of
    tasks to run."""
    alone = [text for name, text in {"task": "a task", "trace": "--trace (use --traces DIR)",
                                     "replay": "--replay", "interactive": "--interactive"}.items()
             if getattr(args, name)]
    if alone:
        raise ValueError(f"--batch runs the tasks of its file: {alone[0]} does not go with it")
    if not args.out:
        raise ValueError("--batch needs --out FILE: the results go there, and a second run resumes "
                         "from it")
    # one of our own files; an --out that is no regular file is refused below, with its reason
    others = {"the task file": lambda: os.stat(args.batch),
              "stdout, where the summary goes": lambda: os.fstat(sys.stdout.fileno()),
              "stderr, where the progress goes": lambda: os.fstat(sys.stderr.fileno())}
    for what, stat_of in others.items() if os.path.isfile(args.out) else ():
        try:
            same = os.path.samestat(os.stat(args.out), stat_of())
        # missing, or a stream with no file below it (a test's StringIO)
        except (OSError, ValueError, AttributeError):
            same = False
        if same:
            raise ValueError(f"--out {args.out} is {what}: the results go to a file of their own; "
                             "nothing was run")
    done = set()      # the ids already in the results file; ValueError when another run holds it
    handle = _open_results(args.out, create=False)
    if handle is not None:
        with handle:
            done = {_id_key(record["id"]) for _, record in _whole_lines(handle, args.out)}
    # the whole task file, read once, each bad line reported: the tasks of this shard not done, the
    # repeated ids
    seen, repeated, to_run = set(), [], 0
    try:
        for number, item, problem in _task_file(args.batch):
            if problem is not None:
                _cli_say(f"agent.py: {args.batch} line {number}: {problem}; skipped")
                continue
            key = _id_key(item["id"])
            if key in seen:
                repeated.append(f"{key} (line {number})")
            seen.add(key)
            to_run += _in_shard(number, args.shard) and key not in done
    except OSError as exc:
        raise OSError(f"cannot read the task file {args.batch}: {exc.strerror or exc}") from None
    if repeated:
        raise ValueError(f"{args.batch} repeats ids, so results could not be told apart: "
                         f"{', '.join(repeated)}; nothing was run")
    return to_run


class _BatchProgress:
    """--batch's progress on stderr: a live line on a terminal, else a line per task; none with
    --quiet."""

    def __init__(self, total: int, args: argparse.Namespace) -> None:
        self.total, self.workers, self.tally = total, args.workers, _Tally()
        self.live = not args.quiet and sys.stderr.isatty()
        self.lines = not args.quiet and not self.live

    def __call__(self, record: dict) -> None:
        self.tally.add(record)
        if self.lines:
            solved = {True: ", solved", False: ", not solved"}.get(record.get("solved"), "")
            shown = _cut(json.dumps(record['id']), 40, one_line=True, escape=True)
            _cli_say(f"[{self.tally.done}/{self.total}] {shown}: "
                     f"{record['stop_reason']}{solved}, {record['steps']} step(s), "
                     f"{record['seconds']:.1f} s")
        elif self.live:
            line = _cut(self.line(), 10 ** 6, one_line=True, escape=True)
            sys.stderr.write("\r\x1b[K" + _fit(line, shutil.get_terminal_size().columns - 1))
            sys.stderr.flush()

    def line(self) -> str:
        """done/total, solved, running, failures by stop reason, tasks per minute, time left."""
        tally = self.tally
        per_minute = tally.done / max(time.monotonic() - tally.started, 1e-9) * 60
        left = (self.total - tally.done) / per_minute * 60 if per_minute else 0.0
        failed = ", ".join(f"{reason} {n}" for reason,
                           n in tally.reasons.items() if n and reason != "final")
        return (f"{tally.done}/{self.total} done, {tally.solved} solved, "
                f"{min(self.workers, self.total - tally.done)} running, {failed or 'no failures'}, "
                f"{per_minute:.1f}/min, {left:.0f} s left")

    def clear(self) -> None:
        if self.live and self.tally.done:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()


# -- CLI, the status line: what the run is doing while you wait (skip on first read) ---

class _StatusLine:
    """What the run is doing while you wait, on stderr; every stderr line of a run goes through
    ``say``.

    On a terminal, one live line from the moment a model call starts: ``waiting for the model… 3
    s``, then the reply as it streams with a token count (the client's ``on_delta``), then ``running
    clock (limit 30 s)… 2 s`` while a tool runs; a step's line replaces it. Elsewhere, one line once
    a wait has passed _SLOW_SECONDS.
    """

    # off a terminal, a model call or a tool that takes longer gets one line saying so
    _SLOW_SECONDS = 5.0
    _TICK_SECONDS = 0.2   # how often the status line looks at the clock

    def __init__(self, terminal: bool) -> None:
        self.terminal, self._lock, self._stop = terminal, threading.Lock(), threading.Event()
        self.what: Optional[str] = None      # the wait under way, or None
        self.step, self.since, self.text, self.tokens, self.second = 0, 0.0, "", 0, 0
        # off a terminal: the slow line was written; on one: a live line shows
        self.told = self.shown = False
        threading.Thread(target=self._tick_on, daemon=True).start()

    def wait(self, step: int, what: Optional[str]) -> None:
        """The Agent's on_wait: a wait starts (what is awaited), or ends (None)."""
        with self._lock:
            if what is None:
                self.what = None
                self._erase()
                return
            if (step, what) != (self.step, self.what):   # the same wait asked again keeps its clock
                self.step, self.what, self.since, self.told = step, what, _now(), False
            self.text, self.tokens = "", 0
            self._draw()

    def __call__(self, piece: Optional[str]) -> None:
        """The client's on_delta: the next piece of the reply, or None when a retry starts it
        again."""
        with self._lock:
            self.text, self.tokens = (("", 0) if piece is None
                                      else ((self.text + piece)[-400:], self.tokens + 1))
            self._draw()

    def say(self, text: str) -> None:
        """Write a line on stderr (as _cli_say does) without tearing the live line."""
        with self._lock:
            self._erase()
            _cli_say(text)
            self._draw()

    def close(self) -> None:
        self._stop.set()
        self.wait(0, None)

    def _tick_on(self) -> None:
        while not self._stop.wait(self._TICK_SECONDS):
            with self._lock:
                # a new second to show
                if self.what is not None and int(_now() - self.since) != self.second:
                    self._draw()

    def _draw(self) -> None:
        if self.what is None or not sys.stderr:
            return
        seconds = _now() - self.since
        self.second = int(seconds)
        if not self.terminal:
            if not self.told and seconds >= self._SLOW_SECONDS:
                self.told = True
                _cli_say(f"agent.py: step {self.step}: {self.what}, {seconds:.0f} s so far…")
            return
        head = f"[step {self.step}] {self.tokens} tokens, {seconds:.0f} s: " if self.tokens else \
            f"[step {self.step}] {self.what}… {seconds:.0f} s"
        room = max(10, shutil.get_terminal_size().columns - _columns(head) - 1)
        tail = _fit(_cut(self.text, 10 ** 6, one_line=True, escape=True), room, tail=True) \
            if self.tokens else ""
        sys.stderr.write("\r\x1b[K" + head + tail)
        sys.stderr.flush()
        self.shown = True

    def _erase(self) -> None:
        if self.shown and sys.stderr:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()
        self.shown = False


def _fit(text: str, columns: int, tail: bool = False) -> str:
    """The start of text that fits in ``columns`` terminal columns, cut with "…"; with tail, its
    end. A live line that runs past its row leaves a stale row behind at every redraw.

    >>> _fit("abcdef", 4), _fit("日本語の", 5), _fit("abc日本", 4, tail=True)
    ('abc…', '日本…', '日本')
    """
    if _columns(text) <= columns:
        return text
    kept, used = [], 1 if not tail else 0
    for char in reversed(text) if tail else text:
        used += _columns(char)
        if used > columns:
            break
        kept.append(char)
    return "".join(reversed(kept)) if tail else "".join(kept) + "\u2026"


def _columns(text: str) -> int:
    """The terminal columns text takes: two for an East Asian wide or fullwidth character (CJK,
    most emoji), none for a combining mark or a format character, else one; an emoji variation
    selector counts one, since it may widen the character before it."""
    import unicodedata

    return sum(1 if char == "\ufe0f" else
               0 if unicodedata.combining(char) or unicodedata.category(char) in ("Mn", "Me", "Cf")
               else 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1 for char in text)


if __name__ == "__main__":
    sys.exit(main())

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
"""

from __future__ import annotations

import ast
import json
import logging
import math
import operator
import os
import queue
import re
import sys
import threading
import time
import types
import typing
from dataclasses import asdict, dataclass, field
from collections.abc import Iterable
from typing import Any, Callable, Optional, Protocol

__all__ = [
    "AgentError", "UnsafeExpression", "ActionFormatError", "ToolError", "LLMError",
    "safe_eval", "Tool", "ToolRegistry", "Action", "parse_action", "SYSTEM_PROMPT",
    "LLM", "MockLLM", "OpenAICompatLLM", "STOP_REASONS", "Step", "AgentResult", "Agent", "run", "main",
]
__version__ = "0.1.0"

_log = logging.getLogger("agent")


# -- Errors ----------------------------------------------------------------------------

class AgentError(Exception):
    """Base class of every error agent.py raises on purpose."""


class UnsafeExpression(AgentError, ValueError):
    """safe_eval refused an expression; ``.expression`` keeps the text."""

    def __init__(self, message: str, expression: str = "") -> None:
        super().__init__(message)
        self.expression = expression


class ActionFormatError(AgentError, ValueError):
    """A reply is not one valid action; the message is written to the model, ``.text`` keeps the reply."""

    def __init__(self, message: str, text: str = "") -> None:
        super().__init__(message)
        self.text = text


class ToolError(AgentError):
    """A tool definition is invalid; raised at registration (a programming error)."""


class LLMError(AgentError):
    """The model endpoint failed after retries; ``.status`` is the HTTP status or None.

    ``.kind`` names a failure the agent can act on: ``"context_overflow"`` when the
    prompt does not fit the model's context window, else None.
    """

    def __init__(self, message: str, status: Optional[int] = None, kind: Optional[str] = None) -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind


# -- Calculator ------------------------------------------------------------------------

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
            raise UnsafeExpression(f"{base} ** {exponent} would have more than {_MAX_INT_DIGITS} digits")
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
_BRACKETS = re.compile(r"[][(){}]")


def _check_size(expr: str) -> None:
    """Refuse long input and deep brackets before parsing, so the parser never sees them."""
    if len(expr) > _MAX_EXPR_CHARS:
        raise UnsafeExpression(f"expression is {len(expr):,} characters long (limit {_MAX_EXPR_CHARS:,})", expr[:100])
    depth = 0
    for match in _BRACKETS.finditer(expr):
        depth += 1 if match.group() in "([{" else -1
        if depth > _MAX_NESTING:
            raise UnsafeExpression(f"brackets nested more than {_MAX_NESTING} levels deep", expr[:100])


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


def _operator_name(op: ast.AST) -> str:
    return _OPERATOR_SYMBOLS.get(type(op), type(op).__name__)


def _literal(value):
    if type(value) in (int, float):
        return _check_number(value)
    if isinstance(value, bool):
        raise UnsafeExpression(f"booleans ({value}) are not numbers here")
    if isinstance(value, complex):
        raise UnsafeExpression(f"complex numbers ({value!r}) are not allowed")
    kind = {str: "strings", bytes: "bytes"}.get(type(value), repr(value))
    raise UnsafeExpression(f"{kind} not allowed in a calculation")


def safe_eval(expr: str) -> int | float:
    """Evaluate an arithmetic expression without eval: ``ast`` plus a whitelist.

    Allowed: int and float literals, ``+ - * / // % **``, unary ``+ -``, parentheses,
    the functions in ``_FUNCTIONS`` and the constants ``pi e tau``. Exact division of
    integers stays an integer. Everything else -- names, attributes, strings, booleans,
    complex numbers, comparisons, lambdas, comprehensions -- raises
    ``UnsafeExpression`` naming the offending part, as do division by zero, overflow,
    ``inf``/``nan`` results, integers over 4,300 digits, input over 10,000 characters
    and nesting over 100 levels. Nothing else is ever raised.

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
    _check_size(expr)
    try:
        tree = ast.parse(expr.strip(), mode="eval")
        return _check_number(_eval_node(tree.body, 0), expr)
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
                raise UnsafeExpression(f"operator {_operator_name(binop.op)} is not allowed")
            value = _check_number(op(value, _eval_node(binop.right, depth + 1)))
        return value
    if isinstance(node, ast.UnaryOp):
        op = _UNARY_OPS.get(type(node.op))
        if op is None:
            raise UnsafeExpression(f"operator {_operator_name(node.op)} is not allowed")
        return op(_eval_node(node.operand, depth + 1))
    if isinstance(node, ast.Constant):
        return _literal(node.value)
    if isinstance(node, ast.Name):
        if node.id in _CONSTANTS:
            return _CONSTANTS[node.id]
        if node.id in _FUNCTIONS:
            raise UnsafeExpression(f"function {node.id!r} must be called, e.g. {node.id}(2)")
        raise UnsafeExpression(f"name {node.id!r} is not allowed (constants: {', '.join(_CONSTANTS)})")
    if isinstance(node, ast.Call):
        return _call_function(node, depth)
    if isinstance(node, ast.Attribute):
        raise UnsafeExpression(f"attribute access '.{node.attr}' is not allowed")
    raise UnsafeExpression(f"{_SYNTAX_NAMES.get(type(node), type(node).__name__)} not allowed in a calculation")


def _call_function(node: ast.Call, depth: int):
    name = node.func.id if isinstance(node.func, ast.Name) else None
    if name not in _FUNCTIONS:
        shown = name or (f".{node.func.attr}" if isinstance(node.func, ast.Attribute) else "an expression")
        raise UnsafeExpression(f"calling {shown} is not allowed (functions: {', '.join(_FUNCTIONS)})")
    if node.keywords:
        raise UnsafeExpression(f"keyword arguments are not allowed in {name}()")
    args = [_eval_node(arg, depth + 1) for arg in node.args]
    try:
        return _check_number(_FUNCTIONS[name](*args))
    except UnsafeExpression:
        raise
    except (ValueError, TypeError, ArithmeticError) as exc:
        raise UnsafeExpression(f"{name}() failed: {exc}") from None


# -- Tools -----------------------------------------------------------------------------

_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}\Z")
_SIMPLE_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean", list: "array", dict: "object"}
_UNION_TYPES = (typing.Union, getattr(types, "UnionType", typing.Union))  # X | Y on 3.10+
_ARGS_HEADERS = ("Args:", "Arguments:", "Parameters:")
_ARG_LINE = re.compile(r"\s+\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)")


def _check_tool_name(name: Any) -> str:
    if not isinstance(name, str) or not _TOOL_NAME.match(name):
        raise ToolError(f"invalid tool name {name!r} (use 1-64 letters, digits, '_' or '-')")
    return name


def _hint_schema(hint: Any, where: str) -> dict:
    """JSON Schema for one type hint; ToolError for hints a model cannot be told about."""
    if hint in _SIMPLE_TYPES:
        return {"type": _SIMPLE_TYPES[hint]}
    if hint is Any:
        return {}
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Literal:
        kinds = {_SIMPLE_TYPES.get(type(arg)) for arg in args}
        schema: dict = {"enum": list(args)}
        if len(kinds) == 1 and None not in kinds:
            schema["type"] = kinds.pop()
        return schema
    if origin in _UNION_TYPES and len(args) == 2 and type(None) in args:
        inner = dict(_hint_schema(next(a for a in args if a is not type(None)), where))
        if isinstance(inner.get("type"), str):
            inner["type"] = [inner["type"], "null"]
        if "enum" in inner:
            inner["enum"] = inner["enum"] + [None]
        return inner
    if origin is list:
        return {"type": "array", "items": _hint_schema(args[0], where)} if args else {"type": "array"}
    if origin is dict:
        return {"type": "object"}
    raise ToolError(f"unsupported type hint {hint!r} for {where} "
                    "(use str, int, float, bool, list[...], dict, Optional[...] or Literal[...])")


def _parse_docstring(doc: Optional[str]) -> tuple[str, dict]:
    """The first paragraph, and ``{parameter: description}`` from a Google-style Args: section."""
    lines = (doc or "").strip().splitlines()
    summary_lines = []
    for line in lines:
        if not line.strip() or line.strip() in _ARGS_HEADERS:
            break
        summary_lines.append(line.strip())
    params: dict = {}
    current, indent, in_args = None, None, False
    for line in lines:
        if line.strip() in _ARGS_HEADERS:
            in_args, indent = True, None
            continue
        if not in_args or not line.strip():
            continue
        level = len(line) - len(line.lstrip())
        if level == 0:
            in_args = False  # the next section starts
            continue
        match = _ARG_LINE.match(line)
        if match and (indent is None or level <= indent):
            indent, current = level, match.group(1)
            params[current] = match.group(2).strip()
        elif current:
            params[current] = (params[current] + " " + line.strip()).strip()
    return " ".join(summary_lines), params


def _type_hints(func: Callable) -> dict:
    # A callable object keeps its hints on its class's __call__; a partial has none to read.
    target = func if isinstance(func, (types.FunctionType, types.MethodType)) else type(func).__call__
    if not isinstance(target, (types.FunctionType, types.MethodType)):
        return {}
    try:
        return typing.get_type_hints(target)
    except Exception as exc:
        raise ToolError(f"cannot resolve the type hints of {func!r}: {exc}") from None


def _infer_parameters(func: Callable, name: str, arg_docs: dict) -> dict:
    import inspect

    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError) as exc:
        raise ToolError(f"cannot read the signature of tool {name!r}: {exc}") from None
    hints = _type_hints(func)
    properties, required = {}, []
    for param in signature.parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ToolError(f"tool {name!r}: *args/**kwargs ({param.name}) cannot be described to a model; "
                            "use named parameters or pass parameters=")
        if param.kind is param.POSITIONAL_ONLY:
            raise ToolError(f"tool {name!r}: positional-only parameter {param.name!r} cannot be passed by name")
        schema = dict(_hint_schema(hints.get(param.name, Any), f"parameter {param.name!r} of tool {name!r}"))
        if param.name in arg_docs:
            schema["description"] = arg_docs[param.name]
        if param.default is param.empty:
            required.append(param.name)
        properties[param.name] = schema
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


@dataclass
class Tool:
    """One function the model may call: its name, description and JSON Schema of arguments."""

    name: str
    description: str
    parameters: dict                  # JSON Schema of the arguments object
    func: Callable[..., Any]
    timeout: Optional[float] = None   # seconds; None: the registry's default
    confirm: bool = False             # ask confirm(name, arguments) before every run

    @classmethod
    def from_function(cls, func: Callable, *, name: Optional[str] = None, description: Optional[str] = None,
                      parameters: Optional[dict] = None, timeout: Optional[float] = None,
                      confirm: bool = False) -> Tool:
        """Build a Tool from a plain function: name, docstring and signature; ToolError if it cannot be described."""
        if not callable(func):
            raise ToolError(f"a tool must be callable, got {type(func).__name__}")
        name = name if name is not None else getattr(func, "__name__", None)
        if name == "<lambda>":
            raise ToolError("a lambda has no name: register it with name=...")
        _check_tool_name(name)
        summary, arg_docs = _parse_docstring(getattr(func, "__doc__", None))
        if parameters is None:
            parameters = _infer_parameters(func, name, arg_docs)
        elif not isinstance(parameters, dict) or parameters.get("type") != "object":
            raise ToolError(f"parameters of tool {name!r} must be a JSON Schema with \"type\": \"object\"")
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0):
            raise ToolError(f"invalid timeout {timeout!r} for tool {name!r} (must be > 0 seconds or None)")
        return cls(name, description or summary or name, parameters, func, timeout, bool(confirm))


class _ArgumentError(Exception):
    """Arguments do not match a tool's schema (internal; becomes an ERROR observation)."""


_JSON_TYPE_NAMES = {str: "string", bool: "boolean", int: "integer", float: "number",
                    list: "array", dict: "object", type(None): "null"}


def _json_type(value: Any) -> str:
    return _JSON_TYPE_NAMES.get(type(value), type(value).__name__)


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return f"{_json_type(value)} {text if len(text) <= 60 else text[:57] + '...'}"


def _is_type(value: Any, kind: str) -> bool:
    if kind == "integer":
        return (type(value) is int) or (type(value) is float and value.is_integer())
    if kind == "number":
        return type(value) in (int, float)
    expected = {"string": str, "boolean": bool, "array": list, "object": dict, "null": type(None)}.get(kind)
    return expected is None or type(value) is expected


def _truncate(text: str, max_chars: Optional[int]) -> str:
    """Keep the head and the tail of a long text, with a marker saying how much was cut."""
    if max_chars is None or len(text) <= max_chars:
        return text
    tail = max_chars // 3
    head = max_chars - tail
    return f"{text[:head]}\n[... {len(text) - head - tail:,} characters cut ...]\n{text[len(text) - tail:]}"


class _Timeout(Exception):
    """A tool ran past its time limit (internal)."""


class _Worker:
    """A reusable daemon thread that runs one tool call at a time."""

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue = queue.SimpleQueue()
        self.results: queue.SimpleQueue = queue.SimpleQueue()
        threading.Thread(target=self._serve, name="agent-tool", daemon=True).start()

    def _serve(self) -> None:
        while True:
            job = self.jobs.get()
            if job is None:
                return  # abandoned after a timeout, or shut down
            func, kwargs = job
            try:
                self.results.put((True, func(**kwargs)))
            except BaseException as exc:  # handed to the caller, which reports it
                self.results.put((False, exc))


def _confirmed(confirm: Optional[Callable], name: str, arguments: dict) -> bool:
    if confirm is None:
        return False
    try:
        return confirm(name, arguments) is True
    except Exception:
        _log.warning("confirm callback failed for %s; treating it as declined", name, exc_info=True)
        return False


def _validate(value: Any, schema: dict, path: str) -> Any:
    """Check value against the JSON Schema subset tools use; return it with integral floats as ints.

    Supported: type (one or a list), enum, const, properties, required,
    additionalProperties (false), items, anyOf. Raises _ArgumentError naming the parameter.
    """
    kinds = schema.get("type")
    if kinds is not None:
        kinds = [kinds] if isinstance(kinds, str) else list(kinds)
        matched = next((kind for kind in kinds if _is_type(value, kind)), None)
        if matched is None:
            raise _ArgumentError(f"parameter {path!r} must be {' or '.join(kinds)}, got {_shown(value)}")
        if matched == "integer":
            value = int(value)
    if "enum" in schema and not any(value == v and type(value) is type(v) for v in schema["enum"]):
        raise _ArgumentError(f"parameter {path!r} must be one of {json.dumps(schema['enum'])}, got {_shown(value)}")
    if "const" in schema and value != schema["const"]:
        raise _ArgumentError(f"parameter {path!r} must be {json.dumps(schema['const'])}, got {_shown(value)}")
    if "anyOf" in schema:
        value = _validate_any_of(value, schema["anyOf"], path)
    if isinstance(value, dict):
        value = _validate_object(value, schema, path)
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        value = [_validate(item, schema["items"], f"{path}[{i}]") for i, item in enumerate(value)]
    return value


def _validate_any_of(value: Any, options: list, path: str) -> Any:
    errors = []
    for option in options:
        try:
            return _validate(value, option, path)
        except _ArgumentError as exc:
            errors.append(str(exc))
    raise _ArgumentError("; or ".join(errors) or f"parameter {path!r} matches no allowed shape")


def _validate_object(value: dict, schema: dict, path: str) -> dict:
    properties = schema.get("properties", {})
    prefix = f"{path}." if path else ""
    for key in schema.get("required", []):
        if key not in value:
            raise _ArgumentError(f"missing required parameter {prefix + key!r}")
    if schema.get("additionalProperties") is False:
        extra = [key for key in value if key not in properties]
        if extra:
            allowed = ", ".join(properties) or "none"
            raise _ArgumentError(f"unexpected parameter {prefix + extra[0]!r} (allowed: {allowed})")
    return {key: _validate(item, properties[key], prefix + key) if key in properties else item
            for key, item in value.items()}


class ToolRegistry:
    """The tools a model may call, by name; ``call`` validates, runs and never raises.

    Tools with a time limit run on reused worker threads: a limit that does not
    fire costs microseconds, and a tool that overruns is abandoned (its thread
    finishes in the background) and its worker replaced.
    """

    def __init__(self, default_timeout: Optional[float] = 30.0) -> None:
        self.default_timeout = default_timeout  # seconds per call; a tool's own timeout wins
        self._tools: dict = {}
        self._idle: list = []
        self._lock = threading.Lock()

    def register(self, func: Any = None, *, name: Optional[str] = None, description: Optional[str] = None,
                 parameters: Optional[dict] = None, timeout: Optional[float] = None, confirm: bool = False) -> Any:
        """Register a function (bare decorator, decorator with options, or direct call) or a Tool.

        Returns the function unchanged (or the Tool). ToolError when the tool
        cannot be described to a model or its name is invalid or taken.
        """
        if isinstance(func, Tool):
            self._add(func)
            return func
        if func is None:
            return lambda f: self.register(f, name=name, description=description, parameters=parameters,
                                           timeout=timeout, confirm=confirm)
        self._add(Tool.from_function(func, name=name, description=description, parameters=parameters,
                                     timeout=timeout, confirm=confirm))
        return func

    def _add(self, tool: Tool) -> None:
        _check_tool_name(tool.name)
        if tool.name in self._tools:
            raise ToolError(f"duplicate tool name {tool.name!r}")
        self._tools[tool.name] = tool

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self):
        return iter(list(self._tools.values()))

    def __len__(self) -> int:
        return len(self._tools)

    def get(self, name: str) -> Optional[Tool]:
        return self._tools.get(name)

    def schemas(self) -> list:
        """The tools in OpenAI's ``tools`` shape, for clients with native function calling."""
        return [{"type": "function", "function": {"name": t.name, "description": t.description,
                                                  "parameters": t.parameters}} for t in self._tools.values()]

    def action_schema(self) -> dict:
        """JSON Schema of one valid reply: ``oneOf`` a tool_call per tool, plus final.

        Give it to a server that does constrained decoding (``response_schema=``)
        and the model cannot write a malformed action.
        """
        branches = [{
            "type": "object",
            "properties": {"type": {"const": "tool_call"}, "thought": {"type": "string"},
                           "name": {"const": t.name}, "arguments": t.parameters},
            "required": ["type", "thought", "name", "arguments"], "additionalProperties": False,
        } for t in self._tools.values()]
        branches.append({
            "type": "object",
            "properties": {"type": {"const": "final"}, "thought": {"type": "string"}, "answer": {"type": "string"}},
            "required": ["type", "thought", "answer"], "additionalProperties": False,
        })
        return {"oneOf": branches}

    def call(self, name: str, arguments: Any, *, confirm: Optional[Callable[[str, dict], bool]] = None,
             max_chars: Optional[int] = None, timeout: Optional[float] = None) -> str:
        """Validate and run one tool call; return its output as text. Never raises.

        Every failure -- unknown tool, invalid arguments, a declined confirmation,
        an exception, a timeout -- comes back as text starting with ``ERROR:`` that
        says what to do next. ``timeout`` caps the tool's own limit (the agent's
        remaining time); output over ``max_chars`` keeps its head and tail.
        """
        try:
            return _truncate(self._call(name, arguments, confirm, timeout), max_chars)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # a last resort: call() must never raise
            return f"ERROR: calling {name!r} failed inside the agent: {type(exc).__name__}: {exc}"

    def _call(self, name: Any, arguments: Any, confirm: Optional[Callable], timeout: Optional[float]) -> str:
        tool = self._tools.get(name) if isinstance(name, str) else None
        if tool is None:
            return self._unknown_tool(name)
        if not isinstance(arguments, dict):
            return f"ERROR: the arguments for {name!r} must be a JSON object, got {_shown(arguments)}."
        try:
            kwargs = _validate(arguments, tool.parameters, "")
        except _ArgumentError as exc:
            expected = json.dumps(tool.parameters.get("properties", {}), ensure_ascii=False)
            return f"ERROR: invalid arguments for {name!r}: {exc}. Expected arguments: {expected}. Fix and call again."
        if tool.confirm and not _confirmed(confirm, name, kwargs):
            return f"ERROR: the user declined to run {name!r} with these arguments. Do not retry it; go on without it."
        limit = tool.timeout if tool.timeout is not None else self.default_timeout
        if timeout is not None:
            limit = timeout if limit is None else min(limit, timeout)
        try:
            result = self._run(tool.func, kwargs, limit)
        except _Timeout:
            return (f"ERROR: {name!r} did not finish within {limit:g} s and was abandoned. "
                    "Try smaller input or another approach.")
        except KeyboardInterrupt:
            raise
        except BaseException as exc:
            return f"ERROR: {name!r} raised {type(exc).__name__}: {exc}. Check the arguments or try another approach."
        if isinstance(result, str):
            return result
        try:
            return json.dumps(result, ensure_ascii=False, default=str)
        except (ValueError, TypeError, RecursionError) as exc:
            return f"ERROR: {name!r} returned a value that cannot be shown as JSON ({exc})."

    def _unknown_tool(self, name: Any) -> str:
        import difflib

        available = ", ".join(self._tools) or "none"
        close = difflib.get_close_matches(str(name), list(self._tools), n=1, cutoff=0.5)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        return f"ERROR: unknown tool {name!r}.{hint} Available tools: {available}."

    def _run(self, func: Callable, kwargs: dict, limit: Optional[float]) -> Any:
        if limit is None:
            return func(**kwargs)  # no limit: run inline, no thread needed
        with self._lock:
            worker = self._idle.pop() if self._idle else None
        worker = worker or _Worker()
        worker.jobs.put((func, kwargs))
        try:
            ok, value = worker.results.get(timeout=max(limit, 0.0))
        except queue.Empty:
            worker.jobs.put(None)  # abandon it: the thread exits when the tool returns
            raise _Timeout from None
        with self._lock:
            self._idle.append(worker)
        if ok:
            return value
        raise value


# -- Protocol --------------------------------------------------------------------------

@dataclass(frozen=True)
class Action:
    """One parsed model turn: a tool call or a final answer, with the repairs applied to read it."""

    kind: str                              # "tool_call" or "final"
    name: Optional[str] = None             # tool name (tool_call)
    arguments: dict = field(default_factory=dict)
    answer: Optional[str] = None           # final answer text (final)
    thought: Optional[str] = None
    repairs: tuple = ()                    # short tags of local repairs; () when the text was clean


SYSTEM_PROMPT = """\
You solve the user's task step by step, using tools when they help.

Reply with exactly one JSON object and nothing else: no Markdown, no text around it.
To call a tool:
{{"type": "tool_call", "thought": "<why>", "name": "{example_name}", "arguments": {example_arguments}}}
To give the final answer:
{{"type": "final", "thought": "<why>", "answer": "<the answer>"}}

Each tool result comes back in a user message that starts with [OBSERVATION]. Never \
write [OBSERVATION] yourself; send one action and wait for it.

Tools (name: description; arguments as JSON Schema):
{tools}"""

_MAX_REPLY_CHARS = 200_000   # a longer reply is refused before any scanning
_MAX_JSON_DEPTH = 100        # brackets nested deeper are refused
_CALL_SHAPE = '{"type": "tool_call", "thought": "...", "name": "<tool name>", "arguments": {...}}'
_FINAL_SHAPE = '{"type": "final", "thought": "...", "answer": "..."}'
_BOTH_SHAPES = f"{_CALL_SHAPE} or {_FINAL_SHAPE}"
_NAME_LOOKALIKES = ("action", "tool", "tool_name", "function")
_ARGUMENT_LOOKALIKES = ("args", "parameters", "params", "input", "action_input", "tool_input")
_ANSWER_LOOKALIKES = ("final_answer", "response", "output")
_CALL_IN_NAME = re.compile(r"[()\[\]{}\"'=\n\r]")

_THINK_OPEN = re.compile(r"<(think|thinking|reasoning)>", re.I)
_THINK_CLOSE = re.compile(r"</(?:think|thinking|reasoning)>", re.I)
_FENCE_OPEN = re.compile(r"```[\w+.-]*[ \t]*\n?")
_ACTION_START = re.compile(r"\{|\[\s*\{")
_STRUCTURE = re.compile(r"[][{}\"']")
_STRING_BODY = {'"': re.compile(r'[^"\\]*(?:\\.[^"\\]*)*"', re.S), "'": re.compile(r"[^'\\]*(?:\\.[^'\\]*)*'", re.S)}
_SPECIAL_TOKEN = re.compile(
    r"<\|?/?[\w.-]{1,40}\|?>|\[/?[A-Z_]{1,20}\]|<｜[^｜<>]{0,40}｜>|```\w*|\b(?:json|JSON|assistant)\b")
_OBSERVATION_TAIL = re.compile(r"\[OBSERVATION\]|\bObservation\s*:|^[ \t>*#]*(?i:observation)\s*:", re.M)
_ACTION_KEY = re.compile(
    r"""(?:\[\s*)?\{\s*["']?(?:type|name|answer|arguments|thought|action|tool|tool_name|function|final_answer|action_input)["']?\s*:""")
_JSON_TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<escaped>(?:\\[nrt])+)                         # a literal \\n between tokens: escaped twice
  | (?P<punct>[][{}:,])
  | (?P<string>"[^"\\]*(?:\\.[^"\\]*)*"|'[^'\\]*(?:\\.[^'\\]*)*')
  | (?P<number>-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?(?![\w.]))
  | (?P<word>[A-Za-z_][\w.-]*)
""", re.X | re.S)
_ESCAPED_QUOTE_START = re.compile(r'[\[{](?:\s|\\[nrt])*\\"')
_STRING_DECODER = json.JSONDecoder(strict=False)
_PYTHON_WORDS = {"True": "true", "False": "false", "None": "null"}
_JSON_ESCAPES = set('"\\/bfnrt')
_PYTHON_ONLY_ESCAPES = {"a": "\a", "v": "\v", "'": "'"}
_PYTHON_ESCAPES = set("\\'\"abfnrtv01234567xNuU\n")
_CONTROL = re.compile(r"[\x00-\x1f]")
_ESCAPE_PAIR = re.compile(r"\\(x[0-9a-fA-F]{2}|U[0-9a-fA-F]{8}|u[0-9a-fA-F]{4}|[0-7]{1,3}|.)", re.S)


def _refuse(problem: str, shape: str = _BOTH_SHAPES) -> ActionFormatError:
    return ActionFormatError(f"{problem}. Reply with exactly one JSON object: {shape}")


def _note(repairs: list, tag: str) -> None:
    """Record a repair once."""
    if tag not in repairs:
        repairs.append(tag)


def _value_end(text: str, start: int) -> Optional[int]:
    """Index just past the bracketed value at text[start], or None if it never closes.

    Strings (double- or single-quoted) are skipped whole by regex, so the cost is
    linear in the number of brackets and quotes. Mismatched or too deep brackets
    raise ActionFormatError.
    """
    closers, pos = [], start
    while True:
        match = _STRUCTURE.search(text, pos)
        if match is None:
            return None
        char, pos = match.group(), match.end()
        if char in "\"'":
            string = _STRING_BODY[char].match(text, pos)
            if string is None:
                return None
            pos = string.end()
            continue
        if char in "{[":
            closers.append("}" if char == "{" else "]")
            if len(closers) > _MAX_JSON_DEPTH:
                raise _refuse(f"the JSON is nested more than {_MAX_JSON_DEPTH} levels deep")
        elif not closers or closers.pop() != char:
            raise _refuse(f"the JSON has a mismatched {char!r} at character {match.start()}")
        if not closers:
            return pos


def _inside_first_object(text: str, pos: int) -> bool:
    start = text.find("{")
    if start == -1 or start > pos:
        return False
    try:
        end = _value_end(text, start)
    except ActionFormatError:
        return True
    return end is None or end > pos


def _drop_think(text: str, repairs: list) -> str:
    """Remove reasoning blocks that open before the action, and a lone closing tag."""
    kept, pos = [], 0
    brace = text.find("{")
    while True:
        opening = _THINK_OPEN.search(text, pos)
        if brace != -1 and brace < pos:
            brace = text.find("{", pos)  # that brace was inside a removed block
        if opening is None or (brace != -1 and brace < opening.start()):
            break
        kept.append(text[pos:opening.start()])
        closing = _THINK_CLOSE.search(text, opening.end())
        if closing is None:  # never closed: keep what follows, the action may be there
            pos = opening.end()
            _note(repairs, "think_unclosed")
            break
        pos = closing.end()
        _note(repairs, "think")
    text = ("".join(kept) + text[pos:]).strip()
    closing = _THINK_CLOSE.search(text)
    if closing and not _inside_first_object(text, closing.start()):
        text = text[closing.end():].strip()  # the server dropped the opening tag
        _note(repairs, "think")
    return text


def _unwrap(text: str, repairs: list) -> str:
    """Strip BOM, whitespace, a JSON-string wrapper and reasoning blocks."""
    if len(text) > _MAX_REPLY_CHARS:
        raise _refuse(f"the reply is {len(text):,} characters long (limit {_MAX_REPLY_CHARS:,}); send a short one")
    if text.lstrip().startswith("\ufeff"):
        text = text.lstrip().lstrip("\ufeff")
        _note(repairs, "bom")
    if text != text.strip():
        text = text.strip()
        _note(repairs, "whitespace")
    if not text:
        raise _refuse("the reply was empty")
    if _ESCAPED_QUOTE_START.match(text):  # every quote escaped once too often
        try:
            text = json.loads(f'"{text}"', strict=False).strip()
            _note(repairs, "escaped_twice")
        except ValueError:
            pass
    return _drop_think(text, repairs)


def _unquote_action(text: str, first: Any, repairs: list) -> tuple:
    """The action is inside a JSON string literal (the reply was encoded once more): decode it in place."""
    try:
        inner, end = _STRING_DECODER.raw_decode(text, first.start() - 1)
    except ValueError:
        return text, first
    if not isinstance(inner, str) or inner.lstrip()[:1] not in ("{", "["):
        return text, first
    _note(repairs, "json_string")
    text = text[:first.start() - 1] + inner.strip() + text[end:]
    return text, _ACTION_START.search(text, first.start() - 1)


def _locate(text: str, repairs: list) -> tuple[str, int]:
    """The text to search (the first code fence's body, if one opens before the action) and the action's start."""
    first = _ACTION_START.search(text)
    fence = text.find("```")
    if fence != -1 and (first is None or fence < first.start()):
        if text[:fence].strip():
            _note(repairs, "prose")
        text = text[_FENCE_OPEN.match(text, fence).end():]
        _note(repairs, "code_fence")
        first = _ACTION_START.search(text)
    if first is not None and text[first.start() - 1:first.start()] == '"':
        text, first = _unquote_action(text, first, repairs)
    if first is None:
        raise _refuse("your reply contains no JSON object")
    before = text[:first.start()]
    if before.strip():
        _note(repairs, "prose" if _SPECIAL_TOKEN.sub("", before).strip() else "special_tokens")
    return text, first.start()


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not a JSON value")


def _fix_word(word: str, repairs: list) -> str:
    if word in ("true", "false", "null"):
        return word
    if word in _PYTHON_WORDS:
        _note(repairs, "python_literal")
        return _PYTHON_WORDS[word]
    raise _refuse(f"the value {word[:40]!r} is not quoted: put text values in double quotes")


def _unclear_backslash(code: str) -> ActionFormatError:
    return _refuse(f"a string holds '\\{code[0]}', which may be a literal backslash (as in C:\\Users) or an escape; "
                   "write a literal backslash as \\\\")


def _json_escape(code: str, python: bool) -> str:
    """One backslash escape in a double-quoted string, as JSON.

    JSON's own escapes stay. Punctuation escaped the Markdown way (``\\_``) reads as
    the character. In a Python-literal reply, Python's ``\\x41``, ``\\U0001F600``,
    octal, ``\\a`` and ``\\v`` mean what Python means. A backslash before any other
    letter or digit is refused: it may be a path's backslash or an escape.
    """
    if code in _JSON_ESCAPES or (code[0] == "u" and len(code) == 5):
        return "\\" + code
    if python and (len(code) > 1 or code.isdigit() or code in _PYTHON_ONLY_ESCAPES):
        char = _PYTHON_ONLY_ESCAPES.get(code) or chr(min(int(code, 8) if code.isdigit() else int(code[1:], 16),
                                                         0x10FFFF))
        return json.dumps(char)[1:-1]
    if code[0].isalnum():
        raise _unclear_backslash(code)
    return json.dumps(code)[1:-1]


def _python_escape(code: str) -> str:
    """One backslash escape in a single-quoted string, kept for ast.literal_eval when Python has it."""
    if code[0] in _PYTHON_ESCAPES:
        return "\\" + code
    if code[0].isalnum():
        raise _unclear_backslash(code)
    return code


def _fix_string(token: str, python: bool, repairs: list) -> str:
    """Return a valid JSON string literal for a double- or single-quoted string token."""
    quote, body = token[0], token[1:-1]
    if _CONTROL.search(body):
        body = _CONTROL.sub(lambda m: json.dumps(m.group())[1:-1], body)
        _note(repairs, "raw_control_characters")
    if quote == '"':
        fixed = _ESCAPE_PAIR.sub(lambda m: _json_escape(m.group(1), python), body)
    else:
        fixed = _ESCAPE_PAIR.sub(lambda m: _python_escape(m.group(1)), body)
    if fixed != body:
        body = fixed
        _note(repairs, "invalid_escape")
    if quote == '"':
        return f'"{body}"'
    _note(repairs, "python_literal")
    try:
        return json.dumps(ast.literal_eval(f"'{body}'"), ensure_ascii=False)
    except (ValueError, SyntaxError) as exc:
        raise _refuse(f"a single-quoted string could not be read ({exc}); use double quotes") from None


def _json_tokens(chunk: str) -> list:
    tokens, pos = [], 0
    while pos < len(chunk):
        token = _JSON_TOKEN.match(chunk, pos)
        if token is None:
            raise _refuse(f"the JSON has an unexpected character {chunk[pos]!r} at character {pos}")
        tokens.append((token.lastgroup, token.group()))
        pos = token.end()
    return tokens


def _normalize_json(chunk: str, repairs: list) -> str:
    """Rewrite near-JSON as JSON, token by token: Python literals, raw control characters,
    invalid escapes, trailing commas, escaped-twice whitespace. Unquoted words are refused."""
    tokens = _json_tokens(chunk)
    python = any(value[0] == "'" or value in _PYTHON_WORDS for kind, value in tokens if kind in ("string", "word"))
    out: list = []
    for kind, value in tokens:
        if kind == "escaped":
            _note(repairs, "escaped_twice")
            value = " "
        elif kind == "string":
            value = _fix_string(value, python, repairs)
        elif kind == "word":
            value = _fix_word(value, repairs)
        elif value in "]}" and out and out[-1] == ",":
            out.pop()
            _note(repairs, "trailing_comma")
        out.append(value)
    return "".join(out)


def _read_value(text: str, start: int, repairs: list) -> tuple[Any, int]:
    """Read the JSON value at text[start]: strictly first, then with lexical repairs."""
    end = _value_end(text, start)
    if end is None:
        raise _refuse("the JSON object is not complete: it was cut off or a closing bracket or quote is missing; "
                      "send a shorter, complete object")
    chunk = text[start:end]
    try:
        return json.loads(chunk, parse_constant=_reject_constant), end
    except ValueError:
        pass
    try:
        return json.loads(_normalize_json(chunk, repairs), parse_constant=_reject_constant), end
    except ActionFormatError:
        raise
    except json.JSONDecodeError as exc:
        raise _refuse(f"the JSON is invalid: {exc.msg} at character {exc.pos}") from None
    except ValueError as exc:
        raise _refuse(f"the JSON is invalid: {exc}") from None


def _check_rest(rest: str, action: Any, repairs: list) -> None:
    """Ignore prose and an invented observation after the action; refuse a second, different action."""
    tail = _OBSERVATION_TAIL.search(rest)
    if tail:
        rest = rest[:tail.start()]
        _note(repairs, "observation_tail")
    pos = 0
    while True:
        start = _ACTION_START.search(rest, pos)
        if start is None:
            break
        pos = start.end()
        if not _ACTION_KEY.match(rest, start.start()):
            continue  # braces in prose, not an action
        try:
            other, end = _read_value(rest, start.start(), [])
        except ActionFormatError:
            raise _refuse("your reply holds more than one action (the second one is incomplete); "
                          "send one action per reply") from None
        if other != action:
            raise _refuse("your reply holds two different actions; send one action per reply and "
                          "wait for its [OBSERVATION]")
        _note(repairs, "duplicate_action")
        pos = end
    if rest.strip().strip("`").strip():
        _note(repairs, "trailing_prose")


def _one_object(value: Any, repairs: list) -> dict:
    if isinstance(value, list):
        if value and all(item == value[0] for item in value) and isinstance(value[0], dict):
            _note(repairs, "array")
            if len(value) > 1:
                _note(repairs, "duplicate_action")
            return value[0]
        if len(value) > 1:
            raise _refuse(f"expected one JSON object, found an array of {len(value)}; send one action per reply")
        raise _refuse("expected one JSON object, found an array")
    return value


def _present(obj: dict, key: str) -> bool:
    return obj.get(key) not in (None, "", {})


def _lookalike(obj: dict, keys: tuple) -> Optional[str]:
    return next((key for key in keys if obj.get(key) is not None), None)


_RIGHT_KEY = {**{k: "name" for k in _NAME_LOOKALIKES}, **{k: "arguments" for k in _ARGUMENT_LOOKALIKES},
              **{k: "answer" for k in _ANSWER_LOOKALIKES}}


def _action_kind(obj: dict, repairs: list) -> str:
    if "type" in obj:
        kind = obj["type"]
        normal = kind.strip().lower().replace("-", "_").replace(" ", "_") if isinstance(kind, str) else None
        if normal not in ("tool_call", "final"):
            raise _refuse(f'unknown "type" {json.dumps(kind, ensure_ascii=False)[:40]}: use "tool_call" or "final"')
        if normal != kind:
            _note(repairs, "type_spelling")
        return normal
    is_call = "name" in obj or "arguments" in obj
    if is_call and "answer" in obj:
        raise _refuse("your reply has both an answer and a tool call; send one of them")
    if is_call or "answer" in obj:
        _note(repairs, "missing_type")
        return "tool_call" if is_call else "final"
    names = [key for key in obj if key in _NAME_LOOKALIKES + _ARGUMENT_LOOKALIKES + _ANSWER_LOOKALIKES]
    if names:
        fixes = "; ".join(f'use "{_RIGHT_KEY[key]}" instead of "{key}"' for key in names)
        raise _refuse(f'"type" is missing and the keys are wrong: {fixes}')
    raise _refuse(f'the object has no "type", "name" or "answer" (keys: {", ".join(map(str, obj))[:80] or "none"})')


def _tool_name(obj: dict, repairs: list) -> str:
    name = obj.get("name")
    if name is None:
        alt = _lookalike(obj, _NAME_LOOKALIKES)
        problem = f'use "name" instead of "{alt}"' if alt else '"name" is missing'
        raise _refuse(f"{problem} for the tool to call", _CALL_SHAPE)
    if not isinstance(name, str) or not name.strip():
        raise _refuse(f'"name" must be the tool name as text, got {_shown(name)}', _CALL_SHAPE)
    if _CALL_IN_NAME.search(name.strip()):
        raise _refuse(f'"name" must be only the tool name, got {name[:60]!r}; put the arguments in "arguments"',
                      _CALL_SHAPE)
    if name != name.strip():
        _note(repairs, "name_whitespace")
    return name.strip()


def _arguments_from_string(text: str, repairs: list) -> Any:
    _note(repairs, "arguments_string")
    text = text.strip()
    if not text:
        return {}
    if text[0] != "{":
        raise _refuse(f'"arguments" must be a JSON object, got the string {text[:40]!r}', _CALL_SHAPE)
    value, end = _read_value(text, 0, repairs)
    if text[end:].strip():
        raise _refuse('"arguments" holds text after its JSON object', _CALL_SHAPE)
    return value


def _arguments(obj: dict, repairs: list) -> dict:
    alt = _lookalike(obj, _ARGUMENT_LOOKALIKES)
    arguments = obj.get("arguments")
    if isinstance(arguments, str):
        arguments = _arguments_from_string(arguments, repairs)
    if arguments is None or arguments == {}:
        if alt and obj[alt] not in ({}, ""):
            raise _refuse(f'use "arguments" instead of "{alt}"', _CALL_SHAPE)
        if arguments is None:
            _note(repairs, "missing_arguments")
        return {}
    if not isinstance(arguments, dict):
        raise _refuse(f'"arguments" must be a JSON object, got {_shown(arguments)}', _CALL_SHAPE)
    return arguments


def _answer(obj: dict, repairs: list) -> str:
    answer = obj.get("answer")
    if answer is None:
        alt = _lookalike(obj, _ANSWER_LOOKALIKES)
        problem = f'use "answer" instead of "{alt}"' if alt else '"answer" is missing'
        raise _refuse(problem, _FINAL_SHAPE)
    if not isinstance(answer, str):
        _note(repairs, "answer_not_text")
        answer = json.dumps(answer, ensure_ascii=False)
    return answer


def _interpret(obj: dict, repairs: list) -> Action:
    """Turn the action object into an Action, refusing anything whose meaning is not certain."""
    kind = _action_kind(obj, repairs)
    thought = obj.get("thought")
    if thought is not None and not isinstance(thought, str):
        thought = json.dumps(thought, ensure_ascii=False)
    if kind == "final":
        if _present(obj, "name") or _present(obj, "arguments"):
            raise _refuse("your reply has both an answer and a tool call; send one of them")
        return Action("final", answer=_answer(obj, repairs), thought=thought, repairs=tuple(repairs))
    if _present(obj, "answer"):
        raise _refuse("your reply has both an answer and a tool call; send one of them")
    name = _tool_name(obj, repairs)
    return Action("tool_call", name=name, arguments=_arguments(obj, repairs), thought=thought,
                  repairs=tuple(repairs))


def parse_action(text: str) -> Action:
    """Read one action from a model reply: strict about meaning, tolerant about packaging.

    Unambiguous packaging is repaired locally and named in ``Action.repairs``:
    BOM and whitespace, ``<think>`` blocks, code fences, prose and special tokens
    around the object, an invented observation after it, raw newlines and invalid
    escapes in strings, trailing commas, Python literals, an escaped-twice reply,
    a one-element array, ``arguments`` as a JSON string, a missing ``type`` or
    ``arguments`` when nothing else is meant. The action is the object starting at
    the first ``{`` (or ``[{``); a broken one is never skipped for a later one.
    Anything else raises ``ActionFormatError`` with a message written for the model.

    >>> parse_action('{"type": "final", "answer": "42"}').answer
    '42'
    >>> parse_action('```json\\n{"name": "calculator", "arguments": {"expression": "6*7"},}\\n```').repairs
    ('code_fence', 'trailing_comma', 'missing_type')
    """
    if not isinstance(text, str):
        raise ActionFormatError(f"expected the reply as text, got {type(text).__name__}", "")
    try:
        repairs: list = []
        body = _unwrap(text, repairs)
        body, start = _locate(body, repairs)
        value, end = _read_value(body, start, repairs)
        _check_rest(body[end:], value, repairs)
        return _interpret(_one_object(value, repairs), repairs)
    except ActionFormatError as exc:
        exc.text = text
        raise


def _example_arguments(tool: Optional[Tool]) -> str:
    samples = {"string": "...", "integer": 1, "number": 1.5, "boolean": True, "array": [], "object": {}}
    properties = tool.parameters.get("properties", {}) if tool else {}
    example = {}
    for key, schema in properties.items():
        kind = schema.get("type")
        kind = kind[0] if isinstance(kind, list) else kind
        example[key] = schema["enum"][0] if schema.get("enum") else samples.get(kind, "...")
    return json.dumps(example, ensure_ascii=False)


def _render_prompt(template: Optional[str], registry: ToolRegistry) -> str:
    """The system prompt: SYSTEM_PROMPT filled in, or a custom one with ``{tools}`` replaced."""
    lines = [f"- {t.name}: {t.description} {json.dumps(t.parameters, ensure_ascii=False, separators=(',', ':'))}"
             for t in registry]
    listing = "\n".join(lines) or "(none: answer directly with the final shape)"
    if template is not None:
        return template.replace("{tools}", listing)
    first = next(iter(registry), None)
    return SYSTEM_PROMPT.format(tools=listing, example_name=first.name if first else "tool_name",
                                example_arguments=_example_arguments(first))


# -- Models ----------------------------------------------------------------------------

class LLM(Protocol):
    """Anything with ``chat(messages) -> str`` drives the agent.

    Optional, read when present: the keyword options ``response_schema``,
    ``temperature`` and ``max_seconds`` of ``chat`` (passed only to a ``chat`` that
    names them or takes ``**kwargs``), and, about the last call, ``last_usage`` (a
    dict with ``prompt_tokens`` and ``completion_tokens``, or None),
    ``last_finish_reason`` (``"length"``: cut off at the token limit; ``"repetition"``)
    and ``last_reasoning``.
    """

    def chat(self, messages: list) -> str: ...


_TIME_WORDS = re.compile(r"\b(?:time|date|clock|today|now)\b", re.I)
_ARITHMETIC_RUN = re.compile(r"[\d(][\d\s.+\-*/%()^_]*[\d)]")
_HAS_OPERATOR = re.compile(r"[\d)]\s*(?:\*\*|[-+*/%^])\s*[-+(]*[\d(]")


def _find_arithmetic(task: str) -> list:
    found = []
    for match in _ARITHMETIC_RUN.finditer(task):
        candidate = match.group().strip()
        if _HAS_OPERATOR.search(candidate):
            found.append(candidate.replace("^", "**"))
    return found


def _observation_result(content: str) -> str:
    text = content[len("[OBSERVATION]"):].strip()
    head, _, last = text.rpartition("\n")
    return head.strip() if head and last.startswith("(step") else text


def _compose_answer(plan: list, results: list) -> str:
    if not plan:
        return ("I am the offline demo model: I can only tell the time and do arithmetic. "
                "Set OPENAI_MODEL (see the README) to use a real model.")
    if len(plan) == 1 and plan[0][0] == "calculator":
        return results[0]
    parts = [f"the time is {result}" if name == "clock" else f"{args['expression']} = {result}"
             for (name, args), result in zip(plan, results)]
    sentence = ", and ".join(parts)
    return sentence[0].upper() + sentence[1:] + "."


def _trace_steps(path: str) -> list:
    """The step records of a saved result (JSON) or a trace (JSON Lines); ValueError when there are none."""
    with open(path, encoding="utf-8", errors="replace") as handle:
        text = handle.read()
    try:
        try:
            records = [json.loads(text)]
        except ValueError:
            records = [json.loads(line) for line in text.split("\n") if line.strip()]  # not splitlines: U+2028 is text
    except (ValueError, RecursionError) as exc:  # RecursionError: nested too deeply for the json module
        problem = "nested too deeply" if isinstance(exc, RecursionError) else exc
        raise ValueError(f"{path} is neither a saved result (JSON) nor a trace (JSON Lines): {problem}") from None
    steps: list = []
    for record in records:
        if isinstance(record, dict) and isinstance(record.get("steps"), list):
            steps.extend(record["steps"])
        elif isinstance(record, dict) and record.get("event") == "step":
            steps.append(record)
    if not steps:
        raise ValueError(f"{path} holds no steps to replay")
    return steps


class MockLLM:
    """A scripted model for tests and the offline demo.

    ``MockLLM(replies)`` answers with each reply in turn: a string, a callable
    taking the messages and returning a string, or an exception instance to
    raise. It raises ``LLMError`` when the replies run out. ``.calls`` keeps a
    copy of every message list received. With no replies it is a small offline
    planner: the clock for questions about the time, the calculator for each
    arithmetic expression in the task, then a final answer from the observations.
    """

    def __init__(self, replies: Optional[Iterable] = None) -> None:
        self.replies = None if replies is None else list(replies)
        self.calls: list = []
        self.options: list = []              # the per-call options of each call, e.g. response_schema
        self.last_finish_reason: Optional[str] = None
        self._finish_reasons: list = []      # what each reply reports as its finish_reason (a replay)

    @classmethod
    def from_trace(cls, path: str) -> MockLLM:
        """Replay the raw replies of a saved run: ``AgentResult.save`` JSON or a ``--trace`` JSON Lines file.

        Each replayed reply reports its step's ``finish_reason`` again, so a cut-off
        replays as a cut-off. Raises OSError when the file cannot be read and
        ValueError when it holds no run.
        """
        steps = [step for step in _trace_steps(path) if isinstance(step, dict) and isinstance(step.get("raw"), str)]
        llm = cls([step["raw"] for step in steps])
        llm._finish_reasons = [step.get("finish_reason") if isinstance(step.get("finish_reason"), str) else None
                               for step in steps]
        return llm

    def chat(self, messages: list, **options: Any) -> str:
        """The next scripted reply (or the planner's); ``options`` are recorded in ``.options``."""
        self.calls.append([dict(message) for message in messages])
        self.options.append(dict(options))
        if self.replies is None:
            return self._plan(messages)
        if len(self.calls) > len(self.replies):
            raise LLMError(f"MockLLM ran out of scripted replies after {len(self.replies)}")
        index = len(self.calls) - 1
        self.last_finish_reason = self._finish_reasons[index] if index < len(self._finish_reasons) else None
        reply = self.replies[index]
        if isinstance(reply, BaseException):
            raise reply
        return reply(messages) if callable(reply) else reply

    def _plan(self, messages: list) -> str:
        task_at = max(i for i, m in enumerate(messages)
                      if m["role"] == "user" and not m["content"].startswith("[OBSERVATION]"))
        task = messages[task_at]["content"]
        results = [_observation_result(m["content"]) for m in messages[task_at + 1:] if m["role"] == "user"]
        plan = [("clock", {})] if _TIME_WORDS.search(task) else []
        plan += [("calculator", {"expression": expr}) for expr in _find_arithmetic(task)]
        if len(results) < len(plan):
            name, arguments = plan[len(results)]
            thought = "I need the current time." if name == "clock" else f"I will compute {arguments['expression']}."
            return json.dumps({"type": "tool_call", "thought": thought, "name": name, "arguments": arguments})
        return json.dumps({"type": "final", "thought": "I have everything I need.",
                           "answer": _compose_answer(plan, results)})


_RETRY_STATUSES = {408, 409, 429, 500, 502, 503, 504}
_ADAPTABLE_PARAMS = ("stop", "temperature", "max_tokens")  # dropped or renamed when a server rejects them
_MAX_RETRY_AFTER = 60.0   # seconds; a longer Retry-After is capped
_STATUS_HINTS = {
    400: "the server rejected the request",
    401: "check OPENAI_API_KEY",
    403: "check OPENAI_API_KEY and that it may use this model",
    404: "check that the base URL ends in /v1 (e.g. http://localhost:11434/v1) and that the model name exists",
    422: "the server could not process the request; check the model name and options",
}


class _Retryable(Exception):
    """A failure worth another attempt (internal)."""

    def __init__(self, message: str, status: Optional[int] = None, retry_after: Optional[float] = None) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after


def _backoff(attempt: int) -> float:
    """Seconds before retry number attempt+1: exponential (0.5 s doubling, capped at 30 s), half of it jitter."""
    import random

    base = min(30.0, 0.5 * 2 ** attempt)
    return base / 2 + random.uniform(0, base / 2)


def _chat_url(base_url: str) -> str:
    url = (base_url or "").strip().rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"invalid base URL {base_url!r} (must start with http:// or https://)")
    return url if url.endswith("/chat/completions") else url + "/chat/completions"


def _read_error_body(exc: Any) -> bytes:
    try:
        return exc.read() or b""
    except Exception:
        return b""


def _server_message(text: str) -> str:
    """The server's own error message from an OpenAI-style error body, or the start of the body."""
    text = text.strip()
    try:
        data = json.loads(text)
    except ValueError:
        return text[:200] or "(empty body)"
    error = data.get("error", data) if isinstance(data, dict) else data
    if isinstance(error, dict):
        error = error.get("message") or error.get("detail") or error
    return (error if isinstance(error, str) else json.dumps(error))[:300]


def _retry_after(value: Optional[str]) -> Optional[float]:
    """Seconds to wait from a Retry-After header (seconds or an HTTP date), capped."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        import email.utils

        try:
            seconds = email.utils.parsedate_to_datetime(value).timestamp() - time.time()
        except (TypeError, ValueError, IndexError):
            return None
    return min(max(seconds, 0.0), _MAX_RETRY_AFTER)


class OpenAICompatLLM:
    """A chat-completions client for any OpenAI-compatible server, over urllib.

    Retries 408, 409, 429 and 5xx answers and network errors with exponential
    backoff and jitter, honouring ``Retry-After``; fails fast on other 4xx
    answers. Raises ``LLMError`` with the status and the server's own message.
    The API key is sent only in the Authorization header and never appears in
    an exception, a ``repr`` or a log line. ``opener`` (anything with
    ``open(request, timeout=...)``) and ``sleep`` are injectable for tests.
    """

    def __init__(self, model: str, base_url: str = "https://api.openai.com/v1", api_key: Optional[str] = None, *,
                 temperature: Optional[float] = 0.0, max_tokens: Optional[int] = None, timeout: float = 60,
                 max_retries: int = 3, stop: Optional[Iterable[str]] = ("[OBSERVATION]",),
                 extra_body: Optional[dict] = None, headers: Optional[dict] = None, opener: Any = None,
                 sleep: Callable[[float], None] = time.sleep, response_schema: Optional[dict] = None) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ValueError("no model named: pass model=... or set OPENAI_MODEL")
        if not isinstance(max_retries, int) or max_retries < 0:
            raise ValueError(f"invalid max_retries {max_retries!r} (must be >= 0)")
        self.model = model.strip()
        self.base_url = base_url
        self.url = _chat_url(base_url)
        self._api_key = api_key or None
        self.temperature = temperature       # None: leave it to the server
        self.max_tokens = max_tokens         # None: leave it to the server
        self.timeout = timeout               # seconds per request
        self.max_retries = max_retries       # retries after the first attempt
        self.stop = list(stop or ())         # sent as "stop"; cut client-side if the server rejects it
        self.extra_body = dict(extra_body or {})
        self.headers = dict(headers or {})
        self.response_schema = response_schema
        self._opener = opener
        self._sleep = sleep
        self._dropped: set = set()           # optional parameters this server rejected by name
        self._max_tokens_key = "max_tokens"   # or max_completion_tokens, when the server asks for it
        self.usage = {"prompt_tokens": 0, "completion_tokens": 0}
        self.last_finish_reason: Optional[str] = None

    @classmethod
    def from_env(cls, **overrides: Any) -> OpenAICompatLLM:
        """Build from OPENAI_BASE_URL, OPENAI_API_KEY and OPENAI_MODEL; keyword overrides win.

        Raises ValueError when no model is named.
        """
        settings = {"model": os.environ.get("OPENAI_MODEL"), "base_url": os.environ.get("OPENAI_BASE_URL"),
                    "api_key": os.environ.get("OPENAI_API_KEY")}
        settings.update({key: value for key, value in overrides.items() if value is not None})
        if not settings["base_url"]:
            settings.pop("base_url")
        if not settings["model"]:
            raise ValueError("no model named: set OPENAI_MODEL or pass --model / model=...")
        return cls(**settings)

    def __repr__(self) -> str:
        return f"OpenAICompatLLM(model={self.model!r}, base_url={self.base_url!r})"

    def chat(self, messages: list) -> str:
        """Send the conversation; return the reply text. Raises LLMError when the endpoint fails for good."""
        while True:
            body = self._body(messages)
            try:
                return self._read_reply(self._post(body))
            except LLMError as exc:
                if not self._adapt(exc, body):
                    raise

    def _adapt(self, exc: LLMError, body: dict) -> bool:
        """Stop sending an optional parameter the server rejected by name; True to try again.

        Some servers and models refuse ``stop`` (then replies are cut client-side),
        a non-default ``temperature``, or ``max_tokens`` (renamed to
        ``max_completion_tokens`` when the server asks for that). Each is adapted once.
        """
        message = str(exc).replace(self.url, "")
        for param in _ADAPTABLE_PARAMS:
            if exc.status not in (400, 422) or param not in body or not re.search(f"['\"`]{param}['\"`]", message):
                continue
            if param == "max_tokens" and "max_completion_tokens" in message:
                self._max_tokens_key = "max_completion_tokens"
            else:
                self._dropped.add(param)
            _log.info("the server rejected %r; adapting and retrying", param)
            return True
        return False

    def _body(self, messages: list) -> dict:
        body: dict = {"model": self.model, "messages": messages}
        if self.temperature is not None and "temperature" not in self._dropped:
            body["temperature"] = self.temperature
        if self.max_tokens is not None and "max_tokens" not in self._dropped:
            body[self._max_tokens_key] = self.max_tokens
        if self.stop and "stop" not in self._dropped:
            body["stop"] = self.stop
        if self.response_schema is not None:
            body["response_format"] = {"type": "json_schema",
                                       "json_schema": {"name": "action", "schema": self.response_schema}}
        body.update(self.extra_body)
        return body

    def _post(self, body: dict) -> dict:
        import urllib.request

        request = urllib.request.Request(self.url, data=json.dumps(body).encode("utf-8"),
                                         headers=self._request_headers(), method="POST")
        opener = self._opener or urllib.request.build_opener()
        attempt = 0
        while True:
            try:
                return self._attempt(opener, request)
            except _Retryable as exc:
                if attempt == self.max_retries:
                    raise LLMError(f"{exc} (gave up after {attempt + 1} attempts)", exc.status) from None
                delay = exc.retry_after if exc.retry_after is not None else _backoff(attempt)
                _log.info("model request failed (%s); retrying in %.1f s", exc, delay)
                self._sleep(delay)
                attempt += 1

    def _request_headers(self) -> dict:
        headers = {"Content-Type": "application/json", "Accept": "application/json",
                   "User-Agent": f"agent.py/{__version__}"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        headers.update(self.headers)
        return headers

    def _attempt(self, opener: Any, request: Any) -> dict:
        import http.client
        import ssl
        import urllib.error

        try:
            with opener.open(request, timeout=self.timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            self._raise_for_status(exc.code, _read_error_body(exc), exc.headers)
        except (OSError, http.client.HTTPException) as exc:  # refused, reset, timed out, cut short
            reason = getattr(exc, "reason", None) or exc
            if isinstance(reason, ssl.SSLCertVerificationError):  # retrying will not help
                raise LLMError(f"the TLS certificate of {self.url} could not be verified: {reason}") from None
            raise _Retryable(f"could not reach {self.url}: {self._scrub(str(reason)) or type(exc).__name__}") from None
        return self._decode(raw)

    def _raise_for_status(self, status: int, body: bytes, headers: Any) -> None:
        message = _server_message(self._scrub(body.decode("utf-8", errors="replace")))
        text = f"HTTP {status} from {self.url}: {message}"
        if status in _RETRY_STATUSES:
            raise _Retryable(text, status, _retry_after(headers.get("Retry-After") if headers else None))
        hint = _STATUS_HINTS.get(status, "the request was refused")
        raise LLMError(f"{text} ({hint})", status)

    def _decode(self, raw: bytes) -> dict:
        try:
            data = json.loads(raw.decode("utf-8", errors="replace"))
        except ValueError:
            start = self._scrub(raw.decode("utf-8", errors="replace"))[:200]
            raise LLMError(f"{self.url} did not answer with JSON (is the base URL right?): {start!r}") from None
        if isinstance(data, dict) and data.get("error"):
            message = _server_message(self._scrub(raw.decode("utf-8", errors="replace")))
            raise LLMError(f"{self.url} returned an error: {message}")
        choices = data.get("choices") if isinstance(data, dict) else None
        if not choices or not isinstance(choices[0], dict):
            start = self._scrub(raw.decode("utf-8", errors="replace"))[:200]
            raise LLMError(f"{self.url} answered without choices: {start!r}")
        return data

    def _read_reply(self, data: dict) -> str:
        usage = data.get("usage") or {}
        for key in ("prompt_tokens", "completion_tokens"):
            if isinstance(usage.get(key), int):
                self.usage[key] += usage[key]
        choice = data["choices"][0]
        self.last_finish_reason = choice.get("finish_reason")
        content = (choice.get("message") or {}).get("content")
        if isinstance(content, list):  # content parts: keep the text ones
            content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
        text = content if isinstance(content, str) else ""
        if "stop" in self._dropped:
            for stop in self.stop:
                text = text.split(stop, 1)[0]
        return text

    def _scrub(self, text: str) -> str:
        return text.replace(self._api_key, "***") if self._api_key else text


# -- Loop ------------------------------------------------------------------------------

STOP_REASONS = ("final", "max_steps", "repeat_limit", "format_errors", "time_limit", "token_limit", "llm_error")
_CUT_OFF = ("your reply was cut off at the token limit before the JSON object was complete; "
            f"send a shorter reply with a one-sentence thought. Reply with exactly one JSON object: {_BOTH_SHAPES}")
_REPEATED = ("your reply kept repeating the same text, so it was stopped; write one short JSON object and "
             f"nothing else. Reply with exactly one JSON object: {_BOTH_SHAPES}")
_ONE_ACTION = "(Your reply held more than one action: only the first was run. Send one action per reply.)"
_CONSTRAIN_MODES = ("auto", "always", "never")
_CHAT_OPTIONS = ("response_schema", "temperature", "max_seconds")   # per-call options the agent may pass
_HOT_TEMPERATURE = 0.7     # at least this once a failed reply repeats: a deterministic loop needs sampling
_TRIM_TO = 0.6             # over budget, trim to this share of it, so later calls share their prefix


@dataclass
class Step:
    """One model turn: the raw reply, the parsed action, what was sent back, what went wrong."""

    index: int                            # 1-based
    raw: Optional[str] = None             # the model's reply; None if the model call failed
    action: Optional[Action] = None       # None if the reply could not be parsed
    observation: Optional[str] = None     # the [OBSERVATION] message sent back, or None
    error: Optional[str] = None           # what went wrong in this step, or None
    llm_seconds: float = 0.0
    tool_seconds: float = 0.0
    finish_reason: Optional[str] = None   # the client's finish_reason for this reply, when it reports one
    reasoning: Optional[str] = None       # a separate reasoning field the server sent, never parsed
    notes: list = field(default_factory=list)   # what the agent changed for this call (ladder rungs, budgets)

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
    steps: list
    messages: list                        # the whole conversation, never trimmed; pass back as history
    usage: dict                           # prompt_tokens, completion_tokens, total_tokens, estimated
    seconds: float
    summary: str = ""                     # one line: how the run ended

    @property
    def ok(self) -> bool:
        return self.stop_reason == "final"

    @property
    def last_observation(self) -> Optional[str]:
        return next((s.observation for s in reversed(self.steps) if s.observation is not None), None)

    def to_dict(self) -> dict:
        return {"answer": self.answer, "stop_reason": self.stop_reason, "summary": self.summary,
                "last_observation": self.last_observation, "usage": dict(self.usage), "seconds": self.seconds,
                "steps": [step.to_dict() for step in self.steps], "messages": [dict(m) for m in self.messages]}

    def save(self, path: str) -> None:
        """Write the result as JSON; ``MockLLM.from_trace(path)`` replays it."""
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(self.to_dict(), handle, ensure_ascii=False, indent=1, default=str)


@dataclass
class _RunState:
    """What one run accumulates (internal)."""

    messages: list
    head: int                             # messages[:head] (system ... task) are always sent
    head_chars: int
    started: float
    steps: list = field(default_factory=list)
    tail_chars: int = 0                   # characters in messages[head + dropped:]
    dropped: int = 0                      # messages after the head left out of what is sent
    format_errors: int = 0                # unparseable replies in a row
    calls: dict = field(default_factory=dict)   # (name, canonical arguments) -> [step, result, repeats]
    usage: dict = field(default_factory=lambda: {"prompt_tokens": 0, "completion_tokens": 0, "estimated": False})
    answer: Optional[str] = None
    budget: Optional[int] = None          # max_context_chars for this run; a context overflow may set one
    overflows: int = 0                    # context overflows reported by the client
    schema: Optional[dict] = None         # the action schema, sent once the ladder's first rung is taken
    hot: bool = False                     # second rung: a raised temperature is sent
    failed: set = field(default_factory=set)    # raw replies that could not be parsed


def _check_option(name: str, value: Any, minimum: float, optional: bool = False, integer: bool = True) -> None:
    if optional and value is None:
        return
    kinds = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds) or value < minimum:
        raise ValueError(f"invalid {name} {value!r} (must be {'an integer ' if integer else 'a number '}>= {minimum})")


def _as_registry(tools: Any) -> ToolRegistry:
    if isinstance(tools, ToolRegistry):
        return tools
    registry = ToolRegistry()
    for tool in tools or ():
        registry.register(tool)
    return registry


def _clean_history(history: Optional[list]) -> list:
    if history is None:
        return []
    if not isinstance(history, list):
        raise ValueError(f"invalid history {type(history).__name__} (must be a list of messages)")
    cleaned = []
    for i, message in enumerate(history):
        if not (isinstance(message, dict) and message.get("role") in ("system", "user", "assistant")
                and isinstance(message.get("content"), str)):
            raise ValueError(f"invalid history message {i} (must be {{'role': system|user|assistant, 'content': str}})")
        cleaned.append({"role": message["role"], "content": message["content"]})
    return cleaned


def _chat_options(llm: Any) -> frozenset:
    """The per-call options ``llm.chat`` accepts: those it names, or all of them when it takes ``**kwargs``."""
    import inspect

    try:
        parameters = inspect.signature(llm.chat).parameters.values()
    except (AttributeError, TypeError, ValueError):  # no chat, or a builtin without a signature
        return frozenset()
    if any(p.kind is p.VAR_KEYWORD for p in parameters):
        return frozenset(_CHAT_OPTIONS)
    return frozenset(p.name for p in parameters
                     if p.name in _CHAT_OPTIONS and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD))


def _reported_usage(llm: Any) -> Optional[tuple]:
    """(prompt, completion) tokens of the client's last call from ``last_usage``, or None when not reported."""
    usage = getattr(llm, "last_usage", None)
    if not isinstance(usage, dict):
        return None
    counts = (usage.get("prompt_tokens"), usage.get("completion_tokens"))
    if all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in counts):
        return counts
    return None


class Agent:
    """The ReAct loop: ask the model, parse its action, run the tool, send the observation back."""

    def __init__(self, llm: LLM, tools: Any = None, *, system_prompt: Optional[str] = None, max_steps: int = 10,
                 max_repeats: int = 2, max_format_errors: int = 3, max_observation_chars: int = 4000,
                 max_context_chars: Optional[int] = None, max_seconds: Optional[float] = None,
                 max_total_tokens: Optional[int] = None, on_step: Optional[Callable[[Step], None]] = None,
                 confirm: Optional[Callable[[str, dict], bool]] = None, constrain: str = "auto") -> None:
        _check_option("max_steps", max_steps, 1)
        _check_option("max_repeats", max_repeats, 0)
        _check_option("max_format_errors", max_format_errors, 0)
        _check_option("max_observation_chars", max_observation_chars, 200)
        _check_option("max_context_chars", max_context_chars, 1000, optional=True)
        _check_option("max_seconds", max_seconds, 0.001, optional=True, integer=False)
        _check_option("max_total_tokens", max_total_tokens, 1, optional=True)
        if constrain not in _CONSTRAIN_MODES:
            raise ValueError(f"invalid constrain {constrain!r} (must be one of {', '.join(_CONSTRAIN_MODES)})")
        self.llm = llm
        self.tools = _as_registry(tools)
        self.system_prompt = _render_prompt(system_prompt, self.tools)
        self.max_steps = max_steps                  # model calls per run
        self.max_repeats = max_repeats              # repeats of one call before the run stops
        self.max_format_errors = max_format_errors  # unparseable replies in a row before the run stops
        self.max_observation_chars = max_observation_chars  # longer tool output keeps head and tail
        self.max_context_chars = max_context_chars  # None: send the whole conversation
        self.max_seconds = max_seconds              # checked between steps; caps tool timeouts and model calls
        self.max_total_tokens = max_total_tokens    # reported by the server, else estimated
        self.on_step = on_step                      # called with each Step as it ends
        self.confirm = confirm                      # asked before tools registered with confirm=True
        self.constrain = constrain                  # the decoding ladder: auto, always or never
        self._accepts = _chat_options(llm)          # checked once: the per-call options llm.chat takes
        if constrain == "always" and "response_schema" not in self._accepts:
            _log.warning("constrain='always', but %s.chat takes no response_schema: running unconstrained",
                         type(llm).__name__)

    def run(self, task: str, history: Optional[list] = None) -> AgentResult:
        """Run the loop on ``task`` until the model answers or a limit stops it.

        Sent back to the model as an observation, and the run goes on: an unknown
        tool, invalid arguments, a tool that raises or times out, a declined
        confirmation, a repeated call (not run again), and a reply that cannot be
        parsed, repeats itself or was cut off (up to ``max_format_errors`` in a
        row). After a format error later calls send the action schema, and after a
        failed reply repeats an earlier one a raised temperature (``constrain``).
        A context overflow sets a context budget for the rest of the run and retries
        once. Stops the run, with a ``stop_reason`` and every step kept: a final
        answer, ``max_steps``, ``repeat_limit``, ``format_errors``, ``time_limit``,
        ``token_limit``, and ``llm_error`` when the model client raises. Nothing a
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
        messages = _clean_history(history)
        if not messages or messages[0]["role"] != "system":
            messages.insert(0, {"role": "system", "content": self.system_prompt})
        if messages[-1]["role"] == "user":  # keep roles alternating: join the task to it
            messages[-1] = {"role": "user", "content": f"{messages[-1]['content']}\n\n{task}"}
        else:
            messages.append({"role": "user", "content": task})
        head_chars = sum(len(m["content"]) for m in messages)
        state = _RunState(messages=messages, head=len(messages), head_chars=head_chars, started=time.monotonic(),
                          budget=self.max_context_chars)
        if self.constrain == "always" and "response_schema" in self._accepts:
            state.schema = self.tools.action_schema()
        return state

    def _over_budget(self, state: _RunState) -> Optional[str]:
        if self.max_seconds is not None and time.monotonic() - state.started > self.max_seconds:
            return "time_limit"
        used = state.usage["prompt_tokens"] + state.usage["completion_tokens"]
        if self.max_total_tokens is not None and used > self.max_total_tokens:
            return "token_limit"
        return None

    def _step(self, state: _RunState) -> Optional[str]:
        step = Step(index=len(state.steps) + 1)
        try:
            return self._query(state, step) or self._act(state, step)
        except BaseException as exc:  # Ctrl-C, or a callback that raised: the trace still gets this step
            step.error = step.error or f"interrupted: {type(exc).__name__}"
            raise
        finally:
            state.steps.append(step)
            if self.on_step is not None:
                self.on_step(step)

    def _query(self, state: _RunState, step: Step) -> Optional[str]:
        """Ask the model; record the reply, what the client reported and the tokens. "llm_error" if it raises."""
        started = time.monotonic()
        try:
            raw = self._chat(state, step)
        except Exception as exc:  # LLMError, or whatever a custom client raises
            step.llm_seconds = time.monotonic() - started
            step.error = str(exc) if isinstance(exc, LLMError) else f"{type(exc).__name__}: {exc}"
            return "llm_error"
        step.llm_seconds = time.monotonic() - started
        step.raw = raw if isinstance(raw, str) else ("" if raw is None else str(raw))
        finish_reason = getattr(self.llm, "last_finish_reason", None)
        reasoning = getattr(self.llm, "last_reasoning", None)
        step.finish_reason = finish_reason if isinstance(finish_reason, str) else None
        step.reasoning = reasoning if isinstance(reasoning, str) and reasoning else None
        _log.debug("step %d: model call took %.3f s", step.index, step.llm_seconds)
        self._count_tokens(state, step.raw)
        self._append(state, "assistant", step.raw)
        return None

    def _chat(self, state: _RunState, step: Step) -> Any:
        """One model call with this run's options; after a context overflow, trim and retry once."""
        try:
            return self.llm.chat(self._context(state), **self._options(state))
        except LLMError as exc:
            if exc.kind != "context_overflow":
                raise
            self._overflowed(state, step, exc)
        return self.llm.chat(self._context(state), **self._options(state))

    def _options(self, state: _RunState) -> dict:
        """The per-call options for the next call: the ladder's rungs and what is left of max_seconds."""
        options: dict = {}
        if state.schema is not None:
            options["response_schema"] = state.schema
        if state.hot:
            configured = getattr(self.llm, "temperature", None)
            numeric = isinstance(configured, (int, float)) and not isinstance(configured, bool)
            options["temperature"] = max(_HOT_TEMPERATURE, configured) if numeric else _HOT_TEMPERATURE
        if self.max_seconds is not None and "max_seconds" in self._accepts:
            options["max_seconds"] = max(0.0, self.max_seconds - (time.monotonic() - state.started))
        return options

    def _overflowed(self, state: _RunState, step: Step, exc: LLMError) -> None:
        """Set a context budget for the rest of this run; raise LLMError with a hint when that cannot help."""
        state.overflows += 1
        sent = state.head_chars + state.tail_chars
        if state.budget is not None or state.overflows > 1:
            raise LLMError(f"{exc} (the conversation still does not fit the model's context window; "
                           "set a smaller max_context_chars)", exc.status, exc.kind) from None
        n_ctx, n_prompt = getattr(exc, "n_ctx", None), getattr(exc, "n_prompt_tokens", None)
        if all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in (n_ctx, n_prompt)):
            state.budget = sent * n_ctx // n_prompt
        else:
            state.budget = sent * 3 // 4
        if state.head_chars >= state.budget:
            raise LLMError(f"{exc} (the system prompt and the task alone, {state.head_chars} characters, do not fit "
                           f"the model's context window, about {state.budget} characters: shorten them or use a "
                           "model with a longer context)", exc.status, exc.kind) from None
        step.notes.append(f"context overflow: max_context_chars={state.budget} for the rest of this run; retried")
        _log.info("step %d: %s", step.index, step.notes[-1])

    def _act(self, state: _RunState, step: Step) -> Optional[str]:
        """Parse the reply; answer, or run the call (a repeat gets the earlier result), and send the observation."""
        try:
            action = self._parse(step)
        except ActionFormatError as exc:
            return self._format_error(state, step, exc)
        state.format_errors = 0
        step.action = action
        if action.kind == "final":
            state.answer = action.answer
            return "final"
        key = (action.name, json.dumps(action.arguments, sort_keys=True, ensure_ascii=False, default=str))
        earlier = state.calls.get(key)
        if earlier is None:
            text = self._run_tool(state, step, action)
            state.calls[key] = [step.index, text, 0]
        else:
            earlier[2] += 1
            if earlier[2] > self.max_repeats:
                step.error = f"the call {action.name} with the same arguments was repeated {earlier[2]} times"
                return "repeat_limit"
            text = (f"You already made this exact call in step {earlier[0]}; it was not run again. Its result:\n"
                    f"{earlier[1]}\nDo not repeat it: use the result, try something different, "
                    "or give the final answer.")
        if "extra_actions" in action.repairs:
            text = f"{text}\n{_ONE_ACTION}"
        self._observe(state, step, text)
        return "max_steps" if step.index >= self.max_steps else None

    def _parse(self, step: Step) -> Action:
        """parse_action, with what the client reported: a reply that repeated itself or was cut off is refused."""
        if step.finish_reason == "repetition":
            raise ActionFormatError(_REPEATED, step.raw)
        try:
            return parse_action(step.raw)
        except ActionFormatError:
            repeating = globals().get("_repeating_tail")  # TODO(merge): the Models section's check
            if repeating is not None and repeating(step.raw):  # a whole reply that arrived without the streaming check
                raise ActionFormatError(_REPEATED, step.raw) from None
            if step.finish_reason == "length":
                raise ActionFormatError(_CUT_OFF, step.raw) from None
            raise

    def _run_tool(self, state: _RunState, step: Step, action: Action) -> str:
        timeout = None
        if self.max_seconds is not None:
            timeout = max(0.0, self.max_seconds - (time.monotonic() - state.started))
        started = time.monotonic()
        text = self.tools.call(action.name, action.arguments, confirm=self.confirm,
                               max_chars=self.max_observation_chars, timeout=timeout)
        step.tool_seconds = time.monotonic() - started
        _log.debug("step %d: tool %s took %.3f s", step.index, action.name, step.tool_seconds)
        if text.startswith("ERROR:"):
            step.error = text
        return text

    def _format_error(self, state: _RunState, step: Step, exc: ActionFormatError) -> Optional[str]:
        state.format_errors += 1
        step.error = str(exc)
        self._climb(state, step)
        if state.format_errors > self.max_format_errors:
            return "format_errors"
        left = self.max_format_errors - state.format_errors + 1
        self._observe(state, step, f"ERROR: {step.error} ({left} attempt{'s' if left != 1 else ''} left.)")
        return "max_steps" if step.index >= self.max_steps else None

    def _climb(self, state: _RunState, step: Step) -> None:
        """The decoding ladder, after a failed reply: send the action schema; on a repeated failure, sample hotter."""
        if self.constrain == "never":
            return
        if state.schema is None and "response_schema" in self._accepts:
            state.schema = self.tools.action_schema()
            self._rung(step, "from the next call on, the action schema is sent (response_schema)")
        if not state.hot and step.raw in state.failed and "temperature" in self._accepts:
            state.hot = True
            self._rung(step, "the same failed reply came twice: from the next call on, a temperature of at least "
                             f"{_HOT_TEMPERATURE} is sent")
        state.failed.add(step.raw)

    def _rung(self, step: Step, note: str) -> None:
        step.notes.append(f"decoding ladder: {note}")
        _log.info("step %d: %s", step.index, step.notes[-1])

    def _observe(self, state: _RunState, step: Step, text: str) -> None:
        if step.index + 1 == self.max_steps:
            budget = f"(step {step.index} of {self.max_steps}; your next reply is the last: give the final answer)"
        else:
            budget = f"(step {step.index} of {self.max_steps})"
        step.observation = f"[OBSERVATION] {text}\n{budget}"
        self._append(state, "user", step.observation)

    def _append(self, state: _RunState, role: str, content: str) -> None:
        state.messages.append({"role": role, "content": content})
        state.tail_chars += len(content)

    def _context(self, state: _RunState) -> list:
        """What is sent: the whole conversation, or, over the context budget, the oldest step pairs left out.

        Over the budget, pairs are dropped from the front down to about 60% of it at
        once, so the calls until the next trim share their prefix and a server can
        reuse its processed prompt; each pair is dropped once (amortised O(1) per
        step). The system prompt and the task are always sent, and the latest pair too.
        """
        if state.budget is None:
            return state.messages
        messages, head = state.messages, state.head
        if state.head_chars + state.tail_chars > state.budget:
            while (state.head_chars + state.tail_chars > state.budget * _TRIM_TO
                   and len(messages) - head - state.dropped > 2):
                first = head + state.dropped
                state.tail_chars -= len(messages[first]["content"]) + len(messages[first + 1]["content"])
                state.dropped += 2
        if not state.dropped:
            return messages
        task = messages[head - 1]
        note = (f"\n\n[Note: {state.dropped // 2} earlier step(s) of this task were left out to save space; "
                "their results are no longer shown.]")
        return messages[:head - 1] + [{"role": task["role"], "content": task["content"] + note}] + \
            messages[head + state.dropped:]

    def _count_tokens(self, state: _RunState, raw: str) -> None:
        """Add the last call's tokens: the client's ``last_usage``, else an estimate at 4 characters a token."""
        counts = _reported_usage(self.llm)
        if counts is None:
            counts = ((state.head_chars + state.tail_chars) // 4, len(raw) // 4)
            state.usage["estimated"] = True
        state.usage["prompt_tokens"] += counts[0]
        state.usage["completion_tokens"] += counts[1]

    def _finish(self, state: _RunState, stop: str) -> AgentResult:
        usage = dict(state.usage, total_tokens=state.usage["prompt_tokens"] + state.usage["completion_tokens"])
        last_error = state.steps[-1].error if state.steps else None
        summary = {
            "final": f"answered in {len(state.steps)} step(s)",
            "max_steps": f"no final answer within max_steps={self.max_steps}",
            "repeat_limit": f"the same call was repeated more than max_repeats={self.max_repeats} times",
            "format_errors": f"more than max_format_errors={self.max_format_errors} unparseable replies in a row",
            "time_limit": f"ran past max_seconds={self.max_seconds}",
            "token_limit": f"used {usage['total_tokens']} tokens, over max_total_tokens={self.max_total_tokens}",
            "llm_error": f"the model endpoint failed: {last_error}",
        }[stop]
        return AgentResult(answer=state.answer if stop == "final" else None, stop_reason=stop, steps=state.steps,
                           messages=state.messages, usage=usage, seconds=time.monotonic() - state.started,
                           summary=summary)


# -- Demo tools and the CLI ------------------------------------------------------------

def _format_number(value: int | float) -> str:
    return str(value) if isinstance(value, int) else f"{value:.15g}"


def _calculator(expression: str) -> str:
    """Evaluate an arithmetic expression: + - * / // % **, parentheses, sqrt, log, sin, pi, ...

    Args:
        expression: The arithmetic to evaluate, e.g. "(128*3+40)/4".
    """
    return _format_number(safe_eval(expression))


def _clock() -> str:
    """The current date and time in UTC."""
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())


def _demo_tools() -> ToolRegistry:
    registry = ToolRegistry()
    registry.register(_calculator, name="calculator")
    registry.register(_clock, name="clock")
    return registry


def run(task: str, llm: Optional[LLM] = None, tools: Any = None, **options: Any) -> AgentResult:
    """Run one task in one call: ``Agent(llm, tools, **options).run(task)``.

    With no ``llm`` the offline ``MockLLM`` planner answers; with no ``tools`` the
    demo tools (``calculator``, ``clock``) are used.
    """
    return Agent(llm if llm is not None else MockLLM(), tools if tools is not None else _demo_tools(),
                 **options).run(task)


_DEMO_TASK = "What time is it now, and what is (128*3+40)/4?"
_EXIT_CODES = {"final": 0, "llm_error": 3}  # any other stop reason: 1
_BROKEN_PIPE = 141                          # 128 + SIGPIPE, as the shell reports a closed pipe
_LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")


def _short(text: Any, limit: int = 70) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _cli_say(text: str, stream: Any = None) -> None:
    """Write a line that may hold any str (lone surrogates too) to stderr or ``stream``, whatever its encoding."""
    stream = stream if stream is not None else sys.stderr
    encoding = getattr(stream, "encoding", None) or "utf-8"
    stream.write((text + "\n").encode(encoding, "backslashreplace").decode(encoding, "replace"))
    stream.flush()


def _cli_parser() -> Any:
    import argparse

    parser = argparse.ArgumentParser(
        prog="agent.py", description="A ReAct agent for models without native function calling. "
        "With no model configured it runs offline with a mock model.",
        epilog="The API key is read from OPENAI_API_KEY only (never a flag). Exit codes: 0 answered, "
        "1 stopped without an answer, 2 bad usage or configuration, 3 the model endpoint failed, "
        "130 interrupted, 141 the output pipe was closed.")
    add = parser.add_argument
    add("task", nargs="?", help=f"the task (default: {_DEMO_TASK!r})")
    add("--model", help="model name (default: $OPENAI_MODEL; with only a base URL, the one model the server serves)")
    add("--base-url", help="OpenAI-compatible base URL ending in /v1 (default: $OPENAI_BASE_URL)")
    add("--temperature", type=float, help="sampling temperature (default 0)")
    add("--max-tokens", type=int, help="token limit per reply")
    add("--timeout", type=float, metavar="SECONDS", help="connection and per-byte timeout of a request (default 60)")
    add("--max-steps", type=int, default=10, help="model calls per task (default 10)")
    add("--max-seconds", type=float, help="time budget of a task, model calls included")
    add("--max-context-chars", type=int, help="characters of conversation sent per call (default: all)")
    add("--constrain", choices=_CONSTRAIN_MODES, default="auto",
        help="constrained decoding with the action schema: after a format error (auto, the default), always, never")
    add("--json-schema", action="store_true", help="the same as --constrain always")
    add("--tools", action="append", metavar="FILE.py", help="load tools from a Python file (repeatable): its "
        "ToolRegistry named 'tools', else every public function with a docstring; replaces the demo tools")
    add("--system-prompt", metavar="FILE", help="a system prompt from a file; {tools} in it lists the tools")
    add("--allow-http-key", action="store_true", help="send $OPENAI_API_KEY over plain http to a non-loopback host")
    add("--trace", metavar="FILE", help="write every step as a JSON line, as it happens")
    add("--replay", metavar="FILE", help="replay the model replies of a saved result or trace")
    add("--json", action="store_true", help="print the whole result as JSON on stdout")
    add("--quiet", action="store_true", help="no progress lines on stderr")
    add("-v", "--verbose", action="count", default=0, help="log retries, adaptations and ladder rungs; -vv: debug")
    add("--offline", action="store_true", help="use the offline mock model even if one is configured")
    add("-i", "--interactive", action="store_true", help="ask several questions in one conversation")
    add("--version", action="version", version=f"agent.py {__version__}")
    return parser


def _cli_load_tools(path: str) -> list:
    """The tools a --tools file defines; ValueError when it cannot be loaded or defines none."""
    import importlib.util
    import inspect

    # the file's own `import agent` must get this module, so its ToolRegistry is ours
    sys.modules.setdefault("agent", sys.modules[__name__])
    name = "agent_tools_" + re.sub(r"\W", "_", os.path.splitext(os.path.basename(path))[0])
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ImportError("not a Python file")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:  # the user's own code: any failure is a configuration error
        raise ValueError(f"could not load tools from {path}: {type(exc).__name__}: {exc}") from None
    registry = getattr(module, "tools", None)
    if isinstance(registry, ToolRegistry):
        return list(registry)
    functions = [value for key, value in vars(module).items() if not key.startswith("_")
                 and inspect.isfunction(value) and value.__module__ == name and value.__doc__]
    if not functions:
        raise ValueError(f"{path} defines no tools: no ToolRegistry named 'tools' and no public function "
                         "with a docstring")
    return functions


def _cli_tools(paths: Optional[list]) -> ToolRegistry:
    if not paths:
        return _demo_tools()
    registry = ToolRegistry()
    for path in paths:
        for tool in _cli_load_tools(path):
            registry.register(tool)
    return registry


def _cli_check_url(url: str) -> None:
    """Refuse at once a base URL with a bad port or a broken host (no request, no retry); ValueError."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url.strip())
        parts.port  # noqa: B018 -- raises ValueError for a port that is not a number in 0-65535
    except ValueError as exc:
        raise ValueError(f"invalid base URL {url!r}: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"invalid base URL {url!r} (must start with http:// or https:// and name a host)")


def _cli_served_model(base_url: str, args: Any) -> str:
    """The one model the server at ``base_url`` serves (GET /models); ValueError naming what it serves otherwise."""
    import urllib.request
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(base_url.strip())
    url = urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/models"))
    key = (os.environ.get("OPENAI_API_KEY") or "").strip()
    if parts.scheme == "http" and parts.hostname not in _LOOPBACK_HOSTS and not args.allow_http_key:
        key = ""  # an environment key is not sent in the clear to a host that may not be trusted
    headers = {"Accept": "application/json", "User-Agent": f"agent.py/{__version__}"}
    if key:
        headers["Authorization"] = f"Bearer {key}"

    class NoRedirect(urllib.request.HTTPRedirectHandler):  # a redirect would carry the key to another host
        def redirect_request(self, *ignored: Any) -> None:
            return None

    handlers = [NoRedirect()] + ([urllib.request.ProxyHandler({})] if parts.hostname in _LOOPBACK_HOSTS else [])
    try:
        with urllib.request.build_opener(*handlers).open(urllib.request.Request(url, headers=headers),
                                                         timeout=args.timeout or 10) as response:
            data = json.loads(response.read(1 << 20).decode("utf-8", "replace"))
        names = [m["id"] for m in data["data"] if isinstance(m, dict) and isinstance(m.get("id"), str)]
    except Exception as exc:  # unreachable, an HTTP error, a redirect, not the OpenAI shape
        problem = f"asking {url} failed ({type(exc).__name__}: {str(exc).replace(key, '***') if key else exc})"
        raise ValueError(f"no model named, and {problem}: pass --model NAME or set OPENAI_MODEL") from None
    if len(names) == 1:
        return names[0]
    served = f"it serves {', '.join(names[:20])}" if names else "it lists none"
    raise ValueError(f"no model named, and {url} does not say which to use ({served}): pass --model NAME "
                     "or set OPENAI_MODEL")


def _cli_model(args: Any) -> tuple:
    """The model to drive and a one-line description of it; ValueError/OSError for bad configuration."""
    if args.replay:
        return MockLLM.from_trace(args.replay), f"replaying the replies in {args.replay}"
    model = args.model or os.environ.get("OPENAI_MODEL")
    base_url = args.base_url or os.environ.get("OPENAI_BASE_URL")
    if args.offline or not (model or base_url):
        return MockLLM(), "offline demo model (set OPENAI_MODEL or pass --model to use a real one)"
    if base_url:
        _cli_check_url(base_url)
    if not model and base_url:
        model = _cli_served_model(base_url, args)
    options = {"model": model, "base_url": args.base_url, "max_tokens": args.max_tokens,
               "temperature": args.temperature, "timeout": args.timeout}
    if args.allow_http_key:
        options["allow_http_key"] = True
    llm = OpenAICompatLLM.from_env(**options)
    return llm, f"model {llm.model} at {llm.url}"


def _cli_agent(args: Any) -> tuple:
    """Build everything from the flags before anything is opened; ValueError/OSError/AgentError when bad."""
    if args.task is not None and not args.task.strip():
        raise ValueError("empty task: give a task, or none at all for the demo")
    registry = _cli_tools(args.tools)
    system_prompt = None
    if args.system_prompt:
        with open(args.system_prompt, encoding="utf-8") as handle:
            system_prompt = handle.read()
    llm, label = _cli_model(args)
    agent = Agent(llm, registry, system_prompt=system_prompt, max_steps=args.max_steps,
                  max_seconds=args.max_seconds, max_context_chars=args.max_context_chars,
                  constrain="always" if args.json_schema else args.constrain, confirm=_cli_confirm)
    return agent, label


def _cli_progress(step: Step) -> str:
    """The step's line: what the model did (its thought and call, or the reply it could not read), never the reply."""
    action = step.action
    if step.raw is None:
        what = f"model failed: {_short(step.error, 200)}"
    elif action is None:
        reason = (step.error or "").split(". Reply with exactly one JSON object", 1)[0]
        what = f"unparseable reply {_short(step.raw, 50)!r}: {_short(reason, 90)}"
    elif action.kind == "final":
        what = f"final answer: {_short(action.answer)}"
    else:
        what = f"{action.name} {_short(json.dumps(action.arguments, ensure_ascii=False), 60)}"
    thought = f" {_short(action.thought, 60)} |" if action and action.thought else ""
    seconds = step.llm_seconds + step.tool_seconds
    return f"[step {step.index}]{thought} {what} ({seconds:.2f} s)"


class _LiveLine:
    """On a terminal: one line on stderr showing the reply as it streams, with a token count (the client's on_delta)."""

    def __init__(self) -> None:
        self.text, self.tokens, self.step = "", 0, 1

    def __call__(self, piece: Optional[str]) -> None:
        import shutil

        if piece is None:  # the client retries: the reply starts again
            self.text, self.tokens = "", 0
            return
        self.text, self.tokens = (self.text + piece)[-400:], self.tokens + 1  # a streamed piece is about a token
        head = f"[step {self.step}] {self.tokens} tokens: "
        room = max(10, shutil.get_terminal_size().columns - len(head) - 1)
        sys.stderr.write("\r\x1b[K" + head + _short(self.text, 10 ** 6)[-room:])
        sys.stderr.flush()

    def clear(self) -> None:
        if self.tokens:
            sys.stderr.write("\r\x1b[K")
        self.text, self.tokens, self.step = "", 0, self.step + 1


def _cli_on_step(args: Any, trace: Any, live: Optional[_LiveLine]) -> Callable[[Step], None]:
    def on_step(step: Step) -> None:
        if trace is not None:  # one whole line per step, flushed, so an interrupted run keeps its steps
            trace.write(json.dumps({"event": "step", **step.to_dict()}, ensure_ascii=False, default=str) + "\n")
            trace.flush()
        if live is not None:
            live.clear()
        if not args.quiet:
            _cli_say(_cli_progress(step))
    return on_step


def _cli_confirm(name: str, arguments: dict) -> bool:
    if not sys.stdin.isatty():
        return False  # nobody to ask: decline
    sys.stderr.write(f"Run {name} {json.dumps(arguments)}? [y/N] ")
    sys.stderr.flush()
    return sys.stdin.readline().strip().lower() in ("y", "yes")


def _cli_hint(agent: Agent, result: AgentResult) -> Optional[str]:
    """The likely cause of a failed run, when the error names one."""
    error = (result.steps[-1].error or "") if result.steps else ""
    model = getattr(agent.llm, "model", None)
    if result.stop_reason == "llm_error" and "HTTP 404" in error and model and repr(model)[1:-1] in error:
        return f"unknown model {model!r}: the server does not serve it (GET /models lists what it serves)"
    if result.stop_reason == "llm_error" and "Connection refused" in error:
        return "nothing answers at that address: is the server running, and is the port right?"
    if result.stop_reason == "format_errors":
        return "the model could not write the JSON action: try --constrain always, or a larger model"
    return None


def _cli_once(agent: Agent, task: str, args: Any, trace: Any, history: Optional[list] = None) -> tuple:
    result = agent.run(task, history)
    if trace is not None:
        record = {key: value for key, value in result.to_dict().items() if key != "steps"}
        trace.write(json.dumps({"event": "result", **record}, ensure_ascii=False, default=str) + "\n")
        trace.flush()
    if args.json:
        _cli_say(json.dumps(result.to_dict(), ensure_ascii=False, default=str), sys.stdout)
    elif result.answer is not None:
        _cli_say(result.answer, sys.stdout)
    if not result.ok:
        _cli_say(f"agent.py: stopped ({result.stop_reason}): {result.summary}")
        hint = _cli_hint(agent, result)
        if hint:
            _cli_say(f"agent.py: hint: {hint}")
    return _EXIT_CODES.get(result.stop_reason, 1), result


def _cli_interactive(agent: Agent, args: Any, trace: Any) -> int:
    code, history = 0, None
    while True:
        sys.stderr.write("you> ")
        sys.stderr.flush()
        line = sys.stdin.readline()
        if not line or line.strip() in ("exit", "quit"):
            return code
        if line.strip():
            code, result = _cli_once(agent, line.strip(), args, trace, history)
            history = result.messages


def _cli_run(args: Any) -> int:
    """Build, open the trace, run and print; the exit code."""
    try:
        agent, label = _cli_agent(args)  # every option is checked before the trace file is opened
        trace = open(args.trace, "w", encoding="utf-8", errors="backslashreplace") if args.trace else None
    except (ValueError, OSError, AgentError) as exc:
        _cli_say(f"agent.py: {exc}")
        return 2
    live = None
    if not args.quiet and sys.stderr.isatty() and hasattr(agent.llm, "on_delta"):
        live = agent.llm.on_delta = _LiveLine()  # the CLI owns this client: one run at a time
    agent.on_step = _cli_on_step(args, trace, live)
    if not args.quiet:
        _cli_say(f"agent.py: {label}")
    try:
        if args.interactive:
            return _cli_interactive(agent, args, trace)
        return _cli_once(agent, args.task or _DEMO_TASK, args, trace)[0]
    except KeyboardInterrupt:
        _cli_say("agent.py: interrupted; the steps so far are kept in the trace")
        return 130
    finally:
        if trace is not None:
            trace.close()


def _cli_silence() -> None:
    """After a broken pipe, point stdout and stderr at devnull so the interpreter's last flush cannot fail."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        try:
            os.dup2(devnull, stream.fileno())
        except (OSError, ValueError, AttributeError):  # not a real file (captured in tests)
            pass
    os.close(devnull)


def main(argv: Optional[list] = None) -> int:
    """The command line: parse, build, run, print. Returns the exit code; the only place that prints."""
    try:
        args = _cli_parser().parse_args(argv)
    except SystemExit as exc:  # --help, --version, or bad usage
        return exc.code if isinstance(exc.code, int) else 2
    handler = None
    if args.verbose:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("agent.py: %(message)s"))
        _log.addHandler(handler)
        _log.setLevel(logging.INFO if args.verbose == 1 else logging.DEBUG)
    try:
        return _cli_run(args)
    except BrokenPipeError:  # the reader went away (| head): stop quietly
        _cli_silence()
        return _BROKEN_PIPE
    finally:
        if handler is not None:
            _log.removeHandler(handler)
            _log.setLevel(logging.NOTSET)


if __name__ == "__main__":
    sys.exit(main())

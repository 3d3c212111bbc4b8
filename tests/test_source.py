"""agent.py as source: each module-level name is defined once, each method lives in its class, and
the comments say why without keeping a lab notebook.

A second ``def`` of a name silently replaces the first after import (every call made at run time
reaches the second), and ruff does not catch it. A method assigned onto a class from outside its
body (``ToolRegistry.close = close``) is invisible to a reader of the class. A comment or docstring
that names a model, a run count, a date or an issue is a measurement: it lives in docs/NOTES.md,
and the comment points there by heading.
"""
import ast
import collections
import io
import re
import tokenize
from pathlib import Path

SOURCE = Path(__file__).parent.parent / "agent.py"

# Methods still assigned onto a class at module level, each a forward reference from the class to
# a later section. When a method moves into its class, delete its row; adding a row is no fix.
KNOWN_PATCHES: set = set()


def module_statements(tree):
    """The module's statements, with the bodies of top-level if/try/with/for opened."""
    pending = list(tree.body)
    while pending:
        node = pending.pop(0)
        yield node
        if isinstance(node, (ast.If, ast.Try, ast.With, ast.For, ast.While)):
            for field in ("body", "orelse", "finalbody"):
                pending.extend(getattr(node, field, []))
            for handler in getattr(node, "handlers", []):
                pending.extend(handler.body)


def bound_names(target):
    """The plain names an assignment target binds (``a``, ``a, b``, ``[a, *b]``)."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [name for element in target.elts for name in bound_names(element)]
    if isinstance(target, ast.Starred):
        return bound_names(target.value)
    return []


def assigned_attributes(target):
    """The ``Owner.attribute`` pairs an assignment target sets."""
    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
        return [(target.value.id, target.attr)]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [pair for element in target.elts for pair in assigned_attributes(element)]
    if isinstance(target, ast.Starred):
        return assigned_attributes(target.value)
    return []


def targets_of(node):
    if isinstance(node, ast.Assign):
        return node.targets
    if isinstance(node, (ast.AnnAssign, ast.AugAssign)):
        return [node.target]
    return []


def definitions(tree):
    """{name: [line, ...]} for every def, class and assignment at module level."""
    found = collections.defaultdict(list)
    for node in module_statements(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found[node.name].append(node.lineno)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in targets_of(node):
                for name in bound_names(target):
                    found[name].append(node.lineno)
    return found


def patches(tree):
    """{(class, attribute): line} for each attribute set on a module-level class outside it."""
    classes = {node.name for node in tree.body if isinstance(node, ast.ClassDef)}
    found = {}
    for node in module_statements(tree):
        for target in targets_of(node):
            for owner, attribute in assigned_attributes(target):
                if owner in classes:
                    found[(owner, attribute)] = node.lineno
        call = node.value if isinstance(node, ast.Expr) else None
        if (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
                and call.func.id == "setattr" and len(call.args) >= 2
                and isinstance(call.args[0], ast.Name) and call.args[0].id in classes
                and isinstance(call.args[1], ast.Constant)):
            found[(call.args[0].id, call.args[1].value)] = node.lineno
    return found


def parsed(text=None):
    return ast.parse(SOURCE.read_text(encoding="utf-8") if text is None else text)


def test_no_module_level_name_is_defined_twice():
    twice = {name: lines for name, lines in definitions(parsed()).items() if len(lines) > 1}
    assert not twice, f"defined more than once at module level (name: lines): {twice}"


def test_the_check_sees_a_second_definition_of_each_kind():
    text = "def f(): pass\nclass C: pass\nX = 1\ndef f(): pass\nC = 2\nX: int = 3\n"
    assert dict(definitions(parsed(text))) == {"f": [1, 4], "C": [2, 5], "X": [3, 6]}


def test_no_method_is_assigned_onto_a_class_from_outside_it():
    found = patches(parsed())
    new = {pair: line for pair, line in found.items() if pair not in KNOWN_PATCHES}
    assert not new, f"set on a class from outside its body (class, name): line: {new}"


def test_the_check_sees_each_way_of_patching_a_class():
    text = ("class C: pass\nC.a = 1\nC.b, C.c = 2, 3\nsetattr(C, 'd', 4)\n"
            "if True:\n    C.e = 5\nD = C\n")
    assert sorted(patches(parsed(text))) == [("C", "a"), ("C", "b"), ("C", "c"), ("C", "d"),
                                             ("C", "e")]


# What a comment or docstring of agent.py may not hold: each a measurement's detail, for NOTES.md.
NOTEBOOK = re.compile(
    r"SmolLM|Qwen|Magistral|Devstral|\bLlama[- ]?\d|\bgpt-\d"   # a model
    r"|\b20\d\d-\d\d-\d\d\b"                                      # a date
    r"|\bissues? #?\d"                                            # an issue
    r"|\b\d+(?:-\d+)? (?:of|out of) \d+\b"                         # a run count: 2 of 10
    r"|\(README, \"",                                               # a pointer to the README
    re.I)
SIZE = re.compile(r"\b\d+(?:\.\d+)?[MB]\b")                    # a model's size: 135M, 0.5B

def comments_and_docstrings(text):
    """[(line number, text)] for each comment, and each line of each docstring, of a source."""
    found = [(token.start[0], token.string)
             for token in tokenize.generate_tokens(io.StringIO(text).readline)
             if token.type == tokenize.COMMENT]
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            docstring = ast.get_docstring(node, clean=False)
            if docstring is not None:
                start = node.body[0].lineno
                found.extend((start + n, line) for n, line in enumerate(docstring.splitlines()))
    return sorted(found)


def notebook_lines(text):
    """The comment and docstring lines of a source that hold a model, a run count, a date, an issue
    or a README pointer."""
    return [(number, line.strip()) for number, line in comments_and_docstrings(text)
            if NOTEBOOK.search(line) or SIZE.search(line)]


def test_no_comment_names_a_model_a_run_count_a_date_or_an_issue():
    found = notebook_lines(SOURCE.read_text(encoding="utf-8"))
    assert not found, "move these to docs/NOTES.md and point there:\n" + "\n".join(
        f"agent.py:{number}: {line}" for number, line in found)


def test_the_comment_check_sees_each_kind_and_passes_servers_and_plain_counts():
    text = ('"""Runs on llama.cpp, vLLM and Ollama; 8 MiB at most."""\n'
            "# SmolLM2 looped\n# on the 0.5B model\n# 2 of 10 cases\n# see issue 18.1\n"
            "# since 2026-12-03\n# (README, \"The prompt\")\n"
            "def f():\n    \"\"\"One step of 10; a 5b flag.\n\n    Qwen answered.\"\"\"\n"
            "x = 'SmolLM2 2 of 10'   # a string is not a comment\n")
    assert [number for number, _ in notebook_lines(text)] == [2, 3, 4, 5, 6, 7, 11]


def test_every_pointer_to_the_notes_names_one_of_their_headings():
    headings = set(re.findall(r"^## (.+)$", (SOURCE.parent / "docs" / "NOTES.md").read_text(
        encoding="utf-8"), re.M))
    prose = " ".join(line.lstrip("# ").strip() for _, line in comments_and_docstrings(
        SOURCE.read_text(encoding="utf-8")))
    pointed = re.findall(r'docs/NOTES\.md, "([^"]+)"', prose)
    assert pointed, "no comment points to docs/NOTES.md: the pattern is wrong"
    assert not set(pointed) - headings, f"no such heading: {sorted(set(pointed) - headings)}"

"""The table of what the model is told: one part of agent.py ("Errors and settings, what the model is
told") holds every ERROR: text the model reads; the other sections use them by name."""
import ast
import re
from pathlib import Path

import agent

SOURCE = Path(agent.__file__).read_text(encoding="utf-8")
TABLE = "Errors and settings, what the model is told"


def parts():
    """(first line, last line, ruler title) of each ruler-marked part of agent.py."""
    lines = SOURCE.splitlines()
    starts = [(n + 1, m.group(1)) for n, line in enumerate(lines)
              if (m := re.match(r"# -- (.+?) -+$", line))]
    ends = [start - 1 for start, _ in starts[1:]] + [len(lines)]
    return [(start, end, title) for (start, title), end in zip(starts, ends)]


def literals_starting(prefix):
    """Line numbers of the string literals (plain or the first piece of an f-string) that start with
    prefix."""
    found = []
    for node in ast.walk(ast.parse(SOURCE)):
        if isinstance(node, ast.JoinedStr) and node.values:
            first = node.values[0]
            if isinstance(first, ast.Constant) and str(first.value).startswith(prefix):
                found.append(node.lineno)
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str)
              and node.value.startswith(prefix)):
            found.append(node.lineno)
    return found


def test_every_error_text_the_model_reads_is_in_the_table():
    where = {}
    for line in literals_starting("ERROR:"):
        title = next(title for start, end, title in parts() if start <= line <= end)
        where.setdefault(title, []).append(line)
    # The CLI shows a step's error to the user, never to the model.
    assert set(where) - {"CLI"} == {TABLE}, where


def test_the_table_sits_above_every_section_that_uses_it():
    titles = [title for _, _, title in parts()]
    assert titles.index(TABLE) == titles.index("Errors and settings") + 1
    assert titles.index(TABLE) < titles.index("Tools")

"""Reading order of agent.py: which top-level blocks use module names defined further down.

    python bench/forward_refs.py [path/to/agent.py] [--all]

A top-level block is one statement at module level: a function, a class, an
assignment. Its uses are the module-level names it loads anywhere inside it:
in a decorator, a default, an annotation, a class body, and also in a function
body. A name used only inside a function is resolved at call time, so Python
does not mind; a reader does, because the file no longer reads top to bottom.
So it counts as a forward reference here. A name bound locally (a parameter,
an assignment, a comprehension variable) hides the module name and is not a use.
A name is defined where it is first bound at module level.

Blocks are grouped by the section ruler above them (``# -- Name, part ---``); the
section is the ruler's text up to its first comma. A forward reference to a
name in the same section is allowed (the entry point comes first and its helpers
follow in call order; mutual recursion lives inside a section) and is listed
only with --all. A reference into a later section is what this script is for:
each one is listed, and the exit status is 1 when there is any.

First comes each section part's line range, counted from its ruler to the line
before the next ruler.
"""
import ast
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RULER = re.compile(r"# -- (\S.*?) -+\s*$")
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda,
           ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def main(argv=None):
    args = sys.argv[1:] if argv is None else argv
    show_all = "--all" in args
    paths = [a for a in args if a != "--all"]
    path = paths[0] if paths else os.path.join(ROOT, "agent.py")
    with open(path, encoding="utf-8") as f:
        source = f.read()
    rulers = rulers_of(source)
    tree = ast.parse(source)
    defined = first_definitions(tree)
    print_ranges(rulers, len(source.splitlines()))
    crossing = print_forward_refs(tree, defined, rulers, show_all)
    print(f"\n{crossing} forward reference(s) into a later section")
    return 1 if crossing else 0


def rulers_of(source):
    """[(line, ruler text)] for every section ruler, in file order."""
    found = []
    for number, line in enumerate(source.splitlines(), 1):
        match = RULER.match(line)
        if match:
            found.append((number, match.group(1)))
    return found


def first_definitions(tree):
    """{name: line} for each name bound at module level, at its first binding."""
    defined = {}
    for stmt in tree.body:
        for name in bound_names(stmt, top=True):
            defined.setdefault(name, stmt.lineno)
    return defined


def bound_names(node, top=False):
    """The names a statement binds in its own scope (not inside nested functions or classes)."""
    names = set()
    if top and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, ast.Name) and isinstance(current.ctx, (ast.Store, ast.Del)):
            names.add(current.id)
        elif isinstance(current, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in current.names)
        elif isinstance(current, ast.arg):
            names.add(current.arg)
        elif current is not node and isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(current.name)
            continue
        elif isinstance(current, ast.ExceptHandler) and current.name:
            names.add(current.name)
        if current is node or not isinstance(current, _SCOPES + (ast.ClassDef,)):
            stack.extend(ast.iter_child_nodes(current))
    return names


def module_uses(stmt, defined):
    """{name: first line} of the module-level names a top-level statement loads."""
    uses = {}

    def visit(node, hidden):
        if isinstance(node, _SCOPES):
            local = bound_names(node) | args_of(node)
            hidden = hidden | (local - globals_of(node))
            for default in defaults_of(node):
                visit(default, hidden)
            for child in body_of(node):
                visit(child, hidden)
            return
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            if node.id in defined and node.id not in hidden:
                uses.setdefault(node.id, node.lineno)
        for child in ast.iter_child_nodes(node):
            visit(child, hidden)

    visit(stmt, frozenset())
    return uses


def args_of(node):
    if isinstance(node, _SCOPES[3:]):
        return set()
    a = node.args
    every = a.posonlyargs + a.args + a.kwonlyargs + [x for x in (a.vararg, a.kwarg) if x]
    return {x.arg for x in every}


def defaults_of(node):
    """What a function evaluates where it is defined: decorators, defaults, annotations."""
    if isinstance(node, _SCOPES[3:]):
        return [node.generators[0].iter]
    a = node.args
    found = a.defaults + [d for d in a.kw_defaults if d]
    if isinstance(node, ast.Lambda):
        return found
    found += node.decorator_list + [node.returns] if node.returns else node.decorator_list
    return found + [x.annotation for x in a.posonlyargs + a.args + a.kwonlyargs if x.annotation]


def body_of(node):
    if isinstance(node, ast.Lambda):
        return [node.body]
    if isinstance(node, _SCOPES[3:]):
        rest = [node.elt] if not isinstance(node, ast.DictComp) else [node.key, node.value]
        first = node.generators[0]
        return rest + [first.target] + first.ifs + [n for g in node.generators[1:]
                                                    for n in (g.target, g.iter, *g.ifs)]
    return node.body


def globals_of(node):
    names = set()
    for child in ast.walk(node):
        if isinstance(child, ast.Global):
            names.update(child.names)
    return names


def section_of(line, rulers):
    """(ruler text, section name) of the part a line sits in."""
    text = "(before the first ruler)"
    for number, ruler in rulers:
        if number > line:
            break
        text = ruler
    return text, text.split(",")[0]


def print_ranges(rulers, last_line):
    print("Section parts, lines:")
    ends = [number - 1 for number, _ in rulers[1:]] + [last_line]
    for (start, text), end in zip(rulers, ends):
        print(f"  {start:5}-{end:<5} {end - start + 1:5} lines  {text}")


def print_forward_refs(tree, defined, rulers, show_all):
    """Print each block's forward references by section part; return how many cross a section."""
    crossing, shown_part = 0, None
    for stmt in tree.body:
        part, section = section_of(stmt.lineno, rulers)
        later = {n: line for n, line in module_uses(stmt, defined).items() if defined[n] > stmt.lineno}
        lines = []
        for name in sorted(later, key=defined.get):
            target = section_of(defined[name], rulers)[1]
            if target != section:
                crossing += 1
                lines.append(f"{name} (line {later[name]}) -> {target}, line {defined[name]}")
            elif show_all:
                lines.append(f"{name} (line {later[name]}) -> same section, line {defined[name]}")
        if lines:
            if part != shown_part:
                print(f"\n# -- {part}")
                shown_part = part
            label = stmt.name if hasattr(stmt, "name") else type(stmt).__name__
            print(f"  {label} (line {stmt.lineno}):")
            for line in lines:
                print(f"      {line}")
    return crossing


if __name__ == "__main__":
    sys.exit(main())

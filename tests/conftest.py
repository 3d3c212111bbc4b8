"""Shared test setup: agent.py is imported from the repository root; property tests try 100 examples each.

PROPERTY_EXAMPLES=N (or its older name PARSER_EXAMPLES=N) runs every property test that does not fix
its own count with N examples, for a deeper local run: PROPERTY_EXAMPLES=2500 python -m pytest -q
"""
import os
import sys


def _import_without_assert_rewriting(name):
    """Import name as Python would: pytest rewrites the asserts of every module of a plugin's package
    (hypothesis has about 75), and with PYTHONDONTWRITEBYTECODE set it redoes that on every run (~0.3 s)."""
    hooks = [hook for hook in sys.meta_path if type(hook).__name__ == "AssertionRewritingHook"]
    for hook in hooks:
        sys.meta_path.remove(hook)
    try:
        __import__(name)
    finally:
        sys.meta_path[:0] = hooks


_import_without_assert_rewriting("hypothesis.strategies")
from hypothesis import settings  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

DEEP = int(os.environ.get("PROPERTY_EXAMPLES") or os.environ.get("PARSER_EXAMPLES") or 0)
# No deadline: the suite runs beside other work, and a slow example is not a wrong one
settings.register_profile("suite", max_examples=DEEP or 100, deadline=None)
settings.load_profile("suite")

"""The examples in agent.py's docstrings are run as tests."""
import doctest

import agent


def test_docstring_examples():
    failed, attempted = doctest.testmod(agent, optionflags=doctest.ELLIPSIS)
    assert attempted >= 5
    assert failed == 0

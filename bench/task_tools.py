"""The tools of bench/tasks.jsonl, for python agent.py --batch bench/tasks.jsonl --tools bench/task_tools.py.

The demo tools (calculator, clock) and four more, the same as bench/real_tasks.py's, in a
ToolRegistry named ``tools`` (what --tools loads first).
"""
import agent

tools = agent._demo_tools()
_CAPITALS = {"france": "Paris", "japan": "Tokyo", "italy": "Rome", "canada": "Ottawa"}


@tools.register
def word_count(text: str) -> int:
    """Count the words in a text.

    Args:
        text: The text whose words to count.
    """
    return len(text.split())


@tools.register
def reverse_text(text: str) -> str:
    """Reverse a text, character by character.

    Args:
        text: The text to reverse.
    """
    return text[::-1]


@tools.register
def celsius_to_fahrenheit(celsius: float) -> float:
    """Convert a temperature from degrees Celsius to degrees Fahrenheit.

    Args:
        celsius: The temperature in degrees Celsius.
    """
    return celsius * 9 / 5 + 32


@tools.register
def capital_of(country: str) -> str:
    """The capital city of a country.

    Args:
        country: The country's name in English, e.g. "France".
    """
    return _CAPITALS.get(country.strip().lower(), f"unknown country {country!r}")

"""Your own tools: one from a decorated function, one with an explicit JSON Schema.

Runs offline with a scripted model; set OPENAI_MODEL (and OPENAI_BASE_URL /
OPENAI_API_KEY) to let a real model drive the same tools:

    python examples/custom_tools.py
    OPENAI_MODEL=qwen2.5:7b OPENAI_BASE_URL=http://localhost:11434/v1 python examples/custom_tools.py
"""
import json
import os
import sys
from typing import Literal

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from agent import Agent, MockLLM, OpenAICompatLLM, ToolRegistry  # noqa: E402

tools = ToolRegistry()

TEMPERATURES = {"paris": 14.0, "oslo": -3.5, "lima": 22.0}


@tools.register
def get_weather(city: str, unit: Literal["c", "f"] = "c") -> str:
    """Current temperature of a city.

    Args:
        city: City name, e.g. "Paris".
        unit: "c" for Celsius or "f" for Fahrenheit.
    """
    celsius = TEMPERATURES.get(city.strip().lower())
    if celsius is None:
        raise KeyError(f"no weather data for {city!r}; known cities: {', '.join(TEMPERATURES)}")
    return f"{celsius if unit == 'c' else celsius * 9 / 5 + 32:.1f} °{unit.upper()} in {city}"


# An explicit schema, for a function whose signature says little (or is not yours).
def _lookup(**kwargs):
    return {"Paris": "France", "Oslo": "Norway", "Lima": "Peru"}.get(kwargs["city"], "unknown")


tools.register(_lookup, name="country_of", description="The country a city is in.", parameters={
    "type": "object",
    "properties": {"city": {"type": "string", "description": "City name, capitalised."}},
    "required": ["city"],
    "additionalProperties": False,
})


def scripted_model() -> MockLLM:
    """What a small model might send, packaging mistakes included; the agent repairs them."""
    return MockLLM([
        '```json\n{"type": "tool_call", "thought": "Need the weather.", "name": "get_weather", '
        '"arguments": {"city": "Oslo", "unit": "f"}}\n```',
        "{'type': 'tool_call', 'thought': 'And the country.', 'name': 'country_of', 'arguments': {'city': 'Oslo'}}",
        json.dumps({"type": "final", "thought": "Done.", "answer": "Oslo (Norway) is at 25.7 °F."}),
    ])


def main() -> int:
    llm = OpenAICompatLLM.from_env() if os.environ.get("OPENAI_MODEL") else scripted_model()
    print(json.dumps(tools.schemas()[0]["function"]["parameters"], indent=2))
    result = Agent(llm, tools).run("How cold is it in Oslo, in Fahrenheit, and which country is it in?")
    for step in result.steps:
        if step.action is not None and step.action.kind == "tool_call":
            print(f"step {step.index}: {step.action.name}({step.action.arguments}) "
                  f"repairs={list(step.action.repairs)} -> {step.observation.splitlines()[0]}")
    print("answer:", result.answer)
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())

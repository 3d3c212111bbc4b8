"""Drive agent.py with a local OpenAI-compatible server; offline when none is configured.

Usual base URLs (all end in /v1):

    Ollama      http://localhost:11434/v1   (ollama serve; ollama pull qwen2.5:7b)
    vLLM        http://localhost:8000/v1    (vllm serve Qwen/Qwen2.5-7B-Instruct)
    llama.cpp   http://localhost:8080/v1    (llama-server -m model.gguf)
    LM Studio   http://localhost:1234/v1    (Developer tab: Start Server)

Local servers need no key; set OPENAI_API_KEY only for hosted APIs.

    python examples/local_model.py                                   # offline
    python examples/local_model.py --base-url http://localhost:11434/v1 --model qwen2.5:7b
    OPENAI_BASE_URL=http://localhost:8080/v1 OPENAI_MODEL=any python examples/local_model.py --json-schema

--json-schema sends registry.action_schema() as response_format, so servers with
constrained decoding (llama.cpp, vLLM, LM Studio, Ollama) cannot emit a malformed action.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from agent import Agent, MockLLM, OpenAICompatLLM, ToolRegistry, safe_eval  # noqa: E402

tools = ToolRegistry()


@tools.register
def calculator(expression: str) -> str:
    """Evaluate arithmetic: + - * / // % **, parentheses, sqrt, log, sin, pi.

    Args:
        expression: The arithmetic to evaluate, e.g. "17*23+4".
    """
    return str(safe_eval(expression))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=os.environ.get("OPENAI_MODEL"))
    parser.add_argument("--base-url", default=os.environ.get("OPENAI_BASE_URL", "http://localhost:11434/v1"))
    parser.add_argument("--json-schema", action="store_true")
    parser.add_argument("task", nargs="?", default="What is 17 * 23 + 4?")
    args = parser.parse_args(argv)
    if args.model:
        llm = OpenAICompatLLM(args.model, args.base_url, os.environ.get("OPENAI_API_KEY"), max_tokens=512,
                              response_schema=tools.action_schema() if args.json_schema else None)
        print(f"using {args.model} at {llm.url}", file=sys.stderr)
    else:
        llm = MockLLM()
        print("no model configured (--model or OPENAI_MODEL): running offline", file=sys.stderr)
    result = Agent(llm, tools, max_steps=6).run(args.task)
    for step in result.steps:
        print(f"[{step.index}] {step.raw!r:.100} -> {step.error or step.observation or ''!r:.80}", file=sys.stderr)
    print(result.answer if result.ok else f"stopped: {result.stop_reason} ({result.summary})")
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())

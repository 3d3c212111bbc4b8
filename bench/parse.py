"""parse_action: throughput on clean and messy replies, and how a generated defect mix is read.

    python bench/parse.py

For each reply in a seeded mix of packaging defects, a parser either returns the
intended action (a round trip saved), refuses (the model is asked again), or
returns something else -- a wrong action, the worst outcome. Replies that must be
refused (two actions, truncation, look-alike keys) count as wrong when accepted.
Peers run on the same inputs when importable (see bench/README.md).
"""
import json
import random
import time

from _common import best_rate, machine, table

from agent import ActionFormatError, _ActionScanner, parse_action

SEED = 7
TOOLS = ["calculator", "get_weather", "search", "read_file"]


def base_actions(rng, count):
    actions = []
    for i in range(count):
        if rng.random() < 0.3:
            actions.append({"type": "final", "thought": "I have the result.", "answer": f"The answer is {i}_{i}."})
        else:
            args = rng.choice([{"expression": f"{i}*23+4"}, {"city": "Paris", "unit": "c"},
                               {"query": f"news_{i}", "limit": 5, "safe": True}, {"path": f"/tmp/f{i}.txt"}])
            actions.append({"type": "tool_call", "thought": "Next step.", "name": rng.choice(TOOLS), "arguments": args})
    return actions


def indented(t): return json.dumps(json.loads(t), indent=2)
def stray_quotes(t): return f'"{t}"'
def fence(t): return f"```json\n{t}\n```"
def think(t): return f"<think>\nThe user wants this. Format: {{\"type\": ...}}.\n</think>\n{t}"
def prose(t): return f"Sure! Here is my action:\n{t}\nLet me know if you need more."
def trailing_comma(t): return t[:-1].rstrip() + ",\n}"
def python_literal(t): return repr(json.loads(t))
def raw_newline(t): return t.replace('Next step.', 'Next\nstep.').replace("I have the result.", "I have\nthe result.")
def markdown_escape(t): return t.replace("_", "\\_") if '"answer"' in t or "news_" in t else t
def observation_tail(t): return f"{t}\nObservation: 42\n{{\"type\": \"final\", \"answer\": \"42\"}}"
def array(t): return f"[{t}]"
def tags(t): return f"<tool_call>\n{t}\n</tool_call>"


# Lexical defects first, then wrappers: applied in this order.
DEFECTS = [indented, python_literal, raw_newline, markdown_escape, trailing_comma, array, stray_quotes, fence, think,
           prose, observation_tail, tags]


def must_refuse(rng, action):
    """Replies whose meaning is not certain; accepting any of them is a wrong action.

    Two actions are ambiguous only after prose (the model may be showing examples): a reply
    that opens with its action ends there, so its first action is the intended one.
    """
    text = json.dumps(action)
    other = dict(action, thought="Another one.", **({"answer": "different"} if action["type"] == "final"
                                                     else {"arguments": {"x": 1}}))
    renamed = {"action": action.get("name", "Final Answer"), "action_input": action.get("arguments", "42")}
    return rng.choice([
        f"You could send:\n{text}\nor:\n{json.dumps(other)}",  # two different actions after prose
        text[: len(text) * 2 // 3],                         # cut off
        json.dumps(renamed),                                # look-alike keys
        f"For example: {json.dumps([action, other])}",     # an array of several actions after prose
        text.replace('"arguments"', '"parameters"') if action["type"] == "tool_call" else text[:-1],
    ])


def corpus(count=1000):
    rng = random.Random(SEED)
    cases = []
    refusals = []
    for action in base_actions(rng, count):
        text = json.dumps(action)
        defects = sorted(rng.sample(DEFECTS, rng.randint(1, 3)), key=DEFECTS.index)
        for defect in defects:
            text = defect(text)
        # After prose, the final after an invented observation is a second action: the reply is refused
        # (issue 18.2), unless it is the same action.
        two = prose in defects and observation_tail in defects and action != {"type": "final", "answer": "42"}
        (refusals if two else cases).append((text, None if two else action))
    refusals += [(must_refuse(rng, action), None) for action in base_actions(rng, count // 4)]
    return cases, refusals


def same_action(got, want):
    if not isinstance(got, dict) or want is None:
        return False
    if want["type"] == "final":
        return got.get("answer") == want["answer"] and got.get("type", "final") == "final"
    return got.get("name") == want["name"] and got.get("arguments") == want["arguments"]


def agent_parser(text):
    action = parse_action(text)
    if action.kind == "final":
        return {"type": "final", "answer": action.answer}
    return {"type": "tool_call", "name": action.name, "arguments": action.arguments}


def peers():
    found = {"agent.py": (agent_parser, (ActionFormatError,))}
    try:
        from smolagents.utils import parse_json_blob
        found["smolagents parse_json_blob"] = (lambda t: parse_json_blob(t)[0], (Exception,))
    except ImportError:
        pass
    try:
        from langchain_core.utils.json import parse_json_markdown
        found["langchain parse_json_markdown"] = (parse_json_markdown, (Exception,))
    except ImportError:
        pass
    try:
        import json_repair
        found["json_repair.loads"] = (json_repair.loads, (Exception,))
    except ImportError:
        pass
    return found


def score(parser, errors, cases, refusals):
    right = wrong = refused = 0
    for text, want in cases + refusals:
        try:
            got = parser(text)
        except errors:
            refused += want is not None
            continue
        if want is not None and same_action(got, want):
            right += 1
        elif want is not None or got:
            wrong += 1
    return right, refused, wrong


def pathological():
    final = '{"type": "final", "answer": "x"}'
    big = '{"type": "final", "answer": "x", "k": [' + ",".join(["0"] * 50_000) + "]}"
    return [" " * 5000 + "x {}", "\n \t" * 30_000 + "Here: {}", "x" * 200_000, "{" * 10_000,
            '{"a": "' + "\\" * 150_000, "<think>" * 20_000, "```" * 50_000, "'" * 150_000,
            final + " {" * 80_000, "\\n" * 90_000, '"' * 150_000,
            big + '{"name": "a"}' * ((199_990 - len(big)) // 13),                 # review 1.6: was 18 s
            "{'type': 'final', 'answer': 'x', 'k': [" + ", ".join(["'a'"] * 24_000) + "]}",
            final + "[{}]" * 49_000, "Here: " + final + " {" + '\\"' * 90_000,
            "Here: " + final + " {" + "'" * 190_000, "<think>" * 10_000 + "</think>" * 10_000 + final]


def worst_time(parser, errors, inputs):
    worst = 0.0
    for text in inputs:
        started = time.perf_counter()
        try:
            parser(text)
        except errors:
            pass
        except RecursionError:
            pass
        worst = max(worst, time.perf_counter() - started)
    return worst


def scanner_rate(replies, piece):
    """Characters per second through the streaming client's scanner, fed `piece` characters at a time."""
    pieces = [[text[i:i + piece] for i in range(0, len(text), piece)] for text in replies]

    def feed_all(parts):
        scanner = _ActionScanner()
        for part in parts:
            if scanner.feed(part) is not None:
                break
    return best_rate(feed_all, pieces) * sum(map(len, replies)) / len(replies)


def main():
    cases, refusals = corpus()
    clean = [json.dumps(action) for _, action in cases]
    messy = [text for text, _ in cases]
    print(f"parse_action on {machine()}")
    print(f"{len(cases)} replies with 1-3 packaging defects each, {len(refusals)} replies that must be refused\n")
    rows = []
    found = peers()
    base = None
    for name, (parser, errors) in found.items():
        def safe(text, parser=parser, errors=errors):
            try:
                return parser(text)
            except errors:
                return None
        clean_rate, messy_rate = best_rate(safe, clean), best_rate(safe, messy)
        base = base or messy_rate
        right, refused, wrong = score(parser, errors, cases, refusals)
        rows.append([name, f"{clean_rate:,.0f}", f"{messy_rate:,.0f}", f"{messy_rate / base:.2f}x",
                     f"{right / len(cases):.1%}", f"{refused}", f"{wrong}",
                     f"{worst_time(parser, errors, pathological()) * 1000:.1f} ms"])
    table(["parser", "clean/s", "messy/s", "messy vs agent.py", "intended action",
           f"refused of {len(cases)}", f"wrong actions of {len(cases) + len(refusals)}", "worst pathological"], rows)
    long_reply = "<think>" + "Let me think about it. " * 8000 + "</think>\n" + json.dumps(cases[0][1]) + " tail" * 1000
    replies = messy + [long_reply]
    print("\nThe action scanner (streaming early stop), characters per second:")
    table(["fed", "chars/s"], [[f"{n} characters at a time", f"{scanner_rate(replies, n):,.0f}"] for n in (1, 8, 64)]
          + [["whole reply at once", f"{scanner_rate(replies, 10**9):,.0f}"]])
    if len(found) == 1:
        print("\n(peers not importable: see bench/README.md to compare with smolagents, LangChain, json-repair)")


if __name__ == "__main__":
    main()

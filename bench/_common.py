"""Shared helpers for the benchmarks: import agent.py from the repository, time things, print tables."""
import argparse
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def best_rate(func, items, repeat=5):
    """Items per second: the best of `repeat` passes over items (the least disturbed run)."""
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        for item in items:
            func(item)
        best = min(best, time.perf_counter() - started)
    return len(items) / best


def best_time(func, arg, repeat=5):
    """The fastest of a few runs: the figure least disturbed by other work on the machine."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        func(arg)
        times.append(time.perf_counter() - started)
    return min(times)


def median(values):
    return statistics.median(values)


def table(headers, rows):
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) for i, h in enumerate(headers)]
    line = "  ".join(str(h).ljust(w) for h, w in zip(headers, widths))
    print(line)
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths)))


def machine():
    import platform

    return f"{platform.python_implementation()} {platform.python_version()} on {platform.machine()}, " \
           f"{os.cpu_count()} CPUs ({platform.platform(terse=True)})"


def server_arguments(doc):
    """The parser of a benchmark that talks to a real server: its URL, model and how it is asked."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--base-url", default=os.environ.get("OPENAI_BASE_URL", "http://127.0.0.1:18080/v1"))
    parser.add_argument("--model", default=os.environ.get("OPENAI_MODEL", "smollm2-135m-instruct"))
    parser.add_argument("--constrain", default=None, help="auto, always or never (default: the agent's default)")
    parser.add_argument("--no-stream", action="store_true", help="send stream=False")
    return parser

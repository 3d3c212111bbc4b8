"""Shared helpers for the benchmarks: import agent.py from the repository, time things, print tables."""
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

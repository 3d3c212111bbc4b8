"""The offline planner's arithmetic scan: time against task length, for the inputs that made the old pattern
backtrack (a long run of "(" with no closing digit), beside the old pattern on the same inputs.

    python bench/planner.py
"""
import re

from _common import best_time, machine, table

import agent

_OLD_RUN = re.compile(r"[\d(][\d\s.+\-*/%()^_]*[\d)]")   # the pattern before the fix: quadratic on "((((..."


def old_scan(task):
    return [m.group() for m in _OLD_RUN.finditer(task)]


def main():
    rows = []
    for n in (3_000, 12_000, 48_000):
        tasks = (("'(' * n", "(" * n), ("'1+(' * n", "1+(" * (n // 3)), ("digits and spaces", "1 " * (n // 2)))
        for name, task in tasks:
            new = best_time(agent._find_arithmetic, task)
            old = best_time(old_scan, task) if n <= 12_000 else None
            rows.append((f"{n:,}", name, f"{new * 1000:.2f}", "-" if old is None else f"{old * 1000:.1f}"))
    table(("characters", "task", "now (ms)", "old pattern (ms)"), rows)
    print(f"\n{machine()}; best of 5 runs")


if __name__ == "__main__":
    main()

"""safe_eval: evaluations per second, long flat expressions, and the worst-case time over the attacks.

    python bench/calculator.py
"""
import os
import sys
import time

from _common import ROOT, best_rate, best_time, machine, table

sys.path.insert(0, os.path.join(ROOT, "tests"))

from test_calculator_security import ATTACKS  # noqa: E402

from agent import UnsafeExpression, safe_eval  # noqa: E402

TYPICAL = ["17 * 23 + 4", "(128*3+40)/4", "2**10 - 24", "sqrt(16) + pi * 2", "round(3.14159 * 2.5 ** 2, 2)",
           "(1 + 2) * (3 + 4) / (5 - 6) // 7 % 8", "max(1, 2, 3) - min(4, 5, 6)", "log10(1000) + exp(0)"]


def main():
    print(f"safe_eval on {machine()}\n")
    rate = best_rate(safe_eval, TYPICAL * 200)
    timings = []
    for expr in ATTACKS:
        started = time.perf_counter()
        try:
            safe_eval(expr)
            outcome = "ACCEPTED"
        except UnsafeExpression:
            outcome = "refused"
        timings.append((time.perf_counter() - started, expr, outcome))
    timings.sort(reverse=True)
    worst, worst_expr, _ = timings[0]
    accepted = [expr for _, expr, outcome in timings if outcome == "ACCEPTED"]
    long_sums = [("flat sum of 3,000 terms (5,999 characters)", "+".join(["1"] * 3000)),
                 ("flat sum at the size cap (9,999 characters)", "+".join(["1"] * 5000))]
    table(["measure", "value"], [
        ["typical expressions per second", f"{rate:,.0f}"],
        *[[label, f"{best_time(safe_eval, expr) * 1000:.1f} ms"] for label, expr in long_sums],
        ["attack inputs", len(ATTACKS)],
        ["attacks accepted", len(accepted)],
        ["worst-case time over attacks", f"{worst * 1000:.2f} ms ({worst_expr[:30]!r}...)"],
        ["median time over attacks", f"{timings[len(timings) // 2][0] * 1000:.3f} ms"],
    ])
    print("\nslowest five:")
    for seconds, expr, outcome in timings[:5]:
        print(f"  {seconds * 1000:7.2f} ms  {outcome:8}  {expr[:50]!r}")


if __name__ == "__main__":
    main()

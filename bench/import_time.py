"""Import cost of agent.py over a bare interpreter, beside the stdlib modules it needs and the peers.

    python bench/import_time.py [runs]

Each figure is the median wall time of fresh `python -c ...` processes; the
floor (`python -c pass`) is subtracted. Bytecode is cached first, as in any normal
install. Peers are measured when importable.
"""
import os
import subprocess
import sys
import time

from _common import ROOT, machine, median, table

STDLIB_NEEDED = ("import argparse, ast, collections.abc, dataclasses, difflib, functools, importlib.util, inspect, io, "
                 "ipaddress, itertools, json, logging, math, operator, os, queue, random, re, shutil, sys, threading, "
                 "time, tokenize, types, typing, urllib.parse")
CANDIDATES = [
    ("python -c pass (the floor)", "pass"),
    ("stdlib modules agent.py needs", STDLIB_NEEDED),
    ("import agent", "import agent"),
    ("import urllib.request (for scale)", "import urllib.request"),
    ("smolagents", "import smolagents"),
    ("langchain_core.utils.json", "import langchain_core.utils.json"),
    ("json_repair", "import json_repair"),
]


ENV = {key: value for key, value in os.environ.items()
       if key not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPROFILEIMPORTTIME")}  # cached bytecode, as users have it


def wall(code, runs):
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=ENV, capture_output=True)  # warm: write .pyc
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=ENV, capture_output=True)
        times.append(time.perf_counter() - started)
        if done.returncode != 0:
            return None
    return median(times)


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    print(f"Import time, median of {runs} fresh processes, on {machine()}\n")
    floor = wall("pass", runs)
    stdlib = wall(STDLIB_NEEDED, runs) - floor
    rows = []
    for label, code in CANDIDATES:
        seconds = wall(code, runs)
        if seconds is None:
            continue
        extra = seconds - floor
        rows.append([label, f"{seconds * 1000:.1f} ms", f"{extra * 1000:+.1f} ms",
                     "" if code == "pass" else f"{extra / stdlib:.2f}x" if stdlib > 0 else ""])
    table(["import", "wall", "over the floor", "vs stdlib needed"], rows)


if __name__ == "__main__":
    main()

"""Every example runs offline by default and succeeds."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = sorted(name for name in os.listdir(os.path.join(ROOT, "examples")) if name.endswith(".py"))


def test_the_three_documented_examples_exist():
    assert {"custom_tools.py", "local_model.py", "replay_trace.py"} <= set(EXAMPLES)


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_runs_offline(name):
    env = {key: value for key, value in os.environ.items() if not key.startswith("OPENAI_")}
    done = subprocess.run([sys.executable, os.path.join("examples", name)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip()


def test_replay_example_reproduces_the_trace():
    env = {key: value for key, value in os.environ.items() if not key.startswith("OPENAI_")}
    done = subprocess.run([sys.executable, "examples/replay_trace.py"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)
    assert "replay matches the original trace: True" in done.stdout

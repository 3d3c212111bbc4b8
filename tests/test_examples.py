"""Every example runs offline by default and succeeds."""
import os
import subprocess
import sys

import pytest
from conftest import ROOT, offline_env

# The three the README documents must be there (a missing one fails to run), and what each must print
DOCUMENTED = {"custom_tools.py": "", "local_model.py": "", "replay_trace.py": "replay matches the original trace: True"}
EXAMPLES = sorted(set(DOCUMENTED) | {name for name in os.listdir(os.path.join(ROOT, "examples"))
                                     if name.endswith(".py")})


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_runs_offline(name):
    done = subprocess.run([sys.executable, os.path.join("examples", name)], cwd=ROOT, env=offline_env(),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip() and DOCUMENTED.get(name, "") in done.stdout

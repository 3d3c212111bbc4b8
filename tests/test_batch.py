"""Batch runs: run_batch and python agent.py --batch, against MockLLM and a scripted local server."""
import json
import logging
import os
import signal
import subprocess
import sys
import threading

import pytest
from _http_servers import chat_answer, client, error_answer
from conftest import ROOT, call, final, make_tools, offline_env

import agent
from agent import Agent, MockLLM, run_batch

# -- helpers ---------------------------------------------------------------------------


def write_tasks(path, tasks):
    """A task file: each item a JSON line (a str item is written as it is)."""
    path.write_text("".join((item if isinstance(item, str) else json.dumps(item)) + "\n" for item in tasks))
    return str(path)


def arithmetic(n):
    """n tasks the offline planner answers: id i asks for i*3 and expects it."""
    return [{"id": f"t{i}", "task": f"What is {i}*3?", "expect": i * 3} for i in range(n)]


def lines(path):
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def ids(path):
    return [record["id"] for record in lines(path)]


def offline_agent():
    return Agent(MockLLM(), agent._demo_tools())


def batch_cli(*flags):
    """main() with --batch and the flags, offline; the exit code."""
    return agent.main(["--offline", "--quiet", *flags])


class Gate:
    """An LLM that answers the planner's reply for the first task at once and waits on .go for the others."""

    def __init__(self, first):
        self.first, self.go, self.asked = first, threading.Event(), []

    def chat(self, messages):
        task = messages[1]["content"]
        if len(messages) == 2:
            self.asked.append(task)
        if task != self.first:
            assert self.go.wait(5)
        return agent._offline_reply(messages)


# -- results and resuming ----------------------------------------------------------------

def test_each_result_line_holds_the_tasks_fields_then_the_runs(tmp_path):
    out = tmp_path / "out.jsonl"
    tasks = [{"id": "a", "task": "What is 6*7?", "expect": 42, "level": "easy"}, {"id": 7, "task": "What is 1+1?"}]
    summary = run_batch(offline_agent(), tasks, workers=2, out=str(out))
    records = {record["id"]: record for record in lines(out)}
    assert list(records["a"])[:4] == ["id", "task", "expect", "level"]
    assert records["a"]["solved"] is True and records["a"]["stop_reason"] == "final"
    assert records["a"]["answer"] == "42" and records["a"]["steps"] == 2 and records["a"]["format_errors"] == 0
    assert records["a"]["prompt_tokens"] > 0 and records["a"]["completion_tokens"] > 0
    assert "solved" not in records[7]               # no expect: nothing to check
    assert summary["tasks"] == 2 and summary["checked"] == 1 and summary["solved"] == 1
    assert summary["stop_reasons"] == {"final": 2}


def test_format_errors_count_every_unparseable_reply(tmp_path):
    llm = MockLLM(["no json here", "still none", final("4")])
    summary = run_batch(Agent(llm, make_tools()), [{"id": 1, "task": "x"}], out=str(tmp_path / "o"))
    assert lines(tmp_path / "o")[0]["format_errors"] == 2
    assert summary["format_errors_per_task"] == 2.0 and summary["steps_per_task"] == 3.0


@pytest.mark.parametrize("answer, expect, solved", [
    ("The answer is 42.", 42, True),
    ("It is 1,024 bytes", 1024, True),
    ("about 3.1415927", 3.14159265, True),       # within the relative tolerance, 1e-6
    ("3.14", 3.14159265, False),                 # rounded beyond it: give expect as the answer shows it
    ("2 + 40 = 42", 42.0, True),
    ("-5 degrees", -5, True),
    ("forty-two", 42, False),
    ("The capital is PARIS", "paris", True),
    ("Lyon", "Paris", False),
    (None, "x", False),
    ("1e400 or 5", 10 ** 400, False),            # beyond a float: not solved, and no error
])
def test_expect_is_a_number_within_a_tolerance_or_text_ignoring_case(answer, expect, solved):
    assert agent._solved(answer, expect) is solved


def test_a_second_run_with_the_same_out_skips_what_is_there(tmp_path):
    out = str(tmp_path / "out.jsonl")
    run_batch(offline_agent(), arithmetic(3), out=out)
    llm = MockLLM()
    summary = run_batch(Agent(llm, agent._demo_tools()), arithmetic(5), out=out)
    assert sorted(ids(out)) == [f"t{i}" for i in range(5)]
    assert len(llm.calls) == 2 * 2                 # only t3 and t4 ran, two steps each
    assert summary["tasks"] == 5 and summary["earlier"] == 3


def test_a_cut_off_last_line_is_dropped_and_its_task_runs_again(tmp_path):
    out = tmp_path / "out.jsonl"
    run_batch(offline_agent(), arithmetic(2), out=str(out))
    whole = out.read_bytes()
    out.write_bytes(whole + b'{"id": "t2", "task": "What is 2*3?", "sol')   # a crash in mid-write
    run_batch(offline_agent(), arithmetic(3), out=str(out))
    assert sorted(ids(out)) == ["t0", "t1", "t2"]
    assert out.read_bytes().startswith(whole)


def test_an_out_that_is_not_a_results_file_is_refused(tmp_path):
    out = tmp_path / "notes.txt"
    out.write_text("my notes\n")
    with pytest.raises(ValueError, match="line 1 is not a result line"):
        run_batch(offline_agent(), arithmetic(1), out=str(out))
    assert out.read_text() == "my notes\n"


def test_a_whole_last_line_without_its_line_break_is_kept_on_resume(tmp_path):
    out = tmp_path / "out.jsonl"
    run_batch(offline_agent(), arithmetic(2), out=str(out))
    out.write_bytes(out.read_bytes().rstrip(b"\n"))      # an editor that drops the final newline
    llm = MockLLM()
    summary = run_batch(Agent(llm, agent._demo_tools()), arithmetic(3), out=str(out))
    assert len(llm.calls) == 2 and summary["earlier"] == 2   # only t2 ran
    assert sorted(ids(out)) == ["t0", "t1", "t2"]   # each line whole: t2 does not join t1 (workers finish in any order)


def test_a_task_file_is_never_taken_for_a_results_file(tmp_path, capsys):
    tasks = write_tasks(tmp_path / "t.jsonl", arithmetic(2))
    other = write_tasks(tmp_path / "other.jsonl", arithmetic(3))
    before = (open(tasks).read(), open(other).read())
    assert batch_cli("--batch", tasks, "--out", tasks) == 2
    assert "is the task file" in capsys.readouterr().err
    assert batch_cli("--batch", tasks, "--out", other) == 2
    assert "line 1 is not a result line" in capsys.readouterr().err
    with pytest.raises(ValueError, match="line 1 is not a result line"):
        run_batch(offline_agent(), arithmetic(1), out=other)
    assert (open(tasks).read(), open(other).read()) == before


def test_an_out_that_is_no_regular_file_is_refused_at_once(tmp_path):
    tasks = write_tasks(tmp_path / "t.jsonl", arithmetic(1))
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for out in (str(fifo), "/dev/stdout"):                  # a pipe here
        done = subprocess.run([sys.executable, "agent.py", "--offline", "--quiet", "--batch", tasks, "--out", out],
                              cwd=ROOT, env=offline_env(), capture_output=True, text=True, timeout=30)
        assert done.returncode == 2 and "not a file" in done.stderr and done.stdout == ""
    for out in (str(fifo), os.devnull):
        with pytest.raises(ValueError, match="is a pipe, a terminal or a device, not a file"):
            run_batch(offline_agent(), arithmetic(1), out=out)


def test_an_out_that_is_the_programs_own_stdout_is_refused(tmp_path):
    tasks, out = write_tasks(tmp_path / "t.jsonl", arithmetic(1)), tmp_path / "out.jsonl"
    with open(out, "w") as stdout:                         # --out r.jsonl > r.jsonl: the summary would land in it
        done = subprocess.run([sys.executable, "agent.py", "--offline", "--quiet", "--batch", tasks, "--out", str(out)],
                              cwd=ROOT, env=offline_env(), stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=30)
    assert done.returncode == 2 and "is stdout, where the summary goes" in done.stderr and out.read_text() == ""


def test_a_second_run_on_the_same_out_is_refused_while_the_first_runs(tmp_path, capsys):
    tasks = arithmetic(3)
    out, gate = str(tmp_path / "out.jsonl"), Gate(tasks[0]["task"])
    first = threading.Thread(target=run_batch, args=(Agent(gate, agent._demo_tools()), tasks),
                             kwargs={"workers": 1, "out": out})
    first.start()
    try:
        while len(gate.asked) < 2:                       # the first task is written, the second waits
            first.join(0.01)
        with pytest.raises(ValueError, match="in use by another batch run"):
            run_batch(offline_agent(), tasks, out=out)
        assert batch_cli("--batch", write_tasks(tmp_path / "t.jsonl", tasks), "--out", out) == 2
        assert "in use by another batch run" in capsys.readouterr().err
    finally:
        gate.go.set()
        first.join(10)
    assert sorted(ids(out)) == ["t0", "t1", "t2"]          # each once
    assert run_batch(offline_agent(), tasks, out=out)["earlier"] == 3   # free again once it ended


def test_ids_that_read_alike_get_a_trace_each(tmp_path):
    tasks = [{"id": 7, "task": "What is 7*1?"}, {"id": "7", "task": "What is 7*2?"},
             {"id": 1e2, "task": "What is 100*1?"}, {"id": "100.0", "task": "What is 100*2?"},
             {"id": "A", "task": "What is 1*3?"}, {"id": "a", "task": "What is 1*4?"}]
    run_batch(offline_agent(), tasks, workers=1, out=str(tmp_path / "o"), traces=str(tmp_path / "traces"))
    records = lines(tmp_path / "o")
    names = [os.path.basename(record["trace"]).casefold() for record in records]
    assert len(set(names)) == 6 and "7.json" in names and "a.json" in names   # a plain text id keeps its name
    for record in records:
        with open(record["trace"]) as handle:
            assert json.load(handle)["answer"] == record["answer"]


def test_traces_replay_with_replay(tmp_path, capsys):
    run_batch(offline_agent(), [{"id": "six", "task": "What is 2*3?"}, {"id": "../x y", "task": "What is 1+1?"}],
              out=str(tmp_path / "o"), traces=str(tmp_path / "traces"))
    records = {record["id"]: record for record in lines(tmp_path / "o")}
    assert records["six"]["trace"] == str(tmp_path / "traces" / "six.json")
    assert os.path.dirname(records["../x y"]["trace"]) == str(tmp_path / "traces")   # an id is not a path
    assert agent.main(["--quiet", "--replay", records["six"]["trace"], "What is 2*3?"]) == 0
    assert capsys.readouterr().out.strip() == "6"


def test_an_id_that_overflows_to_infinity_is_refused_with_its_line(tmp_path):
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"id": 1e400, "task": "what is 1+1"}\n{"id": "inf", "task": "what is 2+2"}\n')
    [(number, item, problem), (_, good, _)] = agent._task_file(str(tasks))
    assert (number, item) == (1, None) and "finite number" in problem and good["id"] == "inf"
    with pytest.raises(ValueError, match='task 1: "id" must be non-empty text or a finite number'):
        run_batch(offline_agent(), [{"id": float("inf"), "task": "x"}], workers=1,
                  out=str(tmp_path / "o"))


def test_bad_tasks_given_to_the_library_raise_after_the_good_ones_ran(tmp_path):
    out = str(tmp_path / "o")
    with pytest.raises(ValueError, match='task 2: "id" must be non-empty text or a number'):
        run_batch(offline_agent(), [arithmetic(1)[0], {"id": [1], "task": "x"}], workers=1, out=out)
    assert ids(out) == ["t0"]
    with pytest.raises(ValueError, match='task 2: the id "n" came before'):
        run_batch(offline_agent(), [{"id": "n", "task": "What is 1+1?"}, {"id": "n", "task": "x"}],
                  workers=1, out=str(tmp_path / "o2"))


def test_workers_faster_than_the_writer_wait_instead_of_piling_results_up(tmp_path):
    started, eight, waited = [], threading.Event(), []

    class Instant:
        def chat(self, messages):
            started.append(1)
            if len(started) >= 8:
                eight.set()
            return final("ok")

    def on_result(record):                    # a slow writer: the first result takes a while to handle
        if not waited:
            waited.append(eight.wait(0.3))    # unbounded, the workers would run on through the tasks

    tasks = [{"id": i, "task": f"task {i}"} for i in range(20)]
    run_batch(Agent(Instant(), make_tools()), tasks, workers=2, out=str(tmp_path / "o"), on_result=on_result)
    assert waited == [False]                  # at most 1 handled + 2 queued + 2 waiting to be: 5 started
    assert len(ids(tmp_path / "o")) == 20


# -- Ctrl-C ------------------------------------------------------------------------------

def test_first_interrupt_starts_no_more_tasks_and_lets_the_running_ones_write(tmp_path, caplog):
    tasks = arithmetic(6)
    llm = Gate(first=tasks[0]["task"])

    class Release(logging.Handler):       # the runner logs once it has stopped handing out tasks
        def emit(self, record):
            llm.go.set()

    handler = Release()
    logging.getLogger("agent").addHandler(handler)

    results = []

    def on_result(record):
        results.append(record)
        if len(results) == 1:
            raise KeyboardInterrupt       # Ctrl-C while the first result is handled

    out = str(tmp_path / "o")
    try:
        with pytest.raises(KeyboardInterrupt):
            run_batch(Agent(llm, agent._demo_tools()), tasks, workers=2, out=out, on_result=on_result)
    finally:
        logging.getLogger("agent").removeHandler(handler)
    written = {record["task"] for record in lines(out)}
    assert written == set(llm.asked)      # every task that started was written, whole
    assert 2 <= len(written) <= 3         # the first, the one running beside it, and at most the next


def start_batch(tmp_path, server, n=4, workers=2):
    """python agent.py --batch of n tasks against server, as a process; its Popen (stderr piped)."""
    tasks = write_tasks(tmp_path / "tasks.jsonl", [{"id": i, "task": f"task {i}"} for i in range(n)])
    return subprocess.Popen(
        [sys.executable, os.path.join(ROOT, "agent.py"), "--batch", tasks, "--out", str(tmp_path / "out.jsonl"),
         "--workers", str(workers), "--base-url", server.base_url, "--model", "m"],
        env=offline_env(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def blocked_answers(n_free=0):
    """A script that answers final at once for the first n_free requests, then waits for .go; and its state."""
    state = {"go": threading.Event(), "waiting": threading.Semaphore(0), "count": 0, "lock": threading.Lock()}

    def script(ex):
        with state["lock"]:
            state["count"] += 1
            free = state["count"] <= n_free
        if not free:
            state["waiting"].release()
            state["go"].wait(10)
        chat_answer(final("done"))(ex)
    return script, state


def busy(state, workers=2):
    """Wait until every worker is inside a model call that blocked_answers holds."""
    for _ in range(workers):
        assert state["waiting"].acquire(timeout=10)


def wait_for_line(process, text):
    for line in process.stderr:
        if text in line:
            return line
    raise AssertionError(f"the process ended without saying {text!r}")


def test_ctrl_c_once_lets_the_running_tasks_end_and_write_then_exits_130(tmp_path, serve):
    script, state = blocked_answers()
    process = start_batch(tmp_path, serve(script), n=5, workers=2)
    try:
        busy(state)
        process.send_signal(signal.SIGINT)
        wait_for_line(process, "interrupted")
        state["go"].set()
        assert process.wait(timeout=10) == 130
    finally:
        state["go"].set()
        process.kill()
    assert len(lines(tmp_path / "out.jsonl")) == 2 and state["count"] == 2


def test_ctrl_c_twice_exits_at_once_and_loses_only_the_runs_in_flight(tmp_path, serve):
    script, state = blocked_answers(n_free=1)
    process = start_batch(tmp_path, serve(script), n=5, workers=2)
    try:
        busy(state)
        process.send_signal(signal.SIGINT)
        wait_for_line(process, "interrupted")
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=10) == 130   # while both requests still wait
    finally:
        state["go"].set()
        process.kill()
    assert len(ids(tmp_path / "out.jsonl")) == 1   # the one run that had ended, whole


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(),
                    reason="SIGINT is handled in the main thread")
def test_a_ctrl_c_as_a_result_is_written_waits_for_its_line_and_its_on_result(tmp_path, monkeypatch):
    # the CLI's batch lost the one finished run this way about once in twenty (test above)
    write, passed = agent._write_json_line, []

    def interrupted_write(handle, record):
        os.kill(os.getpid(), signal.SIGINT)       # arrives in the middle of making the line
        write(handle, record)
    monkeypatch.setattr(agent, "_write_json_line", interrupted_write)
    llm = MockLLM([final("done")])
    with pytest.raises(KeyboardInterrupt):
        run_batch(Agent(llm, make_tools()), [{"id": 1, "task": "x"}], workers=1, out=str(tmp_path / "o"),
                  on_result=passed.append)
    assert ids(tmp_path / "o") == [1] and [r["id"] for r in passed] == [1]


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(),
                    reason="SIGINT is handled in the main thread")
def test_a_ctrl_c_as_the_writer_takes_a_result_from_the_workers_loses_no_result(tmp_path, monkeypatch):
    # test_ctrl_c_twice_exits_at_once_and_loses_only_the_runs_in_flight still failed about once in
    # twenty whole suites: a Ctrl-C inside Queue.get, after it had taken the result, dropped it
    class Interrupted(agent.queue.Queue):
        def _get(self):
            item = super()._get()
            if item[0] == "result":
                os.kill(os.getpid(), signal.SIGINT)   # arrives before get() returns the item
            return item
    monkeypatch.setattr(agent.queue, "Queue", Interrupted)
    llm = MockLLM([final("done")])
    with pytest.raises(KeyboardInterrupt):
        run_batch(Agent(llm, make_tools()), [{"id": 1, "task": "x"}], workers=2, out=str(tmp_path / "o"))
    assert ids(tmp_path / "o") == [1]


def test_resume_after_a_kill_mid_run_has_no_duplicate_and_no_lost_id(tmp_path, serve):
    script, state = blocked_answers(n_free=3)
    process = start_batch(tmp_path, serve(script), n=8, workers=2)
    try:
        busy(state)
        process.kill()                          # SIGKILL: no handler runs
        process.wait(timeout=10)
    finally:
        state["go"].set()
    assert len(set(ids(tmp_path / "out.jsonl"))) == len(ids(tmp_path / "out.jsonl")) <= 3
    again = start_batch(tmp_path, serve(chat_answer(final("done"))), n=8, workers=2)
    assert again.wait(timeout=30) == 0
    assert sorted(ids(tmp_path / "out.jsonl")) == list(range(8))


# -- one client, one Retry-After ----------------------------------------------------------

def test_one_retry_after_holds_back_every_worker_of_the_client(tmp_path, serve):
    held, sleeps, lock = threading.Event(), [], threading.Lock()
    sent_429, together = [], threading.Barrier(3)

    def script(ex):
        messages = ex.body["messages"]
        if len(messages) > 2:                   # after the tool's result: answer
            return chat_answer(final("ok"))(ex)
        with lock:
            first = not sent_429
            sent_429.append(first)
            number = len(sent_429)
        if number <= 3:                         # the three first calls are all in flight before the 429
            together.wait(5)
        if first:
            return error_answer(429, "slow down", {"Retry-After": "30"})(ex)
        assert held.wait(5)                     # the other first calls end once the hold is set
        chat_answer(call("echo", text="x"))(ex)

    def sleep(seconds):                         # no real waiting: record it, and say the hold is set
        sleeps.append(seconds)
        held.set()

    server = serve(script)
    llm = client(server, sleep=sleep)
    run_batch(Agent(llm, make_tools()), [{"id": i, "task": f"task {i}"} for i in range(3)], workers=3,
              out=str(tmp_path / "o"))
    assert len(server.requests) == 3 + 1 + 3    # three first calls, the one retried, three second calls
    assert sent_429.count(True) == 1
    # the worker told to wait, then each of the three second calls, which started inside the hold
    assert len([s for s in sleeps if 29 < s <= 30]) == 4
    assert [record["stop_reason"] for record in lines(tmp_path / "o")] == ["final"] * 3


# -- the command line ----------------------------------------------------------------------

def test_shards_cover_the_file_exactly_once(tmp_path):
    tasks = write_tasks(tmp_path / "t.jsonl", arithmetic(10))
    seen = []
    for k in (1, 2, 3):
        out = str(tmp_path / f"out{k}.jsonl")
        assert batch_cli("--batch", tasks, "--out", out, "--shard", f"{k}/3") == 0
        seen.append(set(ids(out)))
    assert seen[0] | seen[1] | seen[2] == {f"t{i}" for i in range(10)}
    assert sum(len(part) for part in seen) == 10
    assert seen[0] == {"t0", "t3", "t6", "t9"}   # lines 1, 4, 7, 10


def test_summary_table_and_json(tmp_path, capsys):
    tasks = write_tasks(tmp_path / "t.jsonl", [*arithmetic(3), {"id": "x", "task": "What is 1+1?", "expect": 3}])
    assert batch_cli("--batch", tasks, "--out", str(tmp_path / "o")) == 0
    table = capsys.readouterr().out
    assert "solved        3 of 4 (75.0%)" in table and "stop reasons  final 4" in table
    assert "steps         2.0 per task" in table and "p50" in table and "p95" in table
    assert batch_cli("--batch", tasks, "--out", str(tmp_path / "o"), "--json") == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["tasks"] == 4 and summary["earlier"] == 4 and summary["solved_percent"] == 75.0


def test_progress_is_one_line_per_task_off_a_terminal(tmp_path, capsys):
    tasks = write_tasks(tmp_path / "t.jsonl", arithmetic(2))
    assert agent.main(["--offline", "--batch", tasks, "--out", str(tmp_path / "o")]) == 0
    progress = [line for line in capsys.readouterr().err.splitlines() if line.startswith("[")]
    assert len(progress) == 2 and progress[-1].startswith("[2/2] ") and "final, solved, 2 step(s)" in progress[-1]


def test_an_endpoint_that_fails_exits_3_and_says_how_to_run_those_again(tmp_path, serve, capsys,
                                                                        no_model_configured):
    server = serve(error_answer(400, "bad request"))
    tasks = write_tasks(tmp_path / "t.jsonl", arithmetic(2))
    code = agent.main(["--quiet", "--batch", tasks, "--out", str(tmp_path / "o"), "--base-url", server.base_url,
                       "--model", "m"])
    assert code == 3
    assert "2 task(s) stopped with llm_error" in capsys.readouterr().err


# -- bad input, before anything runs ------------------------------------------------------

def test_bad_lines_are_reported_with_their_number_and_skipped(tmp_path, capsys):
    tasks = write_tasks(tmp_path / "t.jsonl", [
        arithmetic(1)[0], "not json", {"id": "b"}, {"id": "c", "task": "  "}, "", {"id": True, "task": "x"},
        {"id": None, "task": "x"}, {"id": [1], "task": "x"}, {"task": "no id"}, '{"id": NaN, "task": "x"}',
        {"id": "e", "task": "x", "expect": [1]}, {"id": 2.5, "task": "What is 1+1?"}])
    assert batch_cli("--batch", tasks, "--out", str(tmp_path / "o")) == 0
    err = capsys.readouterr().err
    for number in (2, 3, 4, 6, 7, 8, 9, 10, 11):
        assert f"t.jsonl line {number}: " in err and "skipped" in err
    assert "line 5" not in err and "line 12" not in err   # a blank line is no task; a number is an id
    assert ids(tmp_path / "o") == ["t0", 2.5] or sorted(map(str, ids(tmp_path / "o"))) == ["2.5", "t0"]


def test_duplicate_ids_are_all_named_and_nothing_runs(tmp_path, capsys):
    tasks = write_tasks(tmp_path / "t.jsonl", [*arithmetic(3), {"id": "t1", "task": "a"}, {"id": "t2", "task": "b"},
                                               {"id": 5, "task": "c"}, {"id": "5", "task": "d"}])
    assert batch_cli("--batch", tasks, "--out", str(tmp_path / "o")) == 2
    err = capsys.readouterr().err
    assert '"t1" (line 4)' in err and '"t2" (line 5)' in err and "nothing was run" in err
    assert '"5"' not in err                      # 5 and "5" are two ids
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("flags, message", [
    (["--batch", "{tmp}/missing.jsonl", "--out", "{tmp}/o"], "cannot read the task file"),
    (["--batch", "{tasks}", "--out", "{tmp}/no/such/dir/o"], "No such file or directory"),
    (["--batch", "{tasks}", "--out", "{tmp}"], "directory"),
    (["--batch", "{tasks}"], "--batch needs --out FILE"),
    (["--batch", "{tasks}", "--out", "{tmp}/o", "What is 1+1?"], "a task does not go with it"),
    (["--batch", "{tasks}", "--out", "{tmp}/o", "--trace", "{tmp}/t"], "--trace (use --traces DIR)"),
    (["--batch", "{tasks}", "--out", "{tmp}/o", "--shard", "4/3"], "invalid shard '4/3'"),
    (["--batch", "{tasks}", "--out", "{tmp}/o", "--workers", "0"], "invalid workers 0"),
    (["--batch", "{tasks}", "--out", "{tmp}/o", "--traces", "{tasks}"], "File exists"),
])
def test_unusable_files_and_flags_exit_2_before_anything_runs(tmp_path, capsys, flags, message):
    tasks = write_tasks(tmp_path / "t.jsonl", arithmetic(2))
    argv = [flag.format(tmp=tmp_path, tasks=tasks) for flag in flags]
    assert batch_cli(*argv) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "o").exists() or (tmp_path / "o").read_text() == ""


def test_the_live_line_shows_done_solved_running_failures_rate_and_time_left():
    import argparse

    progress = agent._BatchProgress(5, argparse.Namespace(workers=4, quiet=True))
    progress({"id": 1, "solved": True, "stop_reason": "final", "steps": 2, "seconds": 1.0})
    progress({"id": 2, "solved": False, "stop_reason": "max_steps", "steps": 10, "seconds": 9.0})
    line = progress.line()
    assert line.startswith("2/5 done, 1 solved, 3 running, max_steps 1, ")
    assert "/min, " in line and line.endswith(" s left")


def test_a_worker_that_cannot_start_leaves_the_results_file_closed_and_unlocked(tmp_path, monkeypatch):
    out, started = str(tmp_path / "out.jsonl"), []
    real_start = threading.Thread.start

    def start(thread):
        if thread.name.startswith("agent-batch-") and started:
            raise RuntimeError("can't start new thread")
        started.append(thread.name)
        real_start(thread)

    monkeypatch.setattr(threading.Thread, "start", start)
    agent_ = Agent(MockLLM([final("4")] * 5), make_tools())
    # the traceback is kept, as an interactive session keeps it: it holds run_batch's frame
    with pytest.raises(RuntimeError) as caught:
        run_batch(agent_, [{"id": 1, "task": "2+2"}], workers=2, out=out)
    monkeypatch.setattr(threading.Thread, "start", real_start)
    summary = run_batch(Agent(MockLLM([final("4")] * 5), make_tools()),
                        [{"id": 2, "task": "2+2"}], workers=1, out=out)
    assert summary["tasks"] >= 1 and caught.value is not None

"""Batch runs: throughput against a server with N parallel slots, and peak memory in the number of tasks.

    python bench/batch.py                  # slots 1, 2, 8 x workers 1, 2, 4, 8, 16; memory for 100 and 10,000 tasks
    python bench/batch.py --latency 0.1    # a slower server

The local server answers every chat request with a final answer after a fixed latency,
serving at most N requests at once (the rest wait, as llama.cpp's queue does). Each task is
one model call through OpenAICompatLLM, one shared client, and every result is written to
a results file. Throughput should grow with the workers until the slots are full, then
stay flat, with no errors. Memory: tracemalloc's peak over run_batch with a stub model,
tasks streamed from a task file, for 100 and 10,000 tasks.
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile
import threading
import time
import tracemalloc
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from _common import machine, table

import agent

REPLY = json.dumps({"type": "final", "thought": "done", "answer": "42"})


def slot_server(slots: int, latency: float) -> ThreadingHTTPServer:
    """A chat-completions server that takes latency seconds per request, slots requests at a time."""
    gate = threading.Semaphore(slots)
    body = json.dumps({"choices": [{"message": {"role": "assistant", "content": REPLY}, "finish_reason": "stop"}],
                       "usage": {"prompt_tokens": 100, "completion_tokens": 10}}).encode()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            with gate:
                time.sleep(latency)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    class Server(ThreadingHTTPServer):
        daemon_threads = True
        request_queue_size = 64

    server = Server(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def throughput(slots: int, workers: int, tasks: int, latency: float, folder: str) -> tuple:
    """Tasks per second and the number of runs that did not end with a final answer."""
    server = slot_server(slots, latency)
    try:
        llm = agent.OpenAICompatLLM("m", f"http://127.0.0.1:{server.server_address[1]}/v1")
        run_agent = agent.Agent(llm, agent.ToolRegistry())
        out = os.path.join(folder, f"out-{slots}-{workers}.jsonl")
        started = time.perf_counter()
        summary = agent.run_batch(run_agent, ({"id": i, "task": f"task {i}"} for i in range(tasks)),
                                  workers=workers, out=out)
        seconds = time.perf_counter() - started
    finally:
        server.shutdown()
        server.server_close()
    return tasks / seconds, summary["tasks"] - summary["stop_reasons"].get("final", 0)


class Stub:
    """A thread-safe model that answers at once (memory is what is measured)."""

    def chat(self, messages):
        return REPLY


def peak_memory(tasks: int, folder: str) -> int:
    """tracemalloc's peak in bytes over a batch of tasks streamed from a task file."""
    path = os.path.join(folder, f"tasks-{tasks}.jsonl")
    with open(path, "w") as handle:
        for i in range(tasks):
            handle.write(json.dumps({"id": f"task-{i:06d}", "task": f"What is {i} + 1?", "expect": i + 1}) + "\n")
    items = (item for _, item, _ in agent._task_file(path) if item is not None)
    run_agent = agent.Agent(Stub(), agent.ToolRegistry())
    tracemalloc.start()
    tracemalloc.reset_peak()
    agent.run_batch(run_agent, items, workers=4, out=os.path.join(folder, f"out-{tasks}.jsonl"))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.05, help="seconds per request (default 0.05)")
    parser.add_argument("--tasks", type=int, default=48, help="tasks per throughput row (default 48)")
    args = parser.parse_args()
    print(machine())
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for slots in (1, 2, 8):
            for workers in (1, 2, 4, 8, 16):
                rate, errors = throughput(slots, workers, args.tasks, args.latency, folder)
                ideal = min(slots, workers) / args.latency
                rows.append((slots, workers, f"{rate:.1f}", f"{ideal:.1f}", f"{rate / ideal:.0%}", errors))
        print(f"\nthroughput, {args.tasks} tasks a row, {args.latency * 1000:.0f} ms a request:")
        table(["slots", "workers", "tasks/s", "ideal", "of ideal", "errors"], rows)
        print("\npeak memory (tracemalloc) over run_batch, tasks streamed from a file:")
        memory = [(n, f"{peak_memory(n, folder) / 1024:.0f} KiB") for n in (100, 10_000)]
        table(["tasks", "peak"], memory)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

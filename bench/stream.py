"""Early stop: time to the action, characters read, and whether the server saw the connection close.

    python bench/stream.py [tokens_per_second] [chatter_seconds]

A local server streams a complete action, token by token, then keeps talking (an
invented observation, then more prose) for `chatter_seconds` (default 10) at
`tokens_per_second` (default 30, a small model on a CPU), as a real model does
when nothing stops it. The client reads it with early stop on and off.
"""
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from _common import machine, table

from agent import OpenAICompatLLM

ACTION = '{"type": "tool_call", "thought": "I need 17*23 first.", "name": "calculator", ' \
         '"arguments": {"expression": "17*23"}}'
CHATTER = "\n[OBSERVATION] 391\nThought: now I add 4, so the answer is 395. " \
          '{"type": "final", "thought": "done", "answer": "395"} '


def tokens(text, size=4):
    return [text[i:i + size] for i in range(0, len(text), size)]


class Server:
    """Streams ACTION then CHATTER (repeated) until chatter_seconds pass or the client hangs up."""

    def __init__(self, rate, chatter_seconds):
        self.saw_close = None        # seconds after the action's last token when a write failed, or None
        self.sent_chars = 0
        bench = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                self.rfile.read(int(self.headers["Content-Length"]))
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                bench.stream(self, rate, chatter_seconds)
                self.close_connection = True

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stream(self, handler, rate, chatter_seconds):
        self.saw_close, self.sent_chars = None, 0
        action_done = None
        chatter = tokens(CHATTER * 1000)
        for piece in tokens(ACTION) + chatter:
            if action_done is not None and time.monotonic() - action_done > chatter_seconds:
                break
            if not self.send(handler, {"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}):
                self.saw_close = time.monotonic() - action_done
                return
            self.sent_chars += len(piece)
            if action_done is None and self.sent_chars >= len(ACTION):
                action_done = time.monotonic()
            time.sleep(1 / rate)
        self.send(handler, {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        self.send(handler, "[DONE]")
        handler.wfile.write(b"0\r\n\r\n")

    @staticmethod
    def send(handler, data):
        payload = b"data: " + (data if isinstance(data, str) else json.dumps(data)).encode() + b"\n\n"
        try:
            handler.wfile.write(b"%x\r\n%s\r\n" % (len(payload), payload))
            handler.wfile.flush()
            return True
        except OSError:
            return False


def run(server, early_stop):
    llm = OpenAICompatLLM("bench", server.base_url, early_stop=early_stop, repetition_stop=False)
    started = time.perf_counter()
    text = llm.chat([{"role": "user", "content": "What is 17*23+4?"}])
    seconds = time.perf_counter() - started
    time.sleep(0.3)          # let the server try its next write
    closed = f"yes, {server.saw_close * 1000:.0f} ms after the action" if server.saw_close is not None \
        else "no (sent to the end)"
    return [("on" if early_stop else "off"), f"{seconds:.2f} s", f"{len(text):,}", closed,
            llm.last_finish_reason, text.startswith(ACTION)]


def main():
    rate = float(sys.argv[1]) if len(sys.argv) > 1 else 30.0
    chatter_seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 10.0
    print(f"Streaming a {len(ACTION)}-character action, then {chatter_seconds:g} s more at {rate:g} tokens/s "
          f"(4 characters a token), on {machine()}\n")
    server = Server(rate, chatter_seconds)
    rows = [run(server, True), run(server, False)]
    table(["early stop", "chat() returned after", "characters read", "server saw the close",
           "finish_reason", "reply opens with the action"], rows)


if __name__ == "__main__":
    main()

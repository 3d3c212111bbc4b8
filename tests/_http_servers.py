"""Local HTTP servers for the client tests: each request is answered by a script that writes raw bytes.

conftest.py's serve fixture starts a ScriptedServer; the scripts: chat_answer (a whole completion),
error_answer, json_answer (any body), stream_of (server-sent events, e.g. from llama_cpp_stream,
vllm_stream, ollama_stream) and drips (a raw answer that never ends); client() connects to one.

The chunk shapes follow what llama.cpp, vLLM and Ollama send on /v1/chat/completions
with "stream": true (their documentation and server code): a role chunk, content
deltas, a chunk with finish_reason, a usage chunk when stream_options.include_usage
is set (llama.cpp and vLLM send it with "choices": []), then "data: [DONE]".
"""
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from agent import OpenAICompatLLM

KEY = "sk-test-SECRET-0123456789"


def client(server, model="m", **options):
    """An OpenAICompatLLM for model at server, with KEY and no real waiting between retries."""
    options.setdefault("api_key", KEY)
    options.setdefault("sleep", lambda seconds: None)
    return OpenAICompatLLM(model, server.base_url, **options)


def chunk(delta=None, finish=None, usage=None, choices=True, **extra):
    """One chat.completion.chunk as a dict."""
    body = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m", **extra}
    body["choices"] = [{"index": 0, "delta": delta or {}, "finish_reason": finish}] if choices else []
    if usage is not None:
        body["usage"] = {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)}
    return body


def event(data):
    """One server-sent event: a dict becomes JSON, a string is sent as it is."""
    return f"data: {data if isinstance(data, str) else json.dumps(data)}\n\n".encode()


def llama_cpp_stream(pieces, finish="stop", usage=(10, 5)):
    """Events as llama.cpp's server streams them: role chunk, deltas, finish, usage-only chunk, [DONE]."""
    events = [event(chunk({"role": "assistant", "content": None}))]
    events += [event(chunk({"content": piece})) for piece in pieces]
    events.append(event(chunk({}, finish=finish)))
    if usage:
        events.append(event(chunk(usage=usage, choices=False)))
    return events + [event("[DONE]")]


def vllm_stream(pieces, reasoning=(), finish="stop", usage=(10, 5), reasoning_key="reasoning_content"):
    """Events as vLLM streams them: role chunk with "", reasoning deltas, content deltas, finish, usage, [DONE]."""
    events = [event(chunk({"role": "assistant", "content": ""}))]
    events += [event(chunk({reasoning_key: piece})) for piece in reasoning]
    events += [event(chunk({"content": piece})) for piece in pieces]
    events.append(event(chunk({"content": ""}, finish=finish)))
    if usage:
        events.append(event(chunk(usage=usage, choices=False)))
    return events + [event("[DONE]")]


def ollama_stream(pieces, reasoning=(), finish="stop"):
    """Events as Ollama's /v1 streams them (no usage unless asked; reasoning under "reasoning")."""
    events = [event(chunk({"role": "assistant", "reasoning": piece}, system_fingerprint="fp_ollama"))
              for piece in reasoning]
    events += [event(chunk({"role": "assistant", "content": piece}, system_fingerprint="fp_ollama"))
               for piece in pieces]
    events.append(event(chunk({"role": "assistant", "content": ""}, finish=finish)))
    return events + [event("[DONE]")]


def completion(content="hi", finish="stop", usage=(5, 2), **message_extra):
    """A whole (non-streamed) chat.completion body as bytes."""
    body = {"id": "c1", "object": "chat.completion", "model": "m",
            "choices": [{"index": 0, "finish_reason": finish,
                         "message": {"role": "assistant", "content": content, **message_extra}}]}
    if usage:
        body["usage"] = {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)}
    return json.dumps(body).encode()


class Exchange:
    """What a script may do with one request: send a head, write bytes (chunked or raw), pause, hang up."""

    def __init__(self, handler, body):
        self.handler = handler
        self.body = body
        self.chunked = False
        self.closed_by_client = False

    def head(self, status=200, content_type="text/event-stream", chunked=True, headers=None):
        self.chunked = chunked
        self.handler.send_response(status)
        self.handler.send_header("Content-Type", content_type)
        if chunked:
            self.handler.send_header("Transfer-Encoding", "chunked")
        else:
            self.handler.send_header("Connection", "close")
        for name, value in (headers or {}).items():
            self.handler.send_header(name, value)
        self.handler.end_headers()
        self.handler.wfile.flush()

    def write(self, data):
        """Send data now; False once the client has closed the connection."""
        try:
            if self.chunked:
                data = b"%x\r\n%s\r\n" % (len(data), data)
            self.handler.wfile.write(data)
            self.handler.wfile.flush()
            return True
        except OSError:
            self.closed_by_client = True
            return False

    def end(self):
        if self.chunked:
            self.write_raw(b"0\r\n\r\n")

    def write_raw(self, data):
        try:
            self.handler.wfile.write(data)
            self.handler.wfile.flush()
        except OSError:
            self.closed_by_client = True

    def hang_up(self):
        """Close the connection mid-answer, without the chunked terminator."""
        self.handler.wfile.flush()
        self.handler.connection.shutdown(socket.SHUT_RDWR)
        self.handler.close_connection = True

    def pause(self, seconds):
        time.sleep(seconds)


def stream_of(events, status=200, pause=0.0, chunked=True):
    """A script that sends events, each written and flushed on its own."""
    def script(ex):
        ex.head(status, chunked=chunked)
        for data in events:
            if pause:
                ex.pause(pause)
            if not ex.write(data):
                return
        ex.end()
    return script


def json_answer(data, status=200, headers=None, content_type="application/json"):
    """A script that sends one whole body (JSON unless content_type says otherwise) with its Content-Length."""
    def script(ex):
        ex.handler.send_response(status)
        ex.handler.send_header("Content-Type", content_type)
        ex.handler.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            ex.handler.send_header(name, value)
        ex.handler.end_headers()
        ex.handler.wfile.write(data)
    return script


def chat_answer(content="hi", **options):
    """A script that answers with a whole chat.completion holding content (options as for completion)."""
    return json_answer(completion(content, **options))


def error_answer(status, message, headers=None):
    """A script that sends an OpenAI-style error body with the status."""
    return json_answer(json.dumps({"error": {"message": message, "type": "invalid_request_error"}}).encode(),
                       status, headers)


def drips(head, unit, every=0.01, cap=5.0):
    """A script that writes a raw head, then one unit at a time, until the client hangs up or cap seconds pass."""
    def script(ex):
        ex.write_raw(head)
        end = time.monotonic() + cap
        while time.monotonic() < end and not ex.closed_by_client:
            ex.write_raw(unit)
            ex.pause(every)
        ex.handler.close_connection = True
    return script


class ScriptedServer:
    """Runs each request's script in turn (the last one repeats).

    Records the requests (method, path, headers, and body: None for a GET) and the hang-ups.
    """

    def __init__(self, scripts, host="127.0.0.1"):
        self.scripts = list(scripts)
        self.requests = []
        self.exchanges = []
        self.client_closed = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                self.answer(json.loads(self.rfile.read(length)))

            def do_GET(self):
                self.answer(None)

            do_CONNECT = do_GET   # a script may play an HTTPS proxy
            do_DELETE = do_GET    # an MCP client ends its session so

            def answer(self, body):
                server.requests.append({"method": self.command, "path": self.path, "headers": dict(self.headers),
                                        "body": body})
                script = server.scripts.pop(0) if len(server.scripts) > 1 else server.scripts[0]
                exchange = Exchange(self, body)
                server.exchanges.append(exchange)
                script(exchange)
                if exchange.closed_by_client:
                    server.client_closed.set()
                self.close_connection = True

            def log_message(self, *args):
                pass

        class Quiet(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request, client_address):
                pass  # a client that hung up early is part of the script

        self.httpd = Quiet((host, 0), Handler)
        self.port = self.httpd.server_address[1]
        self.base_url = f"http://{host}:{self.port}/v1"
        # shutdown() waits up to one poll interval: 2 ms, not 10, over a hundred servers
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.002}, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()

"""OpenAICompatLLM against a real HTTP server on 127.0.0.1 that behaves like the real ones."""
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from _http_servers import completion as body_of

from agent import Agent, LLMError, OpenAICompatLLM, ToolRegistry

KEY = "sk-test-SECRET-0123456789"


def completion(content="hi", finish="stop", usage=(5, 2), **message_extra):
    """The scripted answer (status, headers, text) of a whole chat.completion body."""
    return 200, {"Content-Type": "application/json"}, body_of(content, finish, usage, **message_extra).decode()


def error(status, message, headers=None):
    body = json.dumps({"error": {"message": message, "type": "invalid_request_error", "code": None}})
    return status, {"Content-Type": "application/json", **(headers or {})}, body


class QuietServer(ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        pass  # a client that hung up early is part of the script, not a failure


class FakeServer:
    """Answers each request with the next scripted response; records every request."""

    def __init__(self, responses):
        self.responses = list(responses)
        self.requests = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length))
                server.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                response = server.responses.pop(0) if server.responses else completion("(script ended)")
                if callable(response):
                    response = response(body)
                if response == "drop":
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if isinstance(response, tuple) and response[0] == "slow":
                    time.sleep(response[1])
                    response = completion("late")
                status, headers, text = response
                data = text.encode()
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = QuietServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        # shutdown() waits up to one poll interval: 2 ms, not 10, over a hundred servers
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.002}, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def serve():
    servers = []

    def start(*responses):
        server = FakeServer(responses)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()


def client(server, sleeps=None, **options):
    options.setdefault("api_key", KEY)
    return OpenAICompatLLM("test-model", server.base_url, sleep=(sleeps.append if sleeps is not None else None)
                           or (lambda s: None), **options)


MESSAGES = [{"role": "user", "content": "hello"}]


def test_success_sends_the_openai_request_and_sums_usage(serve):
    server = serve(completion("one", usage=(10, 3)), completion("two", usage=(20, 4)))
    llm = client(server, max_tokens=64, extra_body={"seed": 7}, headers={"X-Team": "agents"})
    assert llm.chat(MESSAGES) == "one"
    assert llm.chat(MESSAGES) == "two"
    assert llm.usage == {"prompt_tokens": 30, "completion_tokens": 7}
    assert llm.last_finish_reason == "stop"
    request = server.requests[0]
    assert request["path"] == "/v1/chat/completions"
    assert request["body"] == {"model": "test-model", "messages": MESSAGES, "temperature": 0.0, "stream": True,
                               "stream_options": {"include_usage": True},
                               "max_tokens": 64, "stop": ["[OBSERVATION]"], "seed": 7}
    assert request["headers"]["Authorization"] == f"Bearer {KEY}"
    assert request["headers"]["Content-Type"] == "application/json"
    assert request["headers"]["User-Agent"].startswith("agent.py/")
    assert request["headers"]["X-Team"] == "agents"


def test_no_key_means_no_authorization_header(serve):
    server = serve(completion())
    OpenAICompatLLM("m", server.base_url).chat(MESSAGES)
    assert "Authorization" not in server.requests[0]["headers"]


@pytest.mark.parametrize("suffix", ["", "/", "/chat/completions"])
def test_base_url_is_forgiving(serve, suffix):
    server = serve(completion())
    OpenAICompatLLM("m", server.base_url + suffix).chat(MESSAGES)
    assert server.requests[0]["path"] == "/v1/chat/completions"


def test_429_with_retry_after_then_success(serve):
    sleeps = []
    server = serve(error(429, "Rate limit reached", {"Retry-After": "2"}), completion("ok"))
    assert client(server, sleeps).chat(MESSAGES) == "ok"
    assert sleeps == [2.0] and len(server.requests) == 2


def test_retry_after_as_http_date_is_capped(serve):
    sleeps = []
    server = serve(error(503, "busy", {"Retry-After": "Wed, 21 Oct 2099 07:28:00 GMT"}), completion("ok"))
    assert client(server, sleeps).chat(MESSAGES) == "ok"
    assert sleeps == [60.0]


def test_503_twice_then_success_with_backoff(serve):
    sleeps = []
    server = serve(error(503, "overloaded"), error(503, "overloaded"), completion("ok"))
    assert client(server, sleeps).chat(MESSAGES) == "ok"
    assert len(sleeps) == 2
    assert 0.25 <= sleeps[0] <= 0.5 and 0.5 <= sleeps[1] <= 1.0  # exponential, with jitter


def test_retries_run_out_with_the_status(serve):
    server = serve(*[error(500, "internal")] * 3)
    with pytest.raises(LLMError) as info:
        client(server, max_retries=2).chat(MESSAGES)
    assert info.value.status == 500
    assert "HTTP 500" in str(info.value) and "internal" in str(info.value) and "3 attempts" in str(info.value)


def test_dropped_connection_is_retried(serve):
    server = serve("drop", completion("ok"))
    assert client(server).chat(MESSAGES) == "ok"


def test_a_slow_first_byte_is_waited_for_past_the_timeout(serve):
    server = serve(("slow", 0.15))
    assert client(server, timeout=0.05).chat(MESSAGES) == "late"  # prompt processing (3x the timeout) is not a stall
    assert len(server.requests) == 1


def test_max_request_seconds_bounds_the_first_byte_and_is_not_retried(serve):
    server = serve(("slow", 1.0))
    with pytest.raises(LLMError, match="within max_request_seconds=0.15") as info:
        client(server, timeout=0.05, max_request_seconds=0.15).chat(MESSAGES)
    assert info.value.status is None and len(server.requests) == 1


def test_connection_refused_fails_after_retries():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    sleeps = []
    llm = OpenAICompatLLM("m", f"http://127.0.0.1:{port}/v1", sleep=sleeps.append, max_retries=2)
    with pytest.raises(LLMError, match="could not reach"):
        llm.chat(MESSAGES)
    assert len(sleeps) == 2


def test_401_fails_fast_with_server_message_and_hint(serve):
    server = serve(error(401, f"Incorrect API key provided: {KEY}. You can find your API key at ..."))
    with pytest.raises(LLMError) as info:
        client(server).chat(MESSAGES)
    assert info.value.status == 401 and len(server.requests) == 1
    assert "Incorrect API key provided" in str(info.value) and "check OPENAI_API_KEY" in str(info.value)
    assert KEY not in str(info.value)


def test_404_hints_at_the_base_url(serve):
    server = serve(error(404, "The model `nope` does not exist"))
    with pytest.raises(LLMError) as info:
        client(server).chat(MESSAGES)
    assert info.value.status == 404
    assert "does not exist" in str(info.value) and "ends in /v1" in str(info.value)


@pytest.mark.parametrize("status", [400, 403, 422])
def test_other_client_errors_fail_fast(serve, status):
    server = serve(error(status, "bad thing"))
    with pytest.raises(LLMError) as info:
        client(server).chat(MESSAGES)
    assert info.value.status == status and len(server.requests) == 1


def test_html_body_with_200_is_an_error_quoting_the_body(serve):
    server = serve((200, {"Content-Type": "text/html"}, "<html><body>Welcome to nginx!</body></html>"))
    with pytest.raises(LLMError, match="did not answer with JSON.*Welcome to nginx"):
        client(server).chat(MESSAGES)


def test_non_json_body_is_an_error(serve):
    server = serve((200, {}, "upstream connect error"))
    with pytest.raises(LLMError, match="upstream connect error"):
        client(server).chat(MESSAGES)


def test_missing_choices_is_an_error(serve):
    server = serve((200, {}, json.dumps({"object": "list", "data": []})))
    with pytest.raises(LLMError, match="without choices"):
        client(server).chat(MESSAGES)


def test_error_object_inside_a_200(serve):
    server = serve((200, {}, json.dumps({"error": {"message": "model is loading"}})))
    with pytest.raises(LLMError, match="model is loading"):
        client(server).chat(MESSAGES)


def test_null_content_reads_as_empty_and_reasoning_is_ignored(serve):
    server = serve(completion(None, reasoning_content="secret thoughts"), completion("x", reasoning_content="r"))
    llm = client(server)
    assert llm.chat(MESSAGES) == ""
    assert llm.chat(MESSAGES) == "x"


def test_finish_reason_length_is_kept(serve):
    server = serve(completion('{"type": "final", "ans', finish="length"))
    llm = client(server)
    llm.chat(MESSAGES)
    assert llm.last_finish_reason == "length"


def test_rejected_stop_is_dropped_and_cut_client_side(serve):
    server = serve(error(400, "Unsupported parameter: 'stop' is not supported with this model."),
                   completion('{"type": "final", "answer": "x"}\n[OBSERVATION] invented'),
                   completion("y [OBSERVATION] z"))
    llm = client(server)
    assert llm.chat(MESSAGES) == '{"type": "final", "answer": "x"}\n'
    assert llm.chat(MESSAGES) == "y "
    assert "stop" in server.requests[0]["body"]
    assert "stop" not in server.requests[1]["body"] and "stop" not in server.requests[2]["body"]


def test_response_schema_is_sent_as_json_schema_response_format(serve):
    registry = ToolRegistry()
    registry.register(lambda x: x, name="echo", parameters={"type": "object", "properties": {"x": {}}})
    server = serve(completion())
    client(server, response_schema=registry.action_schema()).chat(MESSAGES)
    response_format = server.requests[0]["body"]["response_format"]
    assert response_format == {"type": "json_schema",
                               "json_schema": {"name": "action", "schema": registry.action_schema()}}


def test_key_never_in_repr_or_errors(serve):
    server = serve(error(401, f"bad key {KEY}"), error(500, f"echo {KEY}"), (200, {}, f"<html>{KEY}</html>"))
    llm = client(server, max_retries=0)
    assert KEY not in repr(llm) and KEY not in str(llm)
    for _ in range(3):
        with pytest.raises(LLMError) as info:
            llm.chat(MESSAGES)
        assert KEY not in str(info.value) and KEY not in repr(info.value)


def test_from_env_reads_the_sdk_variables(monkeypatch):
    monkeypatch.setenv("OPENAI_MODEL", "qwen2.5:7b")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:11434/v1")
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    llm = OpenAICompatLLM.from_env(temperature=0.5)
    assert (llm.model, llm.url, llm.temperature) == ("qwen2.5:7b", "http://localhost:11434/v1/chat/completions", 0.5)
    assert OpenAICompatLLM.from_env(model="other").model == "other"


def test_from_env_without_a_model_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("OPENAI_MODEL", raising=False)
    with pytest.raises(ValueError, match="no model named: set OPENAI_MODEL"):
        OpenAICompatLLM.from_env()


@pytest.mark.parametrize("option, value", [("temperature", float("nan")), ("temperature", float("inf")),
                                           ("temperature", -0.5), ("temperature", "0.7"), ("max_tokens", 0),
                                           ("max_tokens", -5), ("max_tokens", 2.5), ("max_tokens", True)])
def test_a_temperature_or_max_tokens_out_of_range_is_refused_at_construction(option, value):
    with pytest.raises(ValueError, match=f"invalid {option} "):
        OpenAICompatLLM("m", "http://127.0.0.1:9/v1", **{option: value})


def test_invalid_base_url_is_a_clear_error():
    with pytest.raises(ValueError, match="must start with http"):
        OpenAICompatLLM("m", "localhost:11434/v1")


def test_whole_agent_runs_over_http(serve):
    calls = iter([json.dumps({"type": "tool_call", "thought": "add", "name": "add", "arguments": {"a": 2, "b": 40}}),
                  json.dumps({"type": "final", "thought": "done", "answer": "42"})])

    def scripted(body):
        return completion(next(calls), usage=(len(json.dumps(body["messages"])) // 4, 12))

    server = serve(scripted, scripted)
    registry = ToolRegistry()

    @registry.register
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    llm = client(server, response_schema=registry.action_schema())
    result = Agent(llm, registry).run("What is 2 + 40?")
    assert result.answer == "42" and result.stop_reason == "final"
    second = server.requests[1]["body"]["messages"]
    assert second[-1] == {"role": "user", "content": "[OBSERVATION] 42\n(step 1 of 10)"}
    assert [m["role"] for m in second] == ["system", "user", "assistant", "user"]
    assert result.usage["estimated"] is False and result.usage["completion_tokens"] == 24


def test_key_is_scrubbed_before_long_bodies_are_cut(serve):
    padding = "x" * 190
    server = serve((200, {}, f"<html>{padding}{KEY}</html>"), error(400, "y" * 290 + KEY))
    llm = client(server, max_retries=0)
    for _ in range(2):
        with pytest.raises(LLMError) as info:
            llm.chat(MESSAGES)
        assert "SECRET" not in str(info.value)  # not even part of the key


def test_rejected_temperature_is_dropped_and_remembered(serve):
    server = serve(error(400, "Unsupported value: 'temperature' does not support 0.0 with this model. "
                              "Only the default (1) value is supported."), completion("a"), completion("b"))
    llm = client(server)
    assert llm.chat(MESSAGES) == "a" and llm.chat(MESSAGES) == "b"
    assert "temperature" in server.requests[0]["body"]
    assert "temperature" not in server.requests[1]["body"] and "temperature" not in server.requests[2]["body"]
    assert server.requests[1]["body"]["stop"] == ["[OBSERVATION]"]  # only the rejected one is dropped


def test_max_tokens_is_renamed_when_the_server_asks(serve):
    server = serve(error(400, "Unsupported parameter: 'max_tokens' is not supported with this model. "
                              "Use 'max_completion_tokens' instead."), completion("a"))
    assert client(server, max_tokens=100).chat(MESSAGES) == "a"
    body = server.requests[1]["body"]
    assert body["max_completion_tokens"] == 100 and "max_tokens" not in body


def test_a_parameter_is_adapted_once_then_the_error_stands(serve):
    rejection = error(400, "Unsupported parameter: 'stop' is not supported with this model.")
    server = serve(rejection, rejection)
    with pytest.raises(LLMError, match="'stop' is not supported") as info:
        client(server).chat(MESSAGES)
    assert info.value.status == 400 and len(server.requests) == 2


def test_unrelated_400_is_not_retried(serve):
    server = serve(error(400, "messages: roles must alternate"))
    with pytest.raises(LLMError, match="roles must alternate"):
        client(server).chat(MESSAGES)
    assert len(server.requests) == 1


def test_certificate_failure_fails_fast_through_an_injected_opener():
    import ssl
    import urllib.error

    class Opener:
        calls = 0

        def open(self, request, timeout=None):
            Opener.calls += 1
            raise urllib.error.URLError(ssl.SSLCertVerificationError("certificate verify failed"))

    llm = OpenAICompatLLM("m", "https://example.invalid/v1", opener=Opener(), sleep=lambda s: None)
    with pytest.raises(LLMError, match="TLS certificate .* could not be verified"):
        llm.chat(MESSAGES)
    assert Opener.calls == 1

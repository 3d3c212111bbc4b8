"""OpenAICompatLLM against a real HTTP server on 127.0.0.1 that behaves like the real ones."""
import json
import socket

import pytest
from _http_servers import KEY, chat_answer, client, error_answer, json_answer
from conftest import call, final, make_tools

from agent import Agent, LLMError, OpenAICompatLLM


def drop(ex):
    """A script that hangs up without answering."""
    ex.hang_up()


def late(seconds):
    """A script that answers "late" after seconds of silence."""
    def script(ex):
        ex.pause(seconds)
        chat_answer("late")(ex)
    return script


MESSAGES = [{"role": "user", "content": "hello"}]


def test_success_sends_the_openai_request_and_sums_usage(serve):
    server = serve(chat_answer("one", usage=(10, 3)), chat_answer("two", usage=(20, 4)))
    llm = client(server, max_tokens=64, extra_body={"seed": 7}, headers={"X-Team": "agents"})
    assert llm.chat(MESSAGES) == "one"
    assert llm.chat(MESSAGES) == "two"
    assert llm.usage == {"prompt_tokens": 30, "completion_tokens": 7}
    assert llm.last_finish_reason == "stop"
    request = server.requests[0]
    assert request["path"] == "/v1/chat/completions"
    assert request["body"] == {"model": "m", "messages": MESSAGES, "temperature": 0.0, "stream": True,
                               "stream_options": {"include_usage": True},
                               "max_tokens": 64, "seed": 7}   # no stop by default: it would cut reasoning
    assert request["headers"]["Authorization"] == f"Bearer {KEY}"
    assert request["headers"]["Content-Type"] == "application/json"
    assert request["headers"]["User-Agent"].startswith("agent.py/")
    assert request["headers"]["X-Team"] == "agents"


def test_no_key_means_no_authorization_header(serve):
    server = serve(chat_answer())
    OpenAICompatLLM("m", server.base_url).chat(MESSAGES)
    assert "Authorization" not in server.requests[0]["headers"]


@pytest.mark.parametrize("suffix", ["", "/", "/chat/completions"])
def test_base_url_is_forgiving(serve, suffix):
    server = serve(chat_answer())
    OpenAICompatLLM("m", server.base_url + suffix).chat(MESSAGES)
    assert server.requests[0]["path"] == "/v1/chat/completions"


def test_429_with_retry_after_then_success(serve):
    sleeps = []
    server = serve(error_answer(429, "Rate limit reached", {"Retry-After": "2"}), chat_answer("ok"))
    assert client(server, sleep=sleeps.append).chat(MESSAGES) == "ok"
    assert sleeps == [2.0] and len(server.requests) == 2


def test_retry_after_as_http_date_is_capped(serve):
    sleeps = []
    server = serve(error_answer(503, "busy", {"Retry-After": "Wed, 21 Oct 2099 07:28:00 GMT"}), chat_answer("ok"))
    assert client(server, sleep=sleeps.append).chat(MESSAGES) == "ok"
    assert sleeps == [60.0]


def test_503_twice_then_success_with_backoff(serve):
    sleeps = []
    server = serve(error_answer(503, "overloaded"), error_answer(503, "overloaded"), chat_answer("ok"))
    assert client(server, sleep=sleeps.append).chat(MESSAGES) == "ok"
    assert len(sleeps) == 2
    assert 0.25 <= sleeps[0] <= 0.5 and 0.5 <= sleeps[1] <= 1.0  # exponential, with jitter


def test_retries_run_out_with_the_status(serve):
    server = serve(error_answer(500, "internal"))  # the last script repeats
    with pytest.raises(LLMError) as info:
        client(server, max_retries=2).chat(MESSAGES)
    assert info.value.status == 500
    assert "HTTP 500" in str(info.value) and "internal" in str(info.value) and "3 attempts" in str(info.value)


def test_dropped_connection_is_retried(serve):
    server = serve(drop, chat_answer("ok"))
    assert client(server).chat(MESSAGES) == "ok"


def test_a_slow_first_byte_is_waited_for_past_the_timeout(serve):
    server = serve(late(0.15))
    assert client(server, timeout=0.05).chat(MESSAGES) == "late"  # prompt processing (3x the timeout) is not a stall
    assert len(server.requests) == 1


def test_max_request_seconds_bounds_the_first_byte_and_is_not_retried(serve):
    server = serve(late(1.0))
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
    server = serve(error_answer(401, f"Incorrect API key provided: {KEY}. You can find your API key at ..."))
    with pytest.raises(LLMError) as info:
        client(server).chat(MESSAGES)
    assert info.value.status == 401 and len(server.requests) == 1
    assert "Incorrect API key provided" in str(info.value) and "check OPENAI_API_KEY" in str(info.value)
    assert KEY not in str(info.value)


@pytest.mark.parametrize("model, message, named", [
    ("m", "The model `nope` does not exist", False),            # "m" is inside words, never a word itself
    ("llama3", "model 'llama3.1:8b' not found", False),         # a longer name that starts with it
    ("nope", "The model `nope` does not exist", True),
    ("llama3.1:8b", "model 'llama3.1:8b' not found", True),
    ("llama3", "Unknown model: llama3.", True),                  # a full stop ends the sentence, not the name
    ("gpt-4o-mini", "unknown model: gpt-4o-mini:", True),
    ("Qwen/Qwen2.5-7B", "No model named Qwen/Qwen2.5-7B.", True),
])
def test_404_hints_at_the_model_only_when_the_message_names_it(serve, model, message, named):
    server = serve(error_answer(404, message))
    with pytest.raises(LLMError) as info:
        client(server, model=model).chat(MESSAGES)
    assert info.value.status == 404 and message in str(info.value)
    assert (f"unknown model {model!r}" in str(info.value)) == named
    assert ("ends in /v1" in str(info.value)) != named


@pytest.mark.parametrize("status", [400, 403, 422])
def test_other_client_errors_fail_fast(serve, status):
    server = serve(error_answer(status, "bad thing"))
    with pytest.raises(LLMError) as info:
        client(server).chat(MESSAGES)
    assert info.value.status == status and len(server.requests) == 1


@pytest.mark.parametrize("body, content_type, words", [
    (b"<html><body>Welcome to nginx!</body></html>", "text/html", "did not answer with JSON.*Welcome to nginx"),
    (b"upstream connect error", "application/json", "upstream connect error"),
    (b'{"object": "list", "data": []}', "application/json", "without choices"),
    (b'{"error": {"message": "model is loading"}}', "application/json", "model is loading"),
], ids=["html", "not json", "no choices", "error object"])
def test_a_200_that_is_not_a_completion_is_an_error_quoting_the_body(serve, body, content_type, words):
    server = serve(json_answer(body, content_type=content_type))
    with pytest.raises(LLMError, match=words):
        client(server).chat(MESSAGES)


def test_null_content_reads_as_empty_and_reasoning_is_ignored(serve):
    server = serve(chat_answer(None, reasoning_content="secret thoughts"), chat_answer("x", reasoning_content="r"))
    llm = client(server)
    assert llm.chat(MESSAGES) == ""
    assert llm.chat(MESSAGES) == "x"


def test_finish_reason_length_is_kept(serve):
    server = serve(chat_answer('{"type": "final", "ans', finish="length"))
    llm = client(server)
    llm.chat(MESSAGES)
    assert llm.last_finish_reason == "length"


def test_rejected_stop_is_dropped_and_cut_client_side(serve):
    server = serve(error_answer(400, "Unsupported parameter: 'stop' is not supported with this model."),
                   chat_answer('{"type": "final", "answer": "x"}\n[OBSERVATION] invented'),
                   chat_answer("y [OBSERVATION] z"))
    llm = client(server, stop=["[OBSERVATION]"])
    assert llm.chat(MESSAGES) == '{"type": "final", "answer": "x"}\n'
    assert llm.chat(MESSAGES) == "y "
    assert "stop" in server.requests[0]["body"]
    assert "stop" not in server.requests[1]["body"] and "stop" not in server.requests[2]["body"]


def test_response_schema_is_sent_as_json_schema_response_format(serve):
    registry = make_tools()
    server = serve(chat_answer())
    client(server, response_schema=registry.action_schema()).chat(MESSAGES)
    response_format = server.requests[0]["body"]["response_format"]
    assert response_format == {"type": "json_schema",
                               "json_schema": {"name": "action", "schema": registry.action_schema()}}


def test_key_never_in_repr_or_errors(serve):
    server = serve(error_answer(401, f"bad key {KEY}"), error_answer(500, f"echo {KEY}"),
                   json_answer(f"<html>{KEY}</html>".encode()))
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
    replies = iter([call("add", a=2, b=40), final("42")])

    def scripted(ex):
        chat_answer(next(replies), usage=(len(json.dumps(ex.body["messages"])) // 4, 12))(ex)

    server = serve(scripted)
    registry = make_tools()
    llm = client(server, response_schema=registry.action_schema())
    result = Agent(llm, registry).run("What is 2 + 40?")
    assert result.answer == "42" and result.stop_reason == "final"
    second = server.requests[1]["body"]["messages"]
    assert second[-1] == {"role": "user", "content": '[OBSERVATION] add({"a":2,"b":40}) returned: 42\n(step 1 of 10)'}
    assert [m["role"] for m in second] == ["system", "user", "assistant", "user"]
    assert result.usage["estimated"] is False and result.usage["completion_tokens"] == 24


def test_key_is_scrubbed_before_long_bodies_are_cut(serve):
    padding = "x" * 190
    server = serve(json_answer(f"<html>{padding}{KEY}</html>".encode()), error_answer(400, "y" * 290 + KEY))
    llm = client(server, max_retries=0)
    for _ in range(2):
        with pytest.raises(LLMError) as info:
            llm.chat(MESSAGES)
        assert "SECRET" not in str(info.value)  # not even part of the key


def test_rejected_temperature_is_dropped_and_remembered(serve):
    server = serve(error_answer(400, "Unsupported value: 'temperature' does not support 0.0 with this model. "
                              "Only the default (1) value is supported."), chat_answer("a"), chat_answer("b"))
    llm = client(server, stop=["[OBSERVATION]"])
    assert llm.chat(MESSAGES) == "a" and llm.chat(MESSAGES) == "b"
    assert "temperature" in server.requests[0]["body"]
    assert "temperature" not in server.requests[1]["body"] and "temperature" not in server.requests[2]["body"]
    assert server.requests[1]["body"]["stop"] == ["[OBSERVATION]"]  # only the rejected one is dropped


def test_max_tokens_is_renamed_when_the_server_asks(serve):
    server = serve(error_answer(400, "Unsupported parameter: 'max_tokens' is not supported with this model. "
                              "Use 'max_completion_tokens' instead."), chat_answer("a"))
    assert client(server, max_tokens=100).chat(MESSAGES) == "a"
    body = server.requests[1]["body"]
    assert body["max_completion_tokens"] == 100 and "max_tokens" not in body


def test_a_parameter_is_adapted_once_then_the_error_stands(serve):
    rejection = error_answer(400, "Unsupported parameter: 'stop' is not supported with this model.")
    server = serve(rejection, rejection)
    with pytest.raises(LLMError, match="'stop' is not supported") as info:
        client(server, stop=["[OBSERVATION]"]).chat(MESSAGES)
    assert info.value.status == 400 and len(server.requests) == 2


def test_unrelated_400_is_not_retried(serve):
    server = serve(error_answer(400, "messages: roles must alternate"))
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


@pytest.mark.parametrize("status", [200, 400])
def test_a_body_without_a_message_is_quoted_alike_on_one_line(serve, status):
    page = b"<html>\n<body>Bad gateway</body>\n</html>"
    server = serve(json_answer(page, status, content_type="text/html"))
    with pytest.raises(LLMError) as info:
        client(server, max_retries=0).chat(MESSAGES)
    assert "'<html>\\n<body>Bad gateway</body>\\n</html>'" in str(info.value) and "\n" not in str(info.value)

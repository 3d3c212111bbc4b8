"""The HTTP client under hostile servers and careless configuration (issue #11, client items 1, 2, 7, 8, 15, 17)."""
import base64
import io
import json
import re
import logging
import random

import pytest
from _http_servers import KEY, chat_answer, client, completion, error_answer, json_answer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import agent
from agent import LLMError, OpenAICompatLLM, _repeating_tail, _StreamState

_retry_after = OpenAICompatLLM._retry_after

MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hello"}]


class Response(io.BytesIO):
    """An in-memory 200 answer for an injected opener."""

    def __init__(self, data, content_type="application/json"):
        super().__init__(data)
        self.status = 200
        self.headers = {"Content-Type": content_type}


class Opener:
    """Answers every request with the next scripted body, or raises it; keeps each request."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.requests = []

    def open(self, request, timeout=None):
        self.requests.append(request)
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, BaseException):
            raise answer
        return Response(answer) if isinstance(answer, bytes) else answer


# -- 1. The key never leaves in an error -----------------------------------------------

@pytest.mark.parametrize("raw_key", [KEY + "\n", KEY + "\r\n", f"  {KEY}\t", "\ufeff" + KEY])
def test_surrounding_whitespace_is_stripped_from_the_key(serve, raw_key):
    server = serve(chat_answer("ok"))
    assert client(server, api_key=raw_key.lstrip("\ufeff") if raw_key[0] == "\ufeff" else raw_key).chat(
        MESSAGES) == "ok"
    assert server.requests[0]["headers"]["Authorization"] == f"Bearer {KEY}"


@pytest.mark.parametrize("bad", ["sk-abc\ndef-0123456789", "sk-abc\x00def-0123456789", "sk-abc\x7fdef-0123456789"])
def test_a_key_with_control_characters_is_refused_without_quoting_it(bad):
    opener = Opener(completion("never"))
    llm = OpenAICompatLLM("m", "http://127.0.0.1:9/v1", bad, opener=opener)
    with pytest.raises(LLMError, match="control character") as info:
        llm.chat(MESSAGES)
    assert "abc" not in str(info.value) and "def" not in str(info.value) and not opener.requests


def test_a_header_with_a_newline_is_refused_naming_only_the_header():
    llm = OpenAICompatLLM("m", "http://127.0.0.1:9/v1", headers={"api-key": "azure-SECRET-0123\nx"},
                          opener=Opener(completion()))
    with pytest.raises(LLMError, match="header 'api-key'") as info:
        llm.chat(MESSAGES)
    assert "SECRET" not in str(info.value)


@pytest.mark.parametrize("failure", [RuntimeError(f"boom {KEY}"), ValueError(f"Invalid header value b'Bearer {KEY}'"),
                                     TypeError("unexpected"), UnicodeEncodeError("latin-1", KEY, 3, 4, "no")])
def test_any_unexpected_exception_becomes_a_scrubbed_llm_error(failure):
    llm = OpenAICompatLLM("m", "http://127.0.0.1:9/v1", KEY, opener=Opener(failure))
    with pytest.raises(LLMError, match=f"unexpected {type(failure).__name__}") as info:
        llm.chat(MESSAGES)
    assert "SECRET" not in str(info.value)


def test_a_message_that_cannot_be_sent_is_an_llm_error():
    llm = OpenAICompatLLM("m", "http://127.0.0.1:9/v1", KEY, opener=Opener(completion()))
    with pytest.raises(LLMError, match="unexpected TypeError"):
        llm.chat([{"role": "user", "content": object()}])


def test_a_custom_header_value_is_scrubbed_like_the_key(serve):
    secret = "azure-key-0123456789"
    server = serve(error_answer(401, f"Access denied due to invalid key {secret}"))
    with pytest.raises(LLMError) as info:
        client(server, headers={"api-key": secret}).chat(MESSAGES)
    assert secret not in str(info.value) and "Access denied" in str(info.value)


# The review's finding 1: a server that echoes the key escaped (JSON's \uXXXX, PHP's \/, a percent-encoded Location)
SLASHED_KEY = "sk-test/ABCDEFGHIJ+xyz"


def u_escaped(text):
    return "".join(f"\\u{ord(char):04x}" for char in text)


def error_echo(status, message):
    """A script that sends an error body holding message as it stands (already escaped)."""
    return json_answer(('{"error": {"message": "' + message + '"}}').encode(), status)


def sse_error(message):
    def script(ex):
        ex.head(200)
        ex.write(('data: {"error": {"message": "' + message + '", "code": 400}}\n\n').encode())
        ex.end()
    return script


ECHOES = {
    "json_u_escape_401": error_echo(401, "bad key " + u_escaped(SLASHED_KEY)),
    "php_slash_escape_401": error_echo(401, "bad key " + SLASHED_KEY.replace("/", "\\/")),
    "json_u_escape_500": error_echo(500, "bad key " + u_escaped(SLASHED_KEY)),
    "escaped_twice": error_echo(400, "bad key " + u_escaped(SLASHED_KEY).replace("\\", "\\\\")),
    "sse_error_u_escape": sse_error("bad key " + u_escaped(SLASHED_KEY)),
    "percent_encoded_location": json_answer(b"", 302, {"Location": "http://127.0.0.1:1/x?k=" + SLASHED_KEY.replace(
        "/", "%2F").replace("+", "%2B")}),
    "not_json_at_all": json_answer(('{"choices": "' + u_escaped(SLASHED_KEY) + '"').encode()),
}


@pytest.mark.parametrize("name", ECHOES)
def test_a_key_the_server_echoes_escaped_is_scrubbed_after_decoding(serve, name, caplog):
    server = serve(ECHOES[name])
    caplog.set_level(logging.DEBUG, logger="agent")
    with pytest.raises(LLMError) as info:
        client(server, api_key=SLASHED_KEY, max_retries=1).chat(MESSAGES)
    shown = str(info.value) + caplog.text
    assert "***" in str(info.value)
    for form in (SLASHED_KEY, "ABCDEFGHIJ", "ABCDEFGHIJ".lower()):
        assert form not in shown


# -- 2. No redirect is followed --------------------------------------------------------

@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_is_an_error_naming_the_location_and_the_key_stays_home(serve, status):
    elsewhere = serve(chat_answer('{"type": "tool_call", "name": "delete_everything"}'))
    target = f"http://127.0.0.1:{elsewhere.port}/v1/chat/completions"

    def redirect(ex):
        ex.handler.send_response(status)
        ex.handler.send_header("Location", target)
        ex.handler.send_header("Content-Length", "0")
        ex.handler.end_headers()

    server = serve(redirect)
    with pytest.raises(LLMError, match=f"HTTP {status} .*redirected to {target}.*fix the base URL") as info:
        client(server).chat(MESSAGES)
    assert info.value.status == status and len(server.requests) == 1
    assert elsewhere.requests == []


# -- 7. Each adaptation happens once, whatever extra_body says -------------------------

@pytest.mark.parametrize("param, value", [("stop", ["END"]), ("temperature", 0.5), ("max_tokens", 64),
                                          ("frequency_penalty", 0.5)])
def test_a_rejected_parameter_in_extra_body_is_adapted_once(serve, param, value):
    server = serve(error_answer(400, f"Unsupported parameter: '{param}' is not supported with this model."))
    with pytest.raises(LLMError, match="not supported"):
        client(server, extra_body={param: value}, stream=False).chat(MESSAGES)
    assert len(server.requests) == 2
    assert param in server.requests[0]["body"] and param not in server.requests[1]["body"]


def test_every_adaptation_at_once_still_ends(serve):
    rejected = ["stream_options", "stream", "stop", "temperature", "max_tokens", "response_format", "system"]
    message = "; ".join(f"'{name}' is not supported" for name in rejected) + "; System role not supported"
    server = serve(error_answer(400, message))
    with pytest.raises(LLMError):
        client(server, max_tokens=5, response_schema={"type": "object"},
               extra_body={"stop": ["x"], "temperature": 1.0, "max_tokens": 9}).chat(MESSAGES)
    assert len(server.requests) <= 9   # one try, then at most one per adaptation


def test_response_format_falls_back_to_json_object_then_none_and_remembers(serve):
    server = serve(error_answer(400, "response_format json_schema is not supported with this model"),
                   error_answer(400, "response_format type json_object is unavailable now"),
                   chat_answer("a"), chat_answer("b"))
    llm = client(server, response_schema={"type": "object"})
    assert llm.chat(MESSAGES) == "a" and llm.chat(MESSAGES) == "b"
    formats = [r["body"].get("response_format", {}).get("type") for r in server.requests]
    assert formats == ["json_schema", "json_object", None, None]


def test_a_template_without_a_system_role_gets_it_folded_in_once(serve):
    server = serve(error_answer(500, "Jinja exception: System role not supported"),
                   chat_answer("a"), chat_answer("b"))
    llm = client(server)
    assert llm.chat(MESSAGES) == "a" and llm.chat(MESSAGES) == "b"
    assert server.requests[1]["body"]["messages"] == [{"role": "user", "content": "Be brief.\n\nhello"}]
    assert server.requests[2]["body"]["messages"] == server.requests[1]["body"]["messages"]
    assert MESSAGES[0]["role"] == "system"   # the caller's list is untouched


def test_a_refused_format_from_extra_body_is_dropped_not_sent_again(serve):
    # issue 19: "no_format" was remembered but applied only after a json_object fallback
    server = serve(error_answer(400, "response_format json_object is not supported"), chat_answer("a"))
    llm = client(server, extra_body={"response_format": {"type": "json_object"}}, stream=False)
    assert llm.chat(MESSAGES) == "a"
    assert [r["body"].get("response_format") for r in server.requests] == [{"type": "json_object"}, None]


def test_a_503_naming_the_system_role_is_retried_like_any_503(serve):
    # issue 19: it was neither retried (_fail) nor adapted to (_adapt takes 400, 422 and 500)
    server = serve(error_answer(503, "System role not supported"), chat_answer("a"))
    assert client(server).chat(MESSAGES) == "a"
    assert server.requests[1]["body"]["messages"] == MESSAGES


@pytest.mark.parametrize("row", agent._ADAPTATIONS, ids=lambda row: row.rejected)
def test_every_adaptation_changes_a_body_that_held_what_was_rejected(row):
    body = {"model": "m", "messages": [dict(m) for m in MESSAGES], "stream": True,
            "stream_options": {"include_usage": True}, "stop": ["x"], "temperature": 1.0,
            "max_tokens": 9, "frequency_penalty": 0.5,
            "response_format": {"type": "json_schema", "json_schema": {"name": "a", "schema": {}}}}
    assert row.held(body)
    row.instead(body)
    assert not row.held(body)   # so an adapted body is never refused for the same part again


# -- 8. Any 200 body gives text or an LLMError -----------------------------------------

JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
                        st.sampled_from(["choices", "message", "delta", "content", "text", "usage", "error",
                                         "finish_reason", "prompt_tokens", "completion_tokens", "reasoning",
                                         "reasoning_content", "object", "code", "type"]) | st.text(max_size=5),
                        inner, max_size=5), max_leaves=12)


def near_miss(content, message, choice, usage):
    return {"choices": [{"message": message if message is not None else {"content": content}, **choice}],
            "usage": usage}


NEAR_MISS = st.builds(near_miss, JSON, st.none() | JSON, st.dictionaries(st.sampled_from(["finish_reason", "delta"]),
                                                                          JSON, max_size=2), JSON)


def answer_or_llm_error(opener):
    llm = OpenAICompatLLM("m", "http://127.0.0.1:9/v1", KEY, opener=opener, sleep=lambda s: None, max_retries=1)
    try:
        text = llm.chat(MESSAGES)
    except LLMError:
        return
    assert isinstance(text, str)
    assert llm.last_usage is None or set(llm.last_usage) == {"prompt_tokens", "completion_tokens"}


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(JSON, NEAR_MISS))
def test_any_json_body_gives_text_or_an_llm_error(body):
    answer_or_llm_error(Opener(json.dumps(body).encode()))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(JSON, NEAR_MISS, st.sampled_from(["[DONE]", "", "{", "data: x"])), max_size=6))
def test_any_event_stream_gives_text_or_an_llm_error(events):
    data = b"".join(b"data: " + (e if isinstance(e, str) else json.dumps(e)).encode() + b"\n\n" for e in events)
    answer_or_llm_error(Opener(Response(data, "text/event-stream")))


@pytest.mark.parametrize("body", [b'{"choices": 1}', b'{"choices": [{"message": "text"}]}', b'{"usage": 5}',
                                  b'{"choices": [{"message": {"content": [{"text": null}]}}], "usage": 5}',
                                  b"[" * 100_000, b'{"choices": [{"message": {"content": "x"}}], "usage": '
                                  b'{"prompt_tokens": true, "completion_tokens": -3}}', b"\xff\xfe"])
def test_the_bodies_from_the_issue(body):
    answer_or_llm_error(Opener(body))


@given(st.text(max_size=30))
def test_retry_after_is_a_bounded_number_or_none(value):
    seconds = _retry_after(value)
    assert seconds is None or 0 <= seconds <= 60


def test_retry_after_nan_is_ignored(serve):
    sleeps = []
    server = serve(error_answer(429, "slow down", {"Retry-After": "nan"}), chat_answer("ok"))
    assert client(server, sleep=sleeps.append).chat(MESSAGES) == "ok"
    assert len(sleeps) == 1 and 0 < sleeps[0] <= 0.5


# -- 15. Only keys of 8 characters or more are scrubbed --------------------------------

def test_a_short_placeholder_key_is_not_scrubbed_from_messages(serve):
    server = serve(error_answer(400, "Unsupported parameter: 'max_tokens' is not supported with this model. "
                                     "Use 'max_completion_tokens' instead."), chat_answer("ok"))
    assert client(server, api_key="x", max_tokens=10, stream=False).chat(MESSAGES) == "ok"
    assert server.requests[1]["body"]["max_completion_tokens"] == 10


def test_a_short_key_leaves_the_server_message_whole(serve):
    server = serve(error_answer(404, "The model `mixtral` does not exist"))
    with pytest.raises(LLMError, match="The model `mixtral` does not exist"):
        client(server, api_key="x").chat(MESSAGES)


# -- 17. A key from the environment stays off plain http to other hosts ---------------

@pytest.fixture
def env(monkeypatch):
    for name in ("OPENAI_BASE_URL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", KEY + "\n")
    monkeypatch.setenv("OPENAI_MODEL", "m")
    return monkeypatch


def auth_sent(llm, opener):
    llm.chat(MESSAGES)
    return opener.requests[-1].get_header("Authorization")


def test_an_environment_key_is_not_sent_over_http_to_another_host(env, caplog):
    opener = Opener(completion())
    with caplog.at_level(logging.WARNING, logger="agent"):
        llm = OpenAICompatLLM.from_env(base_url="http://lan-box:8080/v1", opener=opener)
    assert auth_sent(llm, opener) is None
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "allow_http_key=True" in warnings[0] and KEY not in warnings[0]


def test_a_401_then_names_the_opt_in(env):
    body = json.dumps({"error": {"message": "Unauthorized"}}).encode()
    import urllib.error

    failure = urllib.error.HTTPError("http://lan-box/v1/chat/completions", 401, "Unauthorized", {}, io.BytesIO(body))
    llm = OpenAICompatLLM.from_env(base_url="http://lan-box/v1", opener=Opener(failure))
    with pytest.raises(LLMError, match=r"allow_http_key=True \(CLI --allow-http-key\)") as info:
        llm.chat(MESSAGES)
    assert info.value.status == 401


@pytest.mark.parametrize("base_url, options", [("https://api.example.com/v1", {}), ("http://127.0.0.1:8080/v1", {}),
                                               ("http://localhost:11434/v1", {}), ("http://[::1]:8000/v1", {}),
                                               ("http://lan-box/v1", {"allow_http_key": True})])
def test_an_environment_key_is_sent_where_it_is_safe_or_allowed(env, base_url, options):
    opener = Opener(completion())
    llm = OpenAICompatLLM.from_env(base_url=base_url, opener=opener, **options)
    assert auth_sent(llm, opener) == f"Bearer {KEY}"


def test_a_key_passed_in_code_is_sent_over_plain_http(env):
    opener = Opener(completion())
    assert auth_sent(OpenAICompatLLM.from_env(base_url="http://lan-box/v1", api_key=KEY, opener=opener),
                     opener) == f"Bearer {KEY}"
    assert auth_sent(OpenAICompatLLM("m", "http://lan-box/v1", KEY, opener=opener), opener) == f"Bearer {KEY}"


def test_organization_and_project_are_sent_as_the_sdk_does(env):
    env.setenv("OPENAI_ORG_ID", "org-123")
    env.setenv("OPENAI_PROJECT_ID", "proj_456")
    opener = Opener(completion())
    OpenAICompatLLM.from_env(opener=opener).chat(MESSAGES)
    request = opener.requests[0]
    assert (request.get_header("Openai-organization"), request.get_header("Openai-project")) == ("org-123", "proj_456")


# -- Base URLs -------------------------------------------------------------------------

@pytest.mark.parametrize("base_url", ["http://localhost:99999/v1", "http://localhost:port/v1", "http://[::1/v1",
                                      "http://[zz::1]/v1", "http://::1/v1", "http://localhost:0/v1", "http:///v1",
                                      "ftp://host/v1", ""])
def test_a_base_url_that_cannot_work_is_refused_at_construction(base_url):
    with pytest.raises(ValueError, match="invalid base URL"):
        OpenAICompatLLM("m", base_url)


def test_a_query_string_is_kept_after_the_path():
    llm = OpenAICompatLLM("m", "https://res.openai.azure.com/openai/deployments/gpt4?api-version=2024-06-01")
    assert llm.url == "https://res.openai.azure.com/openai/deployments/gpt4/chat/completions?api-version=2024-06-01"


def test_a_fresh_request_is_built_for_every_attempt():
    import urllib.error

    opener = Opener(urllib.error.URLError("reset"), urllib.error.URLError("reset"), completion("ok"))
    llm = OpenAICompatLLM("m", "http://127.0.0.1:9/v1", opener=opener, sleep=lambda s: None)
    assert llm.chat(MESSAGES) == "ok"
    assert len({id(request) for request in opener.requests}) == 3


def test_a_loopback_server_is_reached_without_the_proxy(serve, monkeypatch):
    proxy = serve(chat_answer("from the proxy"))
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.port}")
    monkeypatch.setenv("http_proxy", f"http://127.0.0.1:{proxy.port}")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    server = serve(chat_answer("direct"))
    assert client(server).chat(MESSAGES) == "direct" and proxy.requests == []


# -- Context overflow, in every wording ------------------------------------------------

@pytest.mark.parametrize("error, n_ctx, n_prompt", [
    ({"code": 400, "message": "request (4476 tokens) exceeds the available context size (4096 tokens)",
      "type": "exceed_context_size_error", "n_prompt_tokens": 4476, "n_ctx": 4096}, 4096, 4476),
    ({"code": 400, "message": "the request exceeds the available context size, try increasing it",
      "type": "invalid_request_error"}, None, None),
    ({"message": "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 "
                 "tokens. Please reduce the length of the messages.", "code": "context_length_exceeded"}, 8192, 9000),
    ({"message": "This model's maximum context length is 2048 tokens. However, you requested 2100 tokens (2000 in "
                 "the messages, 100 in the completion).", "code": 400}, 2048, 2000),
    ({"message": "The decoder prompt (length 5000) is longer than the maximum model length of 4096.",
      "code": 400}, 4096, 5000),
])
def test_context_overflow_is_recognised_with_its_numbers(serve, error, n_ctx, n_prompt):
    server = serve(json_answer(json.dumps({"error": error}).encode(), status=400))
    with pytest.raises(LLMError) as info:
        client(server, max_tokens=100).chat(MESSAGES)
    assert (info.value.kind, info.value.n_ctx, info.value.n_prompt_tokens) == ("context_overflow", n_ctx, n_prompt)
    assert info.value.status == 400 and len(server.requests) == 1   # not adapted, not retried


def test_an_unknown_model_404_says_so(serve):
    server = serve(error_answer(404, "model 'm' not found, try pulling it first"))
    with pytest.raises(LLMError, match="unknown model 'm'"):
        client(server).chat(MESSAGES)


# -- The repetition check: both sides --------------------------------------------------

LOOPS = [
    '{"type": "tool_call", "thought": "17*23 = 320*4 + 1200 = 320*4 + 1200' + " = 320*4 + 1200" * 40,
    '{"type": "tool_call", "name": "calculator", "arguments": {"expression": "' + "(17*23)+" * 60,
    "I will compute the sum. " * 30,
    '{"thought": "' + " \n\t\n" * 300,   # whitespace loops of JSON mode, once the unit is 4 long
    "The committee reviewed the proposal in great detail and decided that the budget should be revised before the "
    "next meeting, because the costs had grown far beyond what anyone had expected at the start of the fiscal year. "
    * 40,                                  # a 220-character sentence: units up to 400 are looked for
]
TREE = {"n": 1}
for _ in range(40):
    TREE = {"op": "+", "left": TREE, "right": {"n": 1}}
LEGITIMATE = [
    "| id | name | score |\n|----|------|-------|\n"
    + "".join(f"| {i} | user{i} | {i * 7 % 100} |\n" for i in range(80)),
    "".join(f"- item {i}: buy {i % 5 + 1} apples\n" for i in range(100)),
    json.dumps([{"id": i, "name": f"r{i}", "ok": True} for i in range(60)]),
    '{"type": "final", "answer": "' + "0" * 1000 + '"}',
    "=" * 80 + "\nREPORT\n" + "=" * 80 + "\n" + "-=" * 300,
    __import__("base64").b64encode(bytes(range(256)) * 8).decode(),
    "0, " * 400,
    "ab" * 500,
    "| 1 | 2 |\n" * 60,                    # a table of identical rows is data (it was listed as a loop before)
    # indented rows, and copies that differ only in their indentation
    json.dumps([{"id": 0, "ok": True}] * 60, indent=2),
    json.dumps({"a": [[0] * 3] * 40}, indent="\t"),
    "".join(" " * (i % 7) + "0.0,\n" for i in range(300)),
    # pretty-printed syntax trees: the copies differ only in their indentation, and are data
    json.dumps(TREE, indent=2),
    __import__("ast").dump(__import__("ast").parse("+".join(["x"] * 12), mode="eval"), indent=2),
    # the review's finding 5: rows of values and unspaced tokens, as whole replies and in actions
    '{"type": "final", "answer": "' + json.dumps([0.0] * 120) + '"}',
    json.dumps({"type": "tool_call", "name": "save", "arguments": {"mask": [None] * 100}}),
    json.dumps({"type": "final", "answer": [{"status": "ok"}] * 40}),
    json.dumps({"type": "tool_call", "name": "write",
                "arguments": {"data": __import__("base64").b64encode(bytes([200, 30, 30]) * 300).decode()}}),
    json.dumps([False] * 80),
    "| a | b | c |\n|---|---|---|\n" + "| 0 | 0 | 0 |\n" * 40,
    "0123456789" * 50,
    "+---" * 120,
    ("=" * 40 + "\n") * 12,
    "ACGT-" * 100,                         # joined, but not lowercase words
    json.dumps([[0, [1, 2]]] * 80),        # records that close what they open
    # records whose values hold a separator, as an argument and as JSON text inside one
    json.dumps({"type": "tool_call", "name": "f", "arguments": {"rows": [{"x": "1,2"}] * 60}}),
    json.dumps({"type": "tool_call", "name": "write_file",
                "arguments": {"path": "a.json", "content": json.dumps([{"x": "$1,000"}] * 40)}}),
    "ab_c" * 200,                          # lowercase and joined, but a unit shorter than a name
]
REAL_LOOPS = json.loads((__import__("pathlib").Path(__file__).parent / "data" / "real_loops.json").read_text())
REAL_REPLIES = json.loads((__import__("pathlib").Path(__file__).parent / "data" / "real_replies.json").read_text())


@pytest.mark.parametrize("text", LOOPS)
def test_real_small_model_loops_are_caught(text):
    assert _repeating_tail(text)


@pytest.mark.parametrize("size", [1, 4, 7])
def test_loops_of_smollm2_that_ran_to_the_token_limit_are_caught_whole_and_streamed(size):
    """A member of one object again and again, brackets opened deeper and deeper, a snake_case name
    repeated: each was read as data, and its reply ran for minutes (issue 24's bench)."""
    member, nesting, name = (reply["raw"] for reply in REAL_LOOPS["replies"])
    name += "greeting_to_" * 20   # the bench kept 300 characters; the reply went on past them
    for raw, within in ((member, 1000), (nesting, 3300), (name, 700)):
        assert _repeating_tail(raw) and streamed_fires(raw[:within], size), raw[:80]
        assert not _repeating_tail(raw[:300])   # nor does it fire before the copies are there


@pytest.mark.parametrize("encode, size, most", [(base64.b64encode, 3, 0), (base64.b64encode, 6, 0),
                                                (base64.urlsafe_b64encode, 3, 0),
                                                (base64.urlsafe_b64encode, 6, 2)])
def test_base64_of_a_repeated_pattern_is_data_but_for_rare_base64url(encode, size, most):
    """A unit of lowercase words joined by "_" or "-" is a loop, and base64url may spell one."""
    rng = random.Random(24)
    units = [encode(bytes(rng.randrange(256) for _ in range(size))).decode() for _ in range(2000)]
    assert sum(_repeating_tail(unit * (800 // len(unit) + 1)) for unit in units) == most


@pytest.mark.parametrize("text", LEGITIMATE)
def test_legitimate_long_text_is_not_a_loop(text):
    assert not _repeating_tail(text)


def streamed_fires(text, size):
    state = _StreamState(None, None, True, [])
    return any(state.add(text[i:i + size]) for i in range(0, len(text), size))


def test_the_streamed_tail_holds_the_copies_of_the_longest_unit_the_check_looks_for():
    # issue 19: the tail was 4096 characters, worked out by hand from two other constants
    longest = agent._REPEAT_MAX_UNIT
    unit = "".join(f"step {i} says: the same again. " for i in range(longest))[:longest - 1] + "\n"
    assert _repeating_tail(unit * agent._REPEAT_MIN_TIMES)
    assert streamed_fires("Thought: " + unit * agent._REPEAT_MIN_TIMES, 97)
    assert agent._REPEAT_WINDOW == max(agent._REPEAT_MIN_CHARS, agent._REPEAT_MIN_TIMES * longest)


@pytest.mark.parametrize("size", [1, 4, 7])
def test_real_replies_of_smollm2_fire_exactly_where_they_looped(size):
    """SmolLM2-135M on llama.cpp: the replies cut for "repetition" still fire.

    The others (some repeat a few times) do not.
    """
    assert {reply["finish_reason"] == "repetition" for reply in REAL_REPLIES} == {True, False}  # both kinds
    for reply in REAL_REPLIES:
        looped = reply["finish_reason"] == "repetition"
        assert _repeating_tail(reply["raw"]) == looped and streamed_fires(reply["raw"], size) == looped, reply["raw"]


def test_legitimate_long_text_never_fires_in_any_chunking():
    # one character at a time: the check runs at every prefix, so at every cut any chunking makes
    assert not any(streamed_fires(text, 1) for text in LEGITIMATE)


PROSE = st.text("abcdefghij .?!'", min_size=4, max_size=80).filter(lambda u: " " in u and any(c.isalpha() for c in u))


@given(PROSE, st.integers(10, 40), st.text(max_size=50))
def test_any_spoken_unit_repeated_enough_is_caught_whatever_came_before(unit, times, before):
    text = before + unit * max(times, -(-400 // len(unit)) + 1)
    smallest = next(p for p in range(1, len(unit) + 1) if len(unit) % p == 0 and unit[:p] * (len(unit) // p) == unit)
    assert _repeating_tail(text) == (smallest >= 4)


VALUES = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6),
                   st.floats(allow_nan=False, allow_infinity=False),
                   st.text("abcxyz ", max_size=8), st.dictionaries(st.sampled_from(["id", "ok"]), st.integers(0, 9)))


@given(VALUES, st.integers(20, 300), st.sampled_from([", ", ",", " | ", "\n", "; "]), st.integers(1, 9))
def test_a_row_of_one_value_repeated_is_never_a_loop(value, times, separator, size):
    text = separator.join([json.dumps(value)] * times)
    assert not _repeating_tail(text) and not streamed_fires(text, size)


def test_a_rejected_per_call_frequency_penalty_is_dropped_and_remembered(serve):
    server = serve(error_answer(400, "Unsupported parameter: 'frequency_penalty'"),
                   chat_answer("a"), chat_answer("b"))
    llm = client(server, stream=False)
    assert llm.chat(MESSAGES, frequency_penalty=0.5) == "a"
    assert llm.chat(MESSAGES, frequency_penalty=0.5) == "b"
    assert [("frequency_penalty" in r["body"]) for r in server.requests] == [True, False, False]


@pytest.mark.parametrize("max_seconds, words", [
    ("5", "invalid max_seconds '5'"), (True, "invalid max_seconds True"), (float("inf"), "invalid max_seconds inf"),
    (float("nan"), "invalid max_seconds nan"), (0, "no time left for a model call"),
    (-1.5, "no time left for a model call"),
])
def test_a_bad_or_spent_max_seconds_is_an_llm_error_before_any_request(max_seconds, words):
    llm = OpenAICompatLLM("m", "http://127.0.0.1:9/v1", opener=object())   # an opener that cannot open
    with pytest.raises(LLMError, match=re.escape(words)):
        llm.chat([{"role": "user", "content": "hi"}], max_seconds=max_seconds)


def test_the_largest_finite_time_limits_are_no_limits_in_practice(serve):
    server = serve(chat_answer("hi"))
    llm = client(server, timeout=1e308, max_request_seconds=1e308)   # sockets take at most threading.TIMEOUT_MAX
    assert llm.chat([{"role": "user", "content": "hi"}], max_seconds=1e308) == "hi"

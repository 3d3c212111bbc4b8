"""The client and AgentResult.save, hardened (issue #18: secrets items 5-8, client items 14-19)."""
import base64
import json
import logging
import os
import stat
import threading
import time
from urllib.parse import quote

import pytest
from _http_servers import KEY, chat_answer, client, completion, drips, error_answer, json_answer, llama_cpp_stream

import agent
from agent import Agent, LLMError, MockLLM, OpenAICompatLLM, _reported_usage
from conftest import final

MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hello"}]


def failure(server, **options):
    """The LLMError a client for server raises, as text."""
    with pytest.raises(LLMError) as info:
        client(server, max_retries=0, **options).chat(MESSAGES)
    return str(info.value)


# -- 5. A user name and password in the base URL ---------------------------------------

def test_userinfo_in_the_base_url_is_sent_as_basic_auth_and_never_shown(serve, caplog):
    server = serve(error_answer(400, "no such thing"))
    base_url = server.base_url.replace("http://", "http://alice:S3cret@")
    llm = OpenAICompatLLM("m", base_url, sleep=lambda s: None, max_retries=0)
    caplog.set_level(logging.DEBUG, logger="agent")
    with pytest.raises(LLMError) as info:
        llm.chat(MESSAGES)
    sent = server.requests[0]["headers"]["Authorization"]
    assert sent == "Basic " + base64.b64encode(b"alice:S3cret").decode()
    shown = " ".join([repr(llm), str(info.value), llm.url, llm.base_url, caplog.text])
    assert "S3cret" not in shown and "HTTP 400" in shown and "alice" in repr(llm)


def test_the_cli_never_shows_the_password_on_stderr_or_in_the_trace(serve, tmp_path, capsys, monkeypatch):
    from agent import main

    server = serve(error_answer(401, "Invalid credentials for alice"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url.replace("http://", "http://alice:S3cret-pass@"))
    path = tmp_path / "trace.jsonl"
    assert main(["--model", "m", "-v", "--trace", str(path), "What is 2+2?"]) == 3
    shown = capsys.readouterr().err + path.read_text()
    assert "HTTP 401" in shown and "S3cret" not in shown
    assert server.requests[0]["headers"]["Authorization"].startswith("Basic ")


def test_a_percent_encoded_password_is_decoded_for_basic_auth(serve):
    server = serve(chat_answer("hi"))
    password = "p@ss:w/rd%"
    base_url = server.base_url.replace("http://", f"http://bob:{quote(password, safe='')}@")
    assert OpenAICompatLLM("m", base_url).chat(MESSAGES) == "hi"
    sent = server.requests[0]["headers"]["Authorization"]
    assert base64.b64decode(sent.split()[1]).decode() == f"bob:{password}"



def test_a_key_in_the_base_urls_query_is_never_shown(serve, caplog):
    # some servers take the key as ?key=…: every error shows the URL, so its query values are secrets
    server = serve(error_answer(400, "no such model"))
    llm = OpenAICompatLLM("m", f"{server.base_url}?key={TOKEN}&api-version=2024", api_key=TOKEN,
                          sleep=lambda s: None, max_retries=0)
    caplog.set_level(logging.DEBUG, logger="agent")
    with pytest.raises(LLMError) as info:
        llm.chat(MESSAGES)
    assert server.requests[0]["path"].endswith(f"?key={TOKEN}&api-version=2024")   # still sent
    shown = " ".join([repr(llm), str(info.value), str(llm.last_error), caplog.text])
    assert "0123456789" not in shown and "HTTP 400" in shown and "key=***" in str(info.value)


@pytest.mark.parametrize("query", ["key=sk-live-0123456789abcdefghij", "key=abcdefg+hijklmn+opqrstu", "key=abcdefg%C3%A9hijklmn%C3%A9opqr",
                                   "abcdefghSECRETTOKEN99"], ids=["plain", "plus", "escaped", "bare"])
def test_a_key_in_the_query_in_any_form_is_shown_nowhere_retries_included(serve, caplog, query):
    server = serve(error_answer(503, "busy"), error_answer(400, "no such model"))
    llm = OpenAICompatLLM("m", f"{server.base_url}?{query}", sleep=lambda s: None, max_retries=1)
    caplog.set_level(logging.DEBUG, logger="agent")
    with pytest.raises(LLMError) as info:
        llm.chat(MESSAGES)
    assert "retrying" in caplog.text and "HTTP 400" in str(info.value)
    shown = " ".join([repr(llm), str(info.value), caplog.text])
    assert not any(part in shown for part in ("0123456789", "hijklmn", "SECRETTOKEN"))


def test_a_bad_base_url_with_a_key_in_its_query_is_refused_without_showing_it():
    for url in (f"ftp://127.0.0.1:9/v1?key={TOKEN}", "http://127.0.0.1:99999/v1?key=abcdefg+hijklmn+opqrstu"):
        with pytest.raises(ValueError) as info:
            OpenAICompatLLM("m", url)
        assert "0123456789" not in str(info.value) and "hijklmn" not in str(info.value)
        assert "invalid base URL" in str(info.value)


def test_the_models_listing_shows_no_key_of_the_query(serve):
    server = serve(error_answer(404, "nope"))
    llm = OpenAICompatLLM("m", f"{server.base_url}?key=abcdefg+hijklmn+opqrstu", max_retries=0)
    with pytest.raises(LLMError) as info:
        llm._served_models()
    assert "HTTP 404" in str(info.value) and "hijklmn" not in str(info.value)


def test_a_password_the_server_echoes_is_scrubbed_in_every_form(serve):
    password = "S3cret-long-password"
    credential = base64.b64encode(f"alice:{password}".encode()).decode()
    server = serve(error_answer(401, f"bad {password} {quote(password)} Basic {credential}"))
    base_url = server.base_url.replace("http://", f"http://alice:{password}@")
    with pytest.raises(LLMError) as info:
        OpenAICompatLLM("m", base_url, max_retries=0).chat(MESSAGES)
    assert password not in str(info.value) and credential not in str(info.value) and "HTTP 401" in str(info.value)


def test_userinfo_and_an_api_key_together_are_refused_naming_neither_secret():
    with pytest.raises(ValueError) as info:
        OpenAICompatLLM("m", "http://alice:S3cret@127.0.0.1:9/v1", api_key=KEY)
    assert "S3cret" not in str(info.value) and KEY not in str(info.value) and "Authorization" in str(info.value)


def test_a_bad_base_url_with_a_password_is_refused_without_showing_it():
    with pytest.raises(ValueError) as info:
        OpenAICompatLLM("m", "ftp://alice:S3cret@127.0.0.1:9/v1")
    assert "S3cret" not in str(info.value) and "invalid base URL" in str(info.value)


# -- 6. A credential in headers= -------------------------------------------------------

TOKEN = "sk-live-0123456789abcdefghijklmnopqrstuvw"
CREDENTIAL_HEADERS = ["Authorization", "Proxy-Authorization", "api-key", "x-api-key", "X-Goog-Api-Key",
                      "Ocp-Apim-Subscription-Key", "X-Auth-Token", "Cookie"]
HEADER_FORMS = {"bearer": f"Bearer {TOKEN}", "lower_bearer": f"bearer {TOKEN}", "token": f"Token {TOKEN}",
                "raw": TOKEN, "cookie": f"session={TOKEN}; theme=dark"}
ECHOES = {"plain": lambda s: s, "url_encoded": lambda s: quote(s, safe=""),
          "json_u_escaped": lambda s: "".join(f"\\u{ord(c):04x}" for c in s)}


@pytest.mark.parametrize("echo", ECHOES)
@pytest.mark.parametrize("form", HEADER_FORMS)
@pytest.mark.parametrize("header", CREDENTIAL_HEADERS)
def test_a_credential_in_any_header_is_scrubbed_in_every_form(serve, header, form, echo):
    message = "bad credential " + ECHOES[echo](TOKEN)
    server = serve(json_answer(('{"error": {"message": "' + message + '"}}').encode(), 401))
    shown = failure(server, api_key=None, headers={header: HEADER_FORMS[form]})
    assert "bad credential" in shown and "***" in shown and "0123456789" not in shown


def test_a_basic_credential_in_a_header_is_scrubbed_and_so_is_its_password(serve):
    password = "hunter2-is-long-enough"
    credential = base64.b64encode(f"carol:{password}".encode()).decode()
    server = serve(error_answer(401, f"refused {credential} for carol:{password} ({password})"))
    shown = failure(server, api_key=None, headers={"Authorization": f"Basic {credential}"})
    assert credential not in shown and password not in shown and "refused***" in shown


# -- 7. A secret echoed cut short ------------------------------------------------------

@pytest.mark.parametrize("cut", [lambda s: s[:-4], lambda s: s[:len(s) // 2], lambda s: s[4:], lambda s: s[:-1],
                                 lambda s: s[:3] + "..." + s[-20:]])
def test_a_long_prefix_or_suffix_of_a_secret_is_scrubbed(serve, cut):
    server = serve(error_answer(401, f"Incorrect API key provided: {cut(TOKEN)}."))
    shown = failure(server, api_key=TOKEN)
    assert "Incorrect API key provided: " in shown
    assert not any(TOKEN[i:i + 8] in shown for i in range(len(TOKEN) - 7))


def test_a_short_common_fragment_of_a_key_is_kept(serve):
    server = serve(error_answer(401, "keys start with sk-l and end with tuvw"))
    assert "sk-l and end with tuvw" in failure(server, api_key=TOKEN)


# -- 8. save() over a private file -----------------------------------------------------

def result():
    return Agent(MockLLM([final("42")])).run("q")


@pytest.mark.skipif(os.name != "posix", reason="POSIX permission bits")
@pytest.mark.parametrize("mode", [0o600, 0o640, 0o644])
def test_save_never_writes_the_result_into_a_file_more_open_than_the_target(tmp_path, monkeypatch, mode):
    target = tmp_path / "result.json"
    target.write_text("{}")
    os.chmod(target, mode)
    seen = []
    real_replace = os.replace

    def replace(src, dst):
        seen.append(stat.S_IMODE(os.stat(src).st_mode))
        return real_replace(src, dst)

    real_fsync = os.fsync

    def fsync(fd):
        seen.append(stat.S_IMODE(os.fstat(fd).st_mode))   # while the whole result is in the temp file
        return real_fsync(fd)

    monkeypatch.setattr(os, "replace", replace)
    monkeypatch.setattr(os, "fsync", fsync)
    result().save(target)
    assert all(bits & ~mode == 0 for bits in seen) and stat.S_IMODE(os.stat(target).st_mode) == mode
    assert json.loads(target.read_text())["answer"] == "42"


@pytest.mark.skipif(os.name != "posix", reason="POSIX permission bits")
def test_save_creates_a_new_file_private(tmp_path):
    target = tmp_path / "new.json"
    result().save(target)
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o600


# -- 14. A proxy that drips the CONNECT answer -----------------------------------------

def test_a_proxy_that_drips_its_connect_answer_cannot_hold_the_call(serve, monkeypatch):
    proxy = serve(drips(b"HTTP/1.1 200 Connection established\r\n", b"X-Pad: 1\r\n", every=0.05, cap=30.0))
    for name in ("https_proxy", "HTTPS_PROXY"):
        monkeypatch.setenv(name, f"http://127.0.0.1:{proxy.port}")
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    llm = OpenAICompatLLM("m", "https://llm.example.invalid/v1", api_key=KEY, timeout=1, max_retries=0,
                          sleep=lambda s: None)
    start = time.monotonic()
    with pytest.raises(LLMError) as info:
        llm.chat(MESSAGES, max_seconds=0.6)
    assert time.monotonic() - start < 10   # held, it would wait the 30 s: room for a busy machine
    assert "max_seconds" in str(info.value) and proxy.requests[0]["method"] == "CONNECT"


# -- 15. Two threads adapting the same parameter ---------------------------------------

def test_a_per_thread_attribute_keeps_its_own_values_without_help_from_its_class():
    class Holder:
        last = agent._PerThread("none yet")

    holder, seen = Holder(), []
    holder.last = "main"
    thread = threading.Thread(target=lambda: seen.append(holder.last))
    thread.start()
    thread.join(5)
    assert seen == ["none yet"] and holder.last == "main"


def refused_in_two_threads(serve, message, **options):
    """Two threads ask one client; the server refuses both requests with message while both are in flight.

    Returns the server and what each thread got (the reply, or the LLMError's text).
    """
    both_in_flight = threading.Barrier(2, timeout=5)

    def refuse(ex):
        both_in_flight.wait()
        error_answer(400, message)(ex)

    server = serve(refuse, refuse, chat_answer("hi"))
    llm, answers = client(server, max_retries=0, **options), []

    def ask():
        try:
            answers.append(llm.chat(MESSAGES, response_schema={"type": "object"}))
        except LLMError as exc:
            answers.append(str(exc))

    threads = [threading.Thread(target=ask) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    return server, answers


def test_two_threads_refused_the_same_parameter_both_retry(serve):
    server, answers = refused_in_two_threads(serve, "'stream' is not supported")
    assert answers == ["hi", "hi"]
    assert [r["body"].get("stream") for r in server.requests[2:]] == [None, None]


def test_two_threads_refused_json_schema_both_fall_back_to_json_object_only(serve):
    server, answers = refused_in_two_threads(serve, "response_format json_schema is not supported", stream=False)
    assert answers == ["hi", "hi"]
    assert [r["body"].get("response_format") for r in server.requests[2:]] == [{"type": "json_object"}] * 2


# -- 16. Server-sent events in every framing, with and without a BOM -------------------

BOM = b"\xef\xbb\xbf"
ENDINGS = {"LF": b"\n", "CR": b"\r", "CRLF": b"\r\n"}


def framed(ending, bom, pieces_of=None):
    """llama.cpp's events for "Hello world" with the line ending given, and a BOM first if asked."""
    events = [e.replace(b"\n", ending) for e in llama_cpp_stream(["Hel", "lo ", "world"])]
    data = (BOM if bom else b"") + b"".join(events)
    return [data[i:i + pieces_of] for i in range(0, len(data), pieces_of)] if pieces_of else events


def raw_stream(pieces):
    def script(ex):
        ex.head(200)
        for piece in pieces:
            ex.write(piece)
        ex.end()
    return script


@pytest.mark.parametrize("pieces_of", [None, 1, 7])
@pytest.mark.parametrize("bom", [False, True])
@pytest.mark.parametrize("ending", ENDINGS)
def test_every_event_framing_reads_the_whole_reply(serve, ending, bom, pieces_of):
    events = framed(ENDINGS[ending], bom, pieces_of)
    if bom and not pieces_of:
        events[0] = BOM + events[0]
    server = serve(raw_stream(events))
    llm = client(server, early_stop=False)
    assert llm.chat(MESSAGES) == "Hello world"
    assert llm.last_usage == {"prompt_tokens": 10, "completion_tokens": 5}


def test_a_crlf_split_between_two_reads_is_one_line_end(serve):
    data = b"".join(framed(b"\r\n", False))
    pieces, at = [], 0
    while at < len(data):          # cut after every \r, so each \n arrives on its own
        end = data.find(b"\r", at) + 1 or len(data)
        pieces.append(data[at:end])
        at = end
    server = serve(raw_stream(pieces))
    assert client(server, early_stop=False).chat(MESSAGES) == "Hello world"


@pytest.mark.parametrize("content_type", ["application/json", "text/plain"])
def test_a_bom_before_a_json_body_is_read_as_the_json(serve, content_type):
    server = serve(json_answer(BOM + completion("hi"), content_type=content_type))
    assert client(server, stream=False).chat(MESSAGES) == "hi"


def test_a_bom_before_a_models_listing_is_read(serve):
    server = serve(json_answer(BOM + b'{"data": [{"id": "only"}]}'))
    assert client(server)._served_models() == ["only"]


# -- 17. Informational answers before the real one -------------------------------------

INFORMATIONAL = [100, 102, 103, 104, 150, 199]


@pytest.mark.parametrize("status", INFORMATIONAL)
@pytest.mark.parametrize("stream", [False, True])
def test_informational_answers_are_skipped(serve, status, stream):
    body = chat_answer("hi") if not stream else raw_stream(llama_cpp_stream(["hi"]))

    def script(ex):
        for _ in range(2):
            ex.write_raw(f"HTTP/1.1 {status} Informational\r\nLink: </style.css>; rel=preload\r\n\r\n".encode())
        body(ex)

    server = serve(script)
    assert client(server, stream=stream).chat(MESSAGES) == "hi"


def test_after_an_informational_answer_the_real_one_may_wait_past_the_timeout(serve):
    # prompt processing comes after a 103: the status line that follows waits like a first byte
    def script(ex):
        ex.write_raw(b"HTTP/1.1 103 Early Hints\r\n\r\n")
        time.sleep(0.6)
        chat_answer("hi")(ex)

    server = serve(script)
    assert client(server, timeout=0.2, max_retries=0).chat(MESSAGES) == "hi"


def test_informational_answers_do_not_hold_the_call_past_its_deadline(serve):
    server = serve(drips(b"", b"HTTP/1.1 103 Early Hints\r\n\r\n", every=0.05, cap=30.0))
    start = time.monotonic()
    with pytest.raises(LLMError):
        client(server, max_retries=0).chat(MESSAGES, max_seconds=0.5)
    assert time.monotonic() - start < 10   # held, it would wait the 30 s: room for a busy machine


# -- 18. Usage counts no server can mean -----------------------------------------------

ABSURD = [10 ** 4299, -5, 5.5, 7.0, True, float("inf"), float("nan"), "12", None, 10 ** 12]


@pytest.mark.parametrize("value", ABSURD, ids=lambda v: repr(v)[:20])
def test_an_absurd_usage_count_is_refused(value):
    assert _reported_usage({"prompt_tokens": value, "completion_tokens": 3}) == {"prompt_tokens": 0,
                                                                                 "completion_tokens": 3}
    assert _reported_usage({"prompt_tokens": value, "completion_tokens": value}) is None


def test_a_run_over_a_server_with_absurd_usage_ends_with_its_answer(serve):
    huge = b"9" * 4300                  # the most json.loads reads; json.dumps of twice it raises
    usage = b', "usage": {"prompt_tokens": ' + huge + b', "completion_tokens": 2}}'
    body = completion(final("42"), usage=None)[:-1] + usage
    server = serve(json_answer(body))
    result = Agent(client(server, stream=False)).run("q")
    assert result.answer == "42" and result.usage["completion_tokens"] == 2
    assert "answered" in result.summary and json.dumps(result.to_dict())


# -- 19. A stop given as one string ----------------------------------------------------

@pytest.mark.parametrize("stop, sent", [("Observation:", ["Observation:"]), (["A", "B"], ["A", "B"]),
                                        (("[OBSERVATION]",), ["[OBSERVATION]"]), (None, None), ("", None)])
def test_a_stop_string_is_one_stop_sequence(serve, stop, sent):
    server = serve(chat_answer("hi"))
    client(server, stop=stop, stream=False).chat(MESSAGES)
    assert server.requests[0]["body"].get("stop") == sent


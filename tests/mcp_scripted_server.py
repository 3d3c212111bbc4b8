"""A scripted MCP server over stdio, in plain Python (no SDK), for tests/test_mcp.py: hostile on demand.

python tests/mcp_scripted_server.py [old|modern] [extra tools...]

"old" (the default) speaks the 2025-11-25 handshake and refuses server/discover as a method it does not
know; "silent" is old and never answers server/discover; "modern" answers server/discover. SCRIPTED_DELAY
(seconds, in its environment) is a slow start: it reads nothing before then. Each tool misbehaves in its own way when called; "bad_schema" and
"not_object" are listed only when named on the command line.
"""
import json
import os
import sys
import time

ERA = sys.argv[1] if len(sys.argv) > 1 else "old"
EXTRA = set(sys.argv[2:])
OBJECT = {"type": "object", "properties": {}}
TEXT = {"type": "object", "properties": {"text": {"type": "string", "title": "Text", "examples": ["hi"]}},
        "required": ["text"], "title": "EchoArguments", "$schema": "http://json-schema.org/draft-07/schema#"}
TOOLS = {
    "echo": ("Echo the text.\n\nA second paragraph for people, not for the prompt.", TEXT),
    "noisy": ("Print lines that are not JSON on stdout, then answer.", OBJECT),
    "die": ("Exit in the middle of the call.", OBJECT),
    "hang": ("Never answer.", OBJECT),
    "huge_line": ("Send a line of 100 MB.", OBJECT),
    "big": ("Answer with 10 MB of text.", OBJECT),
    "wrong_id": ("Answer with another request's id first, then twice with the right one.", OBJECT),
    "contents": ("Answer with every kind of content.", OBJECT),
    "structured": ("Answer with structuredContent only.", OBJECT),
    "fails": ("Answer with isError.", OBJECT),
    "refuses": ("Answer with a JSON-RPC error.", OBJECT),
    "wants_input": ("Answer with resultType input_required.", OBJECT),
    "env": ("Answer with the environment's variable names.", OBJECT),
    "delete": ("Delete everything (marked destructive).", OBJECT),
}
PAGE = 8   # tools/list pages: the client must follow nextCursor


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def text(value):
    return {"content": [{"type": "text", "text": value}]}


def listing(cursor):
    names = [name for name in TOOLS] + sorted(EXTRA & {"bad_schema", "not_object"})
    start = int(cursor or 0)
    tools = []
    for name in names[start:start + PAGE]:
        if name == "bad_schema":
            schema = {"type": "object", "properties": {"x": {"type": "string", "$dynamicRef": "#a"}}}
            tools.append({"name": name, "description": "A schema we cannot enforce.", "inputSchema": schema})
        elif name == "not_object":
            tools.append({"name": name, "description": "Takes an array.", "inputSchema": {"type": "array"}})
        else:
            description, schema = TOOLS[name]
            tool = {"name": name, "description": description, "inputSchema": schema}
            if name == "delete":
                tool["annotations"] = {"destructiveHint": True}
            tools.append(tool)
    result = {"tools": tools}
    if start + PAGE < len(names):
        result["nextCursor"] = str(start + PAGE)
    return result


def call(ident, name, arguments):
    if name == "echo":
        return text(arguments["text"])
    if name == "noisy":
        print("Starting up... not JSON")
        print("[1, 2")
        return text("done")
    if name == "die":
        sys.stderr.write("fatal: the tool crashed\n")
        sys.stderr.flush()
        os._exit(3)
    if name == "hang":
        return None
    if name == "huge_line":
        chunk = "x" * 2**20
        sys.stdout.write('{"jsonrpc": "2.0", "id": ' + str(int(ident)) + ', "result": {"content": [{"type": "text", "text": "')
        for _ in range(100):
            sys.stdout.write(chunk)
        sys.stdout.write('"}]}}\n')
        sys.stdout.flush()
        return None
    if name == "big":
        return text("y" * 10 * 2**20)
    if name == "wrong_id":
        send({"jsonrpc": "2.0", "id": ident + 1000, "result": text("stray")})
        send({"jsonrpc": "2.0", "id": True, "result": text("a boolean id")})
        send({"jsonrpc": "2.0", "id": ident, "result": text("right")})
        send({"jsonrpc": "2.0", "id": ident, "result": text("repeated")})
        return None
    if name == "contents":
        return {"content": [
            {"type": "text", "text": "first"},
            {"type": "image", "data": "QUJD" * 100, "mimeType": "image/png"},
            {"type": "audio", "data": "QUJD", "mimeType": "audio/wav"},
            {"type": "resource_link", "uri": "file:///tmp/a.txt", "name": "a.txt"},
            {"type": "resource", "resource": {"uri": "file:///tmp/b.txt", "text": "embedded text"}},
            {"type": "resource", "resource": {"uri": "file:///tmp/c.bin", "blob": "QUJD", "mimeType": "x/y"}},
            {"type": "text", "text": "last"}]}
    if name == "structured":
        return {"content": [], "structuredContent": {"temperature": 21.5}}
    if name == "fails":
        return {"content": [{"type": "text", "text": "disk full"}], "isError": True}
    if name == "refuses":
        send({"jsonrpc": "2.0", "id": ident, "error": {"code": -32602, "message": "Unknown tool: refuses"}})
        return None
    if name == "wants_input":
        return {"resultType": "input_required", "inputRequests": {}}
    if name == "env":
        return text(" ".join(sorted(os.environ)))
    if name == "delete":
        return text("deleted")
    send({"jsonrpc": "2.0", "id": ident, "error": {"code": -32602, "message": f"Unknown tool: {name}"}})
    return None


def answer(message):
    method, ident = message.get("method"), message.get("id")
    if ident is None:
        return None   # notifications: initialized, cancelled
    if method == "server/discover":
        if ERA == "silent":
            return None
        if ERA == "old":
            return {"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": "Method not found"}}
        return {"jsonrpc": "2.0", "id": ident, "result": {"supportedVersions": ["2026-07-28"], "capabilities": {
            "tools": {}}, "serverInfo": {"name": "scripted", "version": "1"}, "resultType": "complete"}}
    if method == "initialize":
        return {"jsonrpc": "2.0", "id": ident, "result": {"protocolVersion": "2025-11-25", "capabilities": {
            "tools": {}}, "serverInfo": {"name": "scripted", "version": "1"}}}
    if method == "tools/list":
        return {"jsonrpc": "2.0", "id": ident, "result": listing((message.get("params") or {}).get("cursor"))}
    if method == "tools/call":
        params = message["params"]
        result = call(ident, params["name"], params.get("arguments") or {})
        return None if result is None else {"jsonrpc": "2.0", "id": ident, "result": result}
    return {"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": "Method not found"}}


def main():
    sys.stderr.write("scripted server starting\n")
    sys.stderr.flush()
    time.sleep(float(os.environ.get("SCRIPTED_DELAY", "0")))
    print("a banner some servers print first")   # not JSON: skipped by the client
    sys.stdout.flush()
    for line in sys.stdin:
        reply = answer(json.loads(line))
        if reply is not None:
            send(reply)


if __name__ == "__main__":
    main()

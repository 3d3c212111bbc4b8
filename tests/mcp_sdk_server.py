"""A small MCP server written with the official SDK (2.x), for tests/test_mcp.py and bench/mcp.py.

python tests/mcp_sdk_server.py            serves over stdio
python tests/mcp_sdk_server.py PORT       serves Streamable HTTP on 127.0.0.1:PORT (path /mcp)
"""
import sys

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.utilities.types import Image
from mcp_types import ToolAnnotations

server = MCPServer("agent-py-test")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers.

    A second paragraph that the prompt leaves out."""
    return a + b


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
def picture() -> Image:
    """A one-pixel PNG."""
    return Image(data=b"\x89PNG\r\n\x1a\n" + b"\0" * 60, format="png")


@server.tool()
def fail(message: str) -> str:
    """Raise an error with this message."""
    raise ValueError(message)


@server.tool(annotations=ToolAnnotations(destructiveHint=True))
def wipe(path: str) -> str:
    """Pretend to delete a file."""
    return f"wiped {path}"


if __name__ == "__main__":
    if len(sys.argv) > 1:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
    else:
        server.run()

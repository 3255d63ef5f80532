"""Adapters that put gitmem where agents already are (an MCP server, SDK memory-tool
backends, a console). Each is one module on top of the library; nothing below an
adapter knows it exists."""

"""``wikimem serve``: one warm process for every client (HTTP API, MCP over HTTP, a web page, tokens,
several vaults), and the Unix socket through which one-shot commands are answered by a warm process.

- ``app.py``: the server (routes, lifespan, ``run``); ``operations.py``: the JSON API's route table;
- ``guard.py``: Host/Origin checks, body bounds, tokens, rate limits; ``tokens.py``: the token store;
- ``hosts.py``: one served vault; ``web.py``: the web page; ``mcp_author.py``: log.md authors for MCP;
- ``protocol.py``: forwarding one-shot commands to a warm process (its server side: ``cli/forward.py``);
- ``remote.py``: ``wikimem search --server URL``.

Importing this package imports nothing: the command-line entry point uses ``protocol`` on its way.
"""

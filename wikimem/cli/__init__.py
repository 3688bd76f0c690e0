"""The command line: parse arguments, call ``wikimem.api``, render (rich tables or ``--json``).

No logic lives here. Exit codes: 0 ok, 1 findings or errors for the user, 2 usage or config.
``app.py`` holds the Typer app and the rendering helpers; each other module registers a group of
commands on it (imported here in the order ``wikimem --help`` lists them).
"""
# imported for the commands they register, in the order `wikimem --help` lists them
from . import vault, agents, knowledge, compiling, watching, graph, explore, health, serving  # noqa: F401,I001
from .app import app, flow_command_help, main

flow_command_help()

__all__ = ["app", "main"]

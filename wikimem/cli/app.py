"""The command line: parse arguments, call ``wikimem.api``, render (rich tables or ``--json``).

No logic lives here. Exit codes: 0 ok, 1 findings or errors for the user, 2 usage or config.
"""
from __future__ import annotations

import contextlib
import contextvars
import json
import re
import logging
import sys
from typing import Any, Callable, Mapping

import click
import typer
from rich.console import Console
from rich.markup import escape

from .. import __version__
from ..errors import WikimemError
from ..model import json_safe

def _read_like_a_person() -> None:
    """Help that reads like a person wrote it: ``--limit N`` and ``QUERY``, not typer's ``<int>``,
    ``<bool>`` on flags and ``{query}`` (typer >= 0.2x prints the Python type of every parameter)."""
    core = getattr(typer, "core", None)
    option, argument = getattr(core, "TyperOption", None), getattr(core, "TyperArgument", None)
    if option is None or argument is None:
        return

    def option_type(self, ctx=None):
        if getattr(self, "is_flag", False) or getattr(self, "count", False):
            return None
        if self.metavar:
            return self.metavar
        try:
            kind = self.bare_type() if hasattr(self, "bare_type") else getattr(self.type, "name", "")
        except Exception:  # noqa: BLE001 - help text must never fail over a type it cannot name
            kind = ""
        if kind in ("int", "integer"):
            return "N"
        if kind == "float":
            return "NUMBER"
        longest = max(self.opts, key=len, default=self.name or "value")
        return longest.lstrip("-").replace("-", "_").upper()

    def argument_name(self):
        return self.metavar or (self.name or "value").upper()

    def argument_usage(self):
        name = argument_name(self) if self.required else f"[{argument_name(self)}]"
        return name + ("..." if self.nargs != 1 else "")

    option.display_type_rich = option_type
    argument.display_type_rich = lambda self, ctx=None: None
    if isinstance(getattr(argument, "display_name_raw", None), property):
        argument.display_name_raw = property(argument_name)
    if hasattr(argument, "_usage_display_name"):
        argument._usage_display_name = argument_usage


_read_like_a_person()


def _usage_errors_in_json_too() -> None:
    """A usage error typer reports itself (``-k 0``, an unknown option) is also a ``{"error",
    "code"}`` line on stdout under ``--json``, as every error of a command is (``_fail``): a script
    reading stdout got nothing. Wraps typer's error printer (its box on stderr is unchanged)."""
    try:
        from typer import rich_utils
    except ImportError:  # a typer without rich: click's own printer, left as it is
        return
    shown = getattr(rich_utils, "rich_format_error", None)
    if shown is None or getattr(shown, "wikimem_json", False):
        return

    def format_error(exc, *args, **kwargs):
        shown(exc, *args, **kwargs)
        if _wants_json():
            message = _printable(" ".join(str(exc.format_message()).split()))
            sys.stdout.write(json.dumps({"error": message, "code": getattr(exc, "exit_code", 2)},
                                        ensure_ascii=False) + "\n")
    format_error.wikimem_json = True  # type: ignore[attr-defined]
    rich_utils.rich_format_error = format_error


_usage_errors_in_json_too()


class QueryCommand(typer.core.TyperCommand):
    """A command whose words are a query taken as typed (search, query). Its options are read where
    they stand and its words kept in order; a word that starts like one of its short options with a
    value attached is a word when the value could not be that option's: "-kubernetes" (an exclusion)
    was ``-k ubernetes`` ("Invalid value for '--limit'") and "-Vim" ``-V im`` ("vault folder not
    found: im"). ``-k5`` and ``-V./notes`` stay options, ``--`` still ends them."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        # typer may bring its own copy of click: options are told by what they are, not their class
        named = {name: p for p in self.params if getattr(p, "param_type_name", "") == "option"
                 for name in (*p.opts, *p.secondary_opts)}
        options: list[str] = []
        words: list[str] = []
        i = 0
        while i < len(args):
            arg = args[i]
            if arg == "--":
                words.extend(args[i + 1:])
                break
            name = arg.split("=", 1)[0] if arg.startswith("--") else arg[:2]
            param = named.get(name) if arg.startswith("-") and len(arg) > 1 else None
            takes = param is not None and not param.is_flag and not param.count
            if arg in ctx.help_option_names:
                options.append(arg)
            elif param is None or (len(arg) > 2 and not arg.startswith("--") and takes
                                   and not _fits(self.callback, param, arg[2:])):
                words.append(arg)
            else:
                options.append(arg)
                if takes and arg == name and i + 1 < len(args):  # "-k 5", "--limit 5": its value follows
                    i += 1
                    options.append(args[i])
            i += 1
        return super().parse_args(ctx, options + (["--", *words] if words else []))


def _fits(callback, param, value: str) -> bool:
    """Whether ``value`` could be ``param``'s: a number for a number (as the command's signature
    declares it), an existing folder for a vault."""
    import inspect
    try:
        declared = inspect.signature(callback).parameters[param.name].annotation
    except (KeyError, TypeError, ValueError):
        declared = None
    if declared in (int, float, "int", "float"):
        try:
            float(value)
        except ValueError:
            return False
        return True
    if param.name == "vault":
        from pathlib import Path
        return Path(value).expanduser().is_dir()
    return True

app = typer.Typer(
    name="wikimem",
    help="Compile an Obsidian vault into a searchable knowledge base and long-term memory.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
def flow_command_help() -> None:
    """Each command's help as flowing paragraphs: Typer's rich mode keeps a docstring's line breaks,
    so a help written at 100 columns broke mid-sentence in ``wikimem --help``'s list of commands
    and in each ``--help``. Called once every command is registered (``cli/__init__.py``)."""
    import inspect
    import re

    for info in app.registered_commands:
        text = info.help or inspect.getdoc(info.callback) or ""
        if "\n" in text:
            info.help = "\n\n".join(re.sub(r"\s*\n\s*", " ", part.strip()) for part in text.split("\n\n"))


# Piped or redirected: one line per line, never wrapped at 80 columns, and tables as wide as their
# contents (Rich assumes 80 columns off a terminal and cut ids and paths to fit).
OFF_TERMINAL_WIDTH = 400
# A command forwarded to a warm process (cli/forward.py) renders for its client's terminal: its own
# consoles and argv, per thread, while the process's own output goes on as it was.
_FORWARDED: contextvars.ContextVar[tuple[Console, Console, list[str]] | None] = contextvars.ContextVar(
    "wikimem_cli_forwarded", default=None)


class _ConsoleSwitch:
    """``out``/``err``: the process's console, or a forwarded command's for its client."""

    def __init__(self, index: int, default: Console):
        self._index = index
        self._default = default

    @property
    def current(self) -> Console:
        """The console this stands for now. Hand rich's ``Live`` and ``Progress`` this, not the
        switch: they use their console as a context manager, and special methods are looked up
        on the type, past ``__getattr__`` (every progress bar on a terminal failed so)."""
        forwarded = _FORWARDED.get()
        return forwarded[self._index] if forwarded else self._default

    def __getattr__(self, name: str):
        return getattr(self.current, name)

    def __enter__(self):
        return self.current.__enter__()

    def __exit__(self, *exc):
        return self.current.__exit__(*exc)



out = _ConsoleSwitch(0, Console(soft_wrap=not sys.stdout.isatty(), width=None if sys.stdout.isatty() else OFF_TERMINAL_WIDTH))
err = _ConsoleSwitch(1, Console(stderr=True, soft_wrap=True, width=None if sys.stderr.isatty() else OFF_TERMINAL_WIDTH))


@contextlib.contextmanager
def forwarded_consoles(stdout, stderr, stdout_tty: bool, stderr_tty: bool, env: dict[str, str], argv: list[str]):
    """Consoles that render as ``out``/``err`` would have in the client's own process."""
    def console(file, tty: bool, soft: bool) -> Console:
        width = None
        if tty:
            try:
                width = int(env.get("COLUMNS", "")) or None
            except ValueError:
                width = None
        return Console(file=file, force_terminal=tty, soft_wrap=soft, width=width or (80 if tty else OFF_TERMINAL_WIDTH),
                       _environ=env, legacy_windows=False)
    reset = _FORWARDED.set((console(stdout, stdout_tty, not stdout_tty), console(stderr, stderr_tty, True), argv))
    try:
        yield
    finally:
        _FORWARDED.reset(reset)

VaultArg = typer.Argument(None, help="Vault folder (default: $WIKIMEM_VAULT or the current folder).",
                          show_default=False)
VaultOpt = typer.Option(None, "--vault", "-V", metavar="VAULT",
                        help="Vault folder (default: $WIKIMEM_VAULT or the current folder).", show_default=False)
JsonOpt = typer.Option(False, "--json", help="Machine-readable output on stdout.")
# the search filters, shared by `search` and `query`
FolderOpt = typer.Option(None, "--folder", help="Only pages under this folder.")
TypeOpt = typer.Option(None, "--type", help="Only this page type.")
TagOpt = typer.Option(None, "--tag", help="Only pages with this tag (repeatable).")
SinceOpt = typer.Option(None, "--since", metavar="DATE", help="Updated on or after YYYY-MM-DD.")
UntilOpt = typer.Option(None, "--until", metavar="DATE", help="Updated on or before YYYY-MM-DD.")
AsOfOpt = typer.Option(None, "--as-of", metavar="DATE", help="What the vault held then: the pages valid on "
                       "YYYY-MM-DD (to its end; or YYYY-MM-DDTHH:MM), old versions included when they were current.")


def _moment(value: Any) -> str:
    """A timeline moment as a person reads it: the date, with the time when it is not midnight."""
    text = str(value or "")
    return text[:10] if text.endswith("T00:00:00") else text[:16].replace("T", " ")


def version_line(version: Mapping[str, Any]) -> str:
    """Where a hit stands in its version chain (search/timeline.py ``version_of``), on one line."""
    start, end = version.get("valid_from"), version.get("valid_until")
    span = f"valid {_moment(start) if start else '…'} → {_moment(end) if end else 'now'}"
    if end is None and version.get("superseded_by"):
        span += " (superseded; date unknown)"
    current = version.get("current")
    now = f" · current: {current}" if current and current != version.get("chain", [None])[version["version"] - 1] else ""
    return f"version {version['version']} of {version['of']} · {span}{now}"


def _emit_json(data: Any) -> None:
    text = json.dumps(json_safe(data), ensure_ascii=False, indent=2, default=str, allow_nan=False)
    sys.stdout.write(_printable(text) + "\n")


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _terminal(text: str) -> str:
    """``_printable`` for a line a terminal shows: a note's control characters (ESC sequences that
    clear the screen, retitle the window or write the clipboard) as visible ``\\x1b`` escapes."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group(0)):02x}", _printable(text))


def _printable(text: str) -> str:
    """Text that any UTF-8 stream accepts: stray surrogates (from file names that are not UTF-8)
    become \\x.. escapes instead of a UnicodeEncodeError."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        try:
            return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        except UnicodeEncodeError:
            return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _wants_json() -> bool:
    ctx = click.get_current_context(silent=True)
    forwarded = _FORWARDED.get()
    argv = forwarded[2] if forwarded else sys.argv[1:]
    return bool(ctx is not None and ctx.params.get("as_json")) or "--json" in argv


def _fail(message: str, code: int) -> typer.Exit:
    """Print an error (stderr, one line; and ``{"error", "code"}`` on stdout under --json)."""
    message = _printable(message)
    err.print(f"[bold red]error:[/] {escape(message)}", highlight=False)
    if _wants_json():
        sys.stdout.write(json.dumps({"error": message, "code": code}, ensure_ascii=False) + "\n")
    return typer.Exit(code)


def _os_hint(exc: OSError) -> str:
    """What to do about the operating system errors a user can fix."""
    from ..errors import os_hint
    hint = os_hint(exc)
    return f" ({hint})" if hint else ""


def _run(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except WikimemError as exc:
        raise _fail(str(exc), exc.exit_code) from None
    except OSError as exc:  # a file or folder vanished or is unreadable mid-run: say so, no traceback
        raise _fail(f"{exc.strerror or exc}: {exc.filename or ''}{_os_hint(exc)}", 1) from None
    except KeyboardInterrupt:
        err.print("interrupted")
        raise typer.Exit(130) from None


def one_vault(positional: str | None, option: str | None) -> str | None:
    """The vault of a command that takes it both ways (``wikimem status VAULT`` and ``-V VAULT``);
    two different ones are a usage error rather than a guess."""
    if positional is not None and option is not None and positional != option:
        raise _fail(f"two vaults given: {positional!r} and -V {option!r}; give one", 2)
    return option if option is not None else positional


def _print_warnings(warnings) -> None:
    for w in warnings:
        err.print(f"[yellow]warning:[/] {escape(str(w))}", highlight=False)


def _version(value: bool) -> None:
    if value:
        out.print(f"wikimem {__version__}")
        raise typer.Exit()


_QUIET: contextvars.ContextVar[bool] = contextvars.ContextVar("wikimem_quiet", default=False)


def quiet_mode() -> bool:
    """``wikimem -q COMMAND``: only errors, no progress display."""
    return _QUIET.get()


@app.callback()
def _main(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Show the version."),
    verbose: int = typer.Option(0, "--verbose", "-v", count=True, help="More log output (-vv for debug)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Only errors."),
) -> None:
    _QUIET.set(quiet)
    level = logging.ERROR if quiet else (logging.WARNING, logging.INFO, logging.DEBUG)[min(verbose, 2)]
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)


def invoke(argv: list[str] | None = None) -> int:
    """Run one command line -> its exit code (``main``, and a warm process answering a forwarded one)."""
    try:
        app(args=argv, prog_name="wikimem")
        return 0
    except SystemExit as exc:
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    except typer.Exit as exc:  # raised outside a command (the --json error line is already out)
        return exc.exit_code
    except WikimemError as exc:  # errors raised while typer builds options
        return _fail(str(exc), exc.exit_code).exit_code
    except Exception as exc:  # a bug: one line and exit 1, never a traceback (-vv logs it)
        logging.getLogger(__name__).debug("unexpected error", exc_info=True)
        from ..stores.failures import in_words
        refused = in_words(exc)  # a database gone mid-command, a privilege refused (the GRANT): exit 2, not a bug
        if refused is not None:
            return _fail(str(refused), refused.exit_code).exit_code
        return _fail(f"unexpected {type(exc).__name__}: {exc} (a wikimem bug: please report it; "
                     "-vv shows the traceback)", 1).exit_code


ONE_SHOT = False  # this process runs one command and exits (``main``), not a test runner nor a warm server


def one_shot() -> bool:
    return ONE_SHOT


def main() -> None:
    global ONE_SHOT
    ONE_SHOT = True
    sys.exit(invoke())


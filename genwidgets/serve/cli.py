"""``genwidgets serve``: run the class gateway, and manage its keys, groups and usage.

The teacher's upstream key comes from ``GENWIDGETS_UPSTREAM_KEY`` (or
``GENWIDGETS_API_KEY``) or a prompt, never from a flag, which would show in ``ps`` and in
the shell's history. A student's key is printed once, when made or rotated
(docs/decisions.md#serve-keys).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import datetime
import getpass
import io
import json
import math
import os
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from .._config import DEMO_KEY, Secret, hide_userinfo
from .._formats import spreadsheet_cell
from .._html import Html, join, tag
from ..errors import GenwidgetsError, PayloadError
from .budgets import (
    HOLDS,
    LOST_AFTER,
    STALE_SENDING,
    clear_hold,
    holding_creates,
    price_table,
    resolve_unknown,
    tasks_of,
)
from .config import ServeConfig
from .db import KINDS, Database
from .keys import add_group, add_key, add_keys, list_keys, revoke_key, rotate_key, set_caps
from .sweep import give_up_sending
from .upstream import TIMEOUT, Upstream
from .usage import usage, usage_csv

__all__ = ["JSON_FLAG", "add_serve_arguments", "say", "serve"]

ENV_UPSTREAM_KEY = "GENWIDGETS_UPSTREAM_KEY"
ENV_DATABASE = "GENWIDGETS_SERVE_DATABASE"
DEFAULT_DATABASE = "genwidgets-class.db"
#: ``--upstream simulator``: the embedded simulator with its demo key, to try it out
SIMULATOR = "simulator"


#: ``--json`` (the outcome as JSON, :func:`say`): a parent of each command that takes it
JSON_FLAG = argparse.ArgumentParser(add_help=False)
JSON_FLAG.add_argument("--json", action="store_true", help="print JSON")


def _caps(parser: argparse.ArgumentParser) -> None:
    for kind, flag, text in (
        ("money", "--budget", "a cap in money (needs --prices on serve)"),
        ("tasks", "--tasks", "a cap on tasks"),
        ("images", "--images", "a cap on billed images"),
        ("prompts", "--prompts", "a cap on billed imgM prompts"),
        ("video_seconds", "--video-seconds", "a cap on billed video seconds"),
        ("speech_characters", "--speech-characters", "a cap on speech characters"),
    ):
        parser.add_argument(flag, dest=f"cap_{kind}", type=float, help=text)


def _caps_of(args: argparse.Namespace) -> dict[str, float | None]:
    return {kind: getattr(args, f"cap_{kind}") for kind in KINDS}


def _key_options(parser: argparse.ArgumentParser) -> None:
    """The options of a key that ``keys add`` sets and ``keys set`` changes."""
    parser.add_argument("--endpoints", help="comma-separated endpoints it may use (default: all)")
    parser.add_argument("--expires", help="an ISO date or time after which it stops working")
    parser.add_argument(
        "--max-running",
        type=int,
        help="its own cap on unfinished tasks, 1 or more (default: serve's --max-running)",
    )


def _key_options_of(args: argparse.Namespace) -> dict[str, Any]:
    endpoints = [e.strip() for e in args.endpoints.split(",")] if args.endpoints else None
    return {
        "endpoints": endpoints,
        "expires_at": _expiry(args.expires),
        "max_running": args.max_running,
    }


def _seconds(text: str) -> float:
    """``--timeout``: seconds more than 0 (0 does not mean "no timeout", as its
    neighbours' 0 means no cap: each create was made upstream, then called unknown)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"seconds more than 0, not {text}")
    return value


def _cap(kind: type[int] | type[float]) -> Callable[[str], float]:
    """A cap's flag: a number 0 or more, 0 for no cap (a negative one refused every
    create, or every request after the first)."""

    def read(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            value = -1
        if not (math.isfinite(value) and value >= 0):
            what = "a whole number" if kind is int else "a number"
            raise argparse.ArgumentTypeError(f"{what}, 0 or more (0: no cap), not {text}")
        return value

    return read


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--database",
        default=os.environ.get(ENV_DATABASE, DEFAULT_DATABASE),
        help=f"a SQLite file or postgresql://... (default {DEFAULT_DATABASE})",
    )
    parser.add_argument("--upstream", help=f"the gateway to forward to, or '{SIMULATOR}'")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=8766, help="port (0: a free one)")
    parser.add_argument(
        "--prices",
        help='a JSON file of prices, or the table itself: {"ENDPOINT": {"per_image": 0.04}}',
    )
    parser.add_argument(
        "--max-running", type=_cap(int), default=8, help="unfinished tasks per key (0: no cap)"
    )
    parser.add_argument(
        "--rate", type=_cap(float), default=20.0, help="requests a second per key (0: no cap)"
    )
    parser.add_argument(
        "--timeout", type=_seconds, default=TIMEOUT, help="seconds to wait upstream (more than 0)"
    )
    parser.add_argument(
        "--upstream-rate",
        type=_cap(float),
        default=0.0,
        help="creates a second sent upstream, in turn by key (0: no cap)",
    )
    parser.add_argument(
        "--prefix",
        default=os.environ.get("JUPYTERHUB_SERVICE_PREFIX", ""),
        help="a path to serve under (default: JupyterHub's service prefix)",
    )
    commands = parser.add_subparsers(dest="serve_command", metavar="COMMAND")
    keys = commands.add_parser("keys", help="add, list, revoke, rotate students' keys")
    actions = keys.add_subparsers(dest="keys_command", required=True, metavar="ACTION")
    add = actions.add_parser("add", help="make a key; its token is shown once", parents=[JSON_FLAG])
    add.add_argument("name")
    _caps(add)
    add.add_argument("--group", help="the group (class) it spends from too")
    add.add_argument("--admin", action="store_true", help="an admin key (the /admin page)")
    _key_options(add)
    change = actions.add_parser(
        "set", help="change a key's caps (raise or lower its budget) and options"
    )
    change.add_argument("name")
    _caps(change)
    _key_options(change)
    for name, text in (("revoke", "stop a key at once"), ("rotate", "a new token, same budget")):
        actions.add_parser(name, help=text, parents=[JSON_FLAG]).add_argument("name")
    actions.add_parser("list", help="every key (never a token)", parents=[JSON_FLAG])
    roster = actions.add_parser("roster", help="a key per row of a CSV with a 'name' column")
    roster.add_argument("csv", help="the roster")
    roster.add_argument("--out", required=True, help="folder for keys.csv and handout.html")
    roster.add_argument("--url", default="", help="the class gateway's address for the handout")
    roster.add_argument("--group")
    _caps(roster)
    groups = commands.add_parser("groups", help="make a group or change its caps")
    groups.add_argument("name")
    _caps(groups)
    groups.add_argument(
        "--cache-seconds",
        type=int,
        help="answer identical seeded creates from the first for this long (0: off)",
    )
    tasks = commands.add_parser(
        "tasks", help="list tasks; settle a create of unknown outcome", parents=[JSON_FLAG]
    )
    tasks.add_argument("--state", help="only this state (unknown, open, done, failed, ...)")
    tasks.add_argument("--key", help="only this key's")
    tasks.add_argument("--settle", metavar="TASK_ID", help="settle this unknown create...")
    made = tasks.add_mutually_exclusive_group()
    made.add_argument("--made", action="store_true", help="...upstream made it: stays charged")
    made.add_argument("--not-made", action="store_true", help="...it did not: released")
    commands.add_parser("usage", help="spend against budget per key", parents=[JSON_FLAG])
    hold = commands.add_parser(
        "hold",
        help="show or clear the holds on creates and sweeps after upstream's rate limit",
        parents=[JSON_FLAG],
    )
    hold.add_argument(
        "--clear",
        action="store_true",
        help="upstream takes requests again: every server process sends creates and sweeps at once",
    )


def _expiry(text: str | None) -> float | None:
    """``--expires`` as a time (UTC unless it says otherwise); one already past is refused:
    it would make a key that never works."""
    if not text:
        return None
    try:
        when = datetime.datetime.fromisoformat(text)
    except ValueError:
        raise GenwidgetsError(
            f"--expires {text!r} is not a date or time: give an ISO one, 2027-02-01 or "
            "2027-02-01T18:00 (UTC unless it says, as 2027-02-01T18:00+01:00)"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.timezone.utc)
    if when.timestamp() <= time.time():
        raise GenwidgetsError(f"--expires {text} is past: give a date or time to come")
    return when.timestamp()


def say(args: argparse.Namespace, data: Any, text: str, code: int = 0) -> int:
    """``data`` as JSON with ``--json``, else ``text`` (every command of ``genwidgets``
    says its outcome so); the exit status ``code``."""
    print(json.dumps(data, default=str) if getattr(args, "json", False) else text)
    return code


def _keys(db: Database, args: argparse.Namespace) -> int:
    action = args.keys_command
    if action == "add":
        options = _key_options_of(args)
        token = add_key(
            db, args.name, _caps_of(args), group=args.group, admin=args.admin, **options
        )
        say(
            args,
            {"name": args.name, "key": token},
            f"{args.name}: {token}\n(shown once: only its hash is kept)",
        )
    elif action == "set":
        set_caps(db, args.name, _caps_of(args), **_key_options_of(args))
        say(args, {"name": args.name}, f"{args.name}: changed")
    elif action == "rotate":
        token = rotate_key(db, args.name)
        say(args, {"name": args.name, "key": token}, f"{args.name}: {token}\n(shown once)")
    elif action == "revoke":
        revoke_key(db, args.name)
        say(args, {"name": args.name, "revoked": True}, f"{args.name}: revoked")
    elif action == "list":
        found = [k.describe() for k in list_keys(db)]
        lines = [
            f"{k['name']}\t{k['group'] or '-'}\t{'revoked' if k['revoked'] else 'active'}\t"
            f"caps {k['caps']}\theld {k['held']}\tmax running {k['max_running'] or 'as serve'}"
            for k in found
        ]
        say(args, {"keys": found}, "\n".join(lines) or "no keys")
    else:
        return _roster(db, args)
    return 0


#: The handout's look: a constant of this module, never data.
_HANDOUT_STYLE = Html(
    ".card{border:1px dashed #999;padding:8px;margin:8px;page-break-inside:avoid}"
)


def _roster(db: Database, args: argparse.Namespace) -> int:
    """A key per roster row, with keys.csv (name, key) and a printable handout, both new
    files: written before the keys commit, so no key is made whose token is not written
    (a name taken, a file there already, a full disk)."""
    names = _roster_names(args.csv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "keys.csv", out / "handout.html"]

    def write(made: list[tuple[str, str]]) -> None:
        texts = (_keys_csv(made), _handout(made, args.url))
        for handle, text, path in zip(opened, texts, paths, strict=True):
            try:
                handle.seek(0)
                handle.truncate()
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
            except OSError as exc:  # the file's fault, not the database's
                raise GenwidgetsError(f"{path} could not be written ({exc}): no key made") from exc

    with contextlib.ExitStack() as files:
        opened: list[Any] = []
        try:
            for path in paths:  # only their owner reads them, and none is written over
                try:
                    made_file = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                except FileExistsError:
                    raise GenwidgetsError(
                        f"{path} exists (a roster never writes over one, whose keys may be "
                        "in use): move it away or give another --out; no key made"
                    ) from None
                opened.append(
                    files.enter_context(open(made_file, "w", newline="", encoding="utf-8"))
                )
            made = add_keys(db, names, _caps_of(args), group=args.group, then=write)
        except BaseException:
            for path in paths[: len(opened)]:
                path.unlink(missing_ok=True)
            raise
    print(f"{len(made)} keys made: {paths[0]}, {paths[1]} (keep them private)")
    return 0


def _roster_names(path: str) -> list[str]:
    """The names of a roster CSV's ``name`` column, found in any case, after a BOM (Excel's
    "CSV UTF-8"); a roster without that column or without a name is refused, before
    anything is made or written."""
    with open(path, newline="", encoding="utf-8-sig") as handle:
        reader = csv.DictReader(handle)
        columns = [c for c in reader.fieldnames or [] if c is not None]
        column = next((c for c in columns if c.strip().lower() == "name"), None)
        if column is None:
            found = ", ".join(repr(c) for c in columns) or "none"
            raise GenwidgetsError(f"{path} has no 'name' column (its columns: {found})")
        names = [row[column].strip() for row in reader if (row.get(column) or "").strip()]
    if not names:
        raise GenwidgetsError(f"{path} has no name under its {column!r} column: no key made")
    return names


def _keys_csv(made: list[tuple[str, str]]) -> str:
    text = io.StringIO()
    writer = csv.writer(text)
    writer.writerow(["name", "key"])
    writer.writerows((spreadsheet_cell(n), k) for n, k in made)
    return text.getvalue()


def _handout(made: list[tuple[str, str]], url: str) -> str:
    cards = (
        tag(
            "div",
            {"class": "card"},
            tag("h2", None, name),
            tag("p", None, "GENWIDGETS_BASE_URL=", url),
            tag("p", None, "GENWIDGETS_API_KEY=", tag("code", None, key)),
        )
        for name, key in made
    )
    return "<!doctype html>" + join(
        [
            tag("meta", {"charset": "utf-8"}),
            tag("title", None, "Class keys"),
            tag("style", None, _HANDOUT_STYLE),
            *cards,
        ]
    )


#: how the listing shows a create ``sending`` past its time (``budgets.tasks_of``)
STALE_WORDS = "stale (would be given up)"


def _tasks(db: Database, args: argparse.Namespace) -> int:
    """``serve tasks``: the listing only reads (a teacher looking changes nothing, and a
    read-only file or a replica lists), showing a create ``sending`` past its time as
    :data:`STALE_WORDS`; ``--settle`` changes state, and gives such creates up first."""
    if args.settle and not (args.made or args.not_made):
        raise GenwidgetsError("say what upstream did: --made or --not-made")
    if args.settle:
        # a create left sending past its time is given up here, as the sweep would: with
        # no server running again (the class is over) it was refused for ever
        db.run(partial(give_up_sending, now=time.time()))
        if not resolve_unknown(db, args.settle, made=args.made):
            row = db.run(
                lambda tx: tx.one(
                    "SELECT state, created_at FROM tasks WHERE id = ?", (args.settle,)
                ),
                write=False,
            )
            if row is None:
                raise GenwidgetsError(f"no task {args.settle!r}: see serve tasks --state unknown")
            why = _why(row[0], max(0.0, row[1] + STALE_SENDING - time.time()))
            raise GenwidgetsError(f"task {args.settle!r} is {row[0]}, not unknown: {why}")
        say(args, {"id": args.settle, "made": args.made}, f"{args.settle}: settled")
        return 0
    found = tasks_of(db, state=args.state, key=args.key)
    lines = [
        f"{t['id']}\t{t['key']}\t{t['endpoint']}\t{STALE_WORDS if t['stale'] else t['state']}"
        for t in found
    ]
    say(args, {"tasks": found}, "\n".join(lines) or "no tasks")
    return 0


def _why(state: str, sending_left: float = STALE_SENDING) -> str:
    """Why a task that is not ``unknown`` cannot be settled, by its state."""
    if state == "sending":
        minutes = max(1, math.ceil(sending_left / 60))
        return (
            "it is still being sent, or its server process stopped mid-send; it becomes "
            f"unknown {STALE_SENDING / 60:g} minutes after its create, in {minutes} "
            f"minute{'s' * (minutes != 1)}, then settle it. Nothing changed"
        )
    if state in ("open", "cancelling"):
        return (
            "upstream has it and the class gateway follows it (a poll or the sweep settles "
            "it as it ends); it becomes unknown if upstream answers only errors about it "
            f"for {LOST_AFTER / 60:g} minutes. Nothing changed"
        )
    return "it was settled (by upstream's answer, or by a settle before). Nothing changed"


def _hold(db: Database, args: argparse.Namespace) -> int:
    """``serve hold [--clear]``: upstream's rate limits, held in the database (every
    process of the class honours them), shown, or cleared by the teacher: one on creates
    (a create answered 429), one on the sweep's status requests (a status answered 429;
    while it lasts, tasks nobody polls do not settle)."""
    held = {
        what: clear_hold(db, what=what) if args.clear else holding_creates(db, what=what)
        for what in HOLDS
    }
    if not any(held.values()):
        text = "creates and sweeps are not held back"
    elif args.clear:
        text = "cleared: " + "; ".join(
            f"{HOLDS[what]} go upstream again ({left:.0f} s of the hold were left)"
            for what, left in held.items()
            if left
        )
    else:
        text = "\n".join(
            f"{HOLDS[what]} are held back for {left:.0f} s more (upstream's rate limit)"
            for what, left in held.items()
            if left
        )
        text += "\nif upstream answers again sooner: serve hold --clear (ends both)"
    shown = {what: 0.0 if args.clear else left for what, left in held.items()}
    cleared = [what for what, left in held.items() if args.clear and left]
    return say(
        args,
        {
            "held_seconds": shown["creates"],
            "holds": shown,
            "cleared": args.clear,
            "cleared_holds": cleared,
        },
        text,
    )


def _upstream_key(upstream: str) -> Secret:
    if upstream == SIMULATOR:
        return Secret(DEMO_KEY)
    value = os.environ.get(ENV_UPSTREAM_KEY) or os.environ.get("GENWIDGETS_API_KEY")
    if not value and sys.stdin.isatty():
        value = getpass.getpass("the upstream gateway's API key (not echoed): ")
    if not value:
        raise GenwidgetsError(f"no upstream key: set {ENV_UPSTREAM_KEY} (never a flag)")
    return Secret(value)


#: what ``--prices`` takes, as its refusals say it
_PRICES_FORM = '{"ENDPOINT": {"per_image": 0.04}}'
#: what may come before an inline table: a BOM (an editor's) and blanks
_BEFORE_JSON = "\ufeff \t\r\n\f\v"


def _prices(given: str) -> dict[str, dict[str, float]]:
    """``--prices``: a JSON file's table, or the table itself when the text starts with
    '{' or '[' after an optional BOM and blanks (--help showed one, and the teacher was
    told Python's ``[Errno 2]``; an array or a BOM was taken as a file's name), checked
    (:func:`~.budgets.price_table`) before anything is served: an array is no table, and
    JSON nested too deeply to read is said so (it was a bare RecursionError)."""
    body = given.lstrip(_BEFORE_JSON)
    inline = body.startswith(("{", "["))
    where = "--prices" if inline else f"--prices {given}"
    try:  # a file's BOM is read past, as an inline one
        text = body if inline else Path(given).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else "not UTF-8 text"
        raise GenwidgetsError(
            f"{where}: cannot read it ({why}): give a JSON file of prices, as "
            f"{_PRICES_FORM}, or that table itself"
        ) from None
    try:
        table = json.loads(text)
    except RecursionError:
        raise GenwidgetsError(
            f"{where}: JSON nested too deeply to read, no price table: give one as {_PRICES_FORM}"
        ) from None
    except ValueError as exc:
        raise GenwidgetsError(f"{where}: not JSON ({exc})") from None
    if isinstance(table, list):
        raise GenwidgetsError(
            f"{where}: a JSON array, where a table is expected: give one as {_PRICES_FORM}"
        )
    try:
        return price_table(table)
    except (PayloadError, ValueError) as exc:
        raise GenwidgetsError(f"{where}: {exc}") from None


def _run(db: Database, args: argparse.Namespace) -> int:
    from ..simulator.server import embedded  # noqa: PLC0415 - only `--upstream simulator` starts one
    from .server import ClassServer  # noqa: PLC0415 - uvicorn loads only to serve

    if not args.upstream:
        raise GenwidgetsError(f"say where to forward: --upstream URL (or '{SIMULATOR}')")
    prices = _prices(args.prices) if args.prices else {}
    url = embedded().base_url if args.upstream == SIMULATOR else args.upstream
    config = ServeConfig(
        upstream=Upstream(url, _upstream_key(args.upstream), timeout=args.timeout),
        database=db,
        prices=prices,
        max_running=args.max_running or None,
        rate=args.rate or None,
        prefix=args.prefix,
        upstream_rate=args.upstream_rate or None,
    )
    server = ClassServer(config, host=args.host, port=args.port)
    ready = lambda: print(f"genwidgets serve: {server.base_url} -> {url}", flush=True)  # noqa: E731 - a one-line callback
    server.serve_forever(on_ready=ready)
    return 0


#: the commands that make a class's first rows (and its SQLite file); the others read or
#: change what is there
_FIRST_COMMANDS = {None, "groups", ("keys", "add"), ("keys", "roster")}


def _existing(db: Database, args: argparse.Namespace) -> None:
    """A command that reads or changes the class's keys and tasks refuses a SQLite file
    that is not there: the default is relative to the working folder, and ``serve hold``
    from another one made an empty database and said "not held back"."""
    command = args.serve_command
    if command == "keys":
        command = ("keys", args.keys_command)
    if db.path is None or command in _FIRST_COMMANDS or db.path.exists():
        return
    raise GenwidgetsError(
        f"no class database at {hide_userinfo(str(db.path))}: give --database (or "
        f"{ENV_DATABASE}) as the class's server has it"
    )


def serve(args: argparse.Namespace) -> int:
    """``genwidgets serve ...``; the exit status."""
    try:  # a --database that cannot be read (it would leak, or make the wrong file)
        db = Database(args.database)
    except GenwidgetsError as exc:
        print(f"genwidgets serve: {exc}", file=sys.stderr)
        return 2
    try:
        _existing(db, args)
        db.migrate()
        if args.serve_command == "keys":
            return _keys(db, args)
        if args.serve_command == "groups":
            add_group(db, args.name, _caps_of(args), cache_seconds=args.cache_seconds)
            print(f"group {args.name}: saved")
            return 0
        if args.serve_command == "tasks":
            return _tasks(db, args)
        if args.serve_command == "hold":
            return _hold(db, args)
        if args.serve_command == "usage":
            report = usage(db)
            print(json.dumps(report, indent=2) if args.json else usage_csv(report), end="")
            return 0
        return _run(db, args)
    except (GenwidgetsError, OSError, ValueError) as exc:
        print(f"genwidgets serve: {exc}", file=sys.stderr)
        return 2
    finally:
        db.close()

"""``genwidgets batch FILE --endpoint E ...``: a batch from the command line.

The same plan as ``gw.batch`` is printed, then confirmed: asked on a terminal, given
by ``--yes``, refused when stdin is not a terminal and ``--yes`` is missing. Progress
is a tqdm bar on a terminal and quiet lines otherwise; the manifest is written as it
goes. Exit status: 0 every row done, 1 some row not done (failed, cancelled, unknown,
left running, not sent), 2 refused (bad input, over budget, not confirmed), 130
interrupted (the same command resumes; ``genwidgets.cli.Stopping`` makes it 143 for
SIGTERM, 141 for a reader gone). docs/decisions.md#batch-cli.
"""

from __future__ import annotations

import argparse
import functools
import json
import re
import sys
from pathlib import Path
from typing import Any, TextIO

from .._client import Client
from .._config import ENV_API_KEY, ENV_BASE_URL, shown_path
from .._formats import terminal_text
from ..catalog import endpoints
from ..errors import (
    BudgetExceeded,
    EndpointNotFound,
    GatewayError,
    GenwidgetsError,
    NotRecorded,
    PayloadError,
)
from .batch import Batch
from .batch_open import ON_TIMEOUT, open_batch
from .budget import MONEY
from .cost import UNITS
from .outfiles import check_out

__all__ = [
    "EXIT_DONE",
    "EXIT_NOT_DONE",
    "EXIT_REFUSED",
    "add_batch_arguments",
    "run_batch",
    "say_error",
]

EXIT_DONE, EXIT_NOT_DONE, EXIT_REFUSED, EXIT_INTERRUPTED = 0, 1, 2, 130
#: rows listed one by one after a batch (failed, unknown); the rest are counted
LISTED = 20


def _pair(text: str, what: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}")
    return name.strip(), value


def _set(text: str) -> tuple[str, str]:
    return _pair(text, "FIELD=TEMPLATE (e.g. prompt='{text}, watercolor')")


def _number(value: str, text: str) -> float:
    try:
        return float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} in {text!r} is not a number") from None


def _budget(text: str) -> tuple[str, float]:
    kind, value = _pair(text, f"KIND=N with KIND one of {', '.join([*UNITS, MONEY])}")
    return kind, _number(value, text)


def _price(text: str) -> tuple[str, str, float]:
    where, value = _pair(text, "ENDPOINT:PER_UNIT=PRICE (e.g. vidA-2-0:per_second=0.08)")
    endpoint, sep, key = where.rpartition(":")
    if not sep or not endpoint:
        raise argparse.ArgumentTypeError(f"{text!r} is not ENDPOINT:PER_UNIT=PRICE")
    return endpoint, key, _number(value, text)


def _once(flag: str, given: list[tuple[str, Any]]) -> dict[str, Any]:
    """A repeatable flag's NAME=VALUE pairs as a dict, a name given twice refused: the
    last kept silently would send (and bill) what the user did not mean."""
    found: dict[str, Any] = {}
    for name, value in given:
        if name in found:
            raise ValueError(
                f"{flag} gives {name} twice ({name}={found[name]}, then {name}={value}): "
                "give it once, with the value meant"
            )
        found[name] = value
    return found


def add_batch_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="the rows: a .csv file (header row first) or a .jsonl file")
    parser.add_argument(
        "--endpoint",
        required=True,
        help="the endpoint every row goes to (a column named 'endpoint' sends a row "
        f"elsewhere): {', '.join(e.id for e in endpoints())}",
    )
    parser.add_argument(
        "--set",
        dest="template",
        action="append",
        type=_set,
        default=[],
        metavar="FIELD=TEMPLATE",
        help="a field from the row's columns, e.g. "
        "--set prompt='{text}, watercolor' --set seed='{seed}' (repeatable; columns "
        "named like fields fill the fields not set)",
    )
    parser.add_argument("--out", required=True, help="the folder for files and manifests")
    parser.add_argument(
        "--id",
        help="the batch's name (default: derived from the rows, so the same command resumes it)",
    )
    parser.add_argument(
        "--concurrency", type=int, default=None, help="creates in flight at once (default 4)"
    )
    caps = f"a cap: {', '.join(UNITS)}, or money with --price (repeatable)"
    priced = f"a price for --budget money=N (PER_UNIT: {', '.join(UNITS.values())})"
    for flag, parse, metavar, said in (
        ("--budget", _budget, "KIND=N", caps),
        ("--price", _price, "ENDPOINT:PER_UNIT=PRICE", priced),
    ):
        parser.add_argument(
            flag, action="append", type=parse, default=[], metavar=metavar, help=said
        )
    parser.add_argument(
        "--timeout", type=float, default=None, help="seconds a row may take once created"
    )
    parser.add_argument(
        "--on-timeout",
        choices=ON_TIMEOUT,
        default="cancel",
        help="past --timeout: cancel the row at the gateway, or leave it running",
    )
    parser.add_argument(
        "--filenames",
        default=None,
        help="the file name template (default {row:05d}-{slug}-{seed}.{ext})",
    )
    parser.add_argument(
        "--retry-failed",
        action="store_true",
        help="send again the rows the gateway failed (a new, billed create each); rows "
        "whose outcome is unknown are never sent again",
    )
    parser.add_argument(
        "--yes",
        action="store_true",
        help="send without asking (needed when stdin is not a terminal)",
    )
    parser.add_argument(
        "--json", action="store_true", help="print one JSON object at the end instead of text"
    )


#: a value the library's advice quotes (``repr`` of a path or an id: either quote)
_QUOTED = r"""('[^']*'|"[^"]*")"""
#: the library's advice in Python (``out=``, ``client.history()``) and the command's
#: flags and words, each a whole phrase as the library writes it, so a gateway's text or a
#: user's file name (a rows file named ``id=``) is never rewritten; a grown rows file into
#: the same folder was told ``id='X'`` to resume batch X, which its rows no longer are
#: (refused again): docs/decisions.md#batch-cli
FLAG_WORDS = (
    (
        rf"give out= another folder, or id={_QUOTED} to resume that batch",
        r"give --out another folder for these rows (batch \1 resumes in this one only from "
        r"the rows and --set it was planned with)",
    ),
    (rf"\bgive out={_QUOTED} \(or none\) to resume it", r"give --out \1 (or none) to resume it"),
    (r"\bgive out= (a folder you can write|another folder)", r"give --out \1"),
    (r"\b([Gg]ive|or) another id= ", r"\1 another --id "),
    (r"(?:batch\.)?retry_failed\(\) \((genwidgets batch --retry-failed)\)", r"\1"),
    (r"running the batch again or batch\.write_files\(\) writes", "running the batch again writes"),
    (r"\b([Ll]ook (?:for it )?with|Check) client\.history\(\)", r"\1 genwidgets history"),
    (
        r"\w+\.submit\(\) \(the view's Submit or Go on, or the same command again\)",
        "the same command is run again",
    ),
    (r"or the same rows and template to resume it", "or the same rows and --set to resume it"),
    (r"\(gw\.endpoints\(\) lists them\)", "(genwidgets batch --help lists them)"),
    (
        r"Wait again with job\.result\(\), or stop it with job\.cancel\(\)\.",
        "genwidgets result ID --wait SECONDS waits again; genwidgets cancel ID stops it.",
    ),
    (r"Wait again with job\.result\(\)\.", "genwidgets result ID --wait SECONDS waits again."),
    (r" or pass base_url=\.\.\. \(with neither,", " (with neither,"),
    (  # a home that cannot record a batch (lab.batch_store.unrecorded): a command has
        # no kernel and no batch to hold; it opens its ledger afresh each time
        r"restart the kernel \(a client opens its ledger when it is made\), then run it "
        r"again|send it again \(run the cell again, or batch\.submit\(\) on a batch you hold\)",
        "run the same command again",
    ),
    (
        r"could not be opened when this client was made",
        "could not be opened when this command started",
    ),
)  # the transport's failures are in words where they are made (protocol.body.failure_words)


def command_words(text: str) -> str:
    """``text`` of the library with its advice in the command's flags (:data:`FLAG_WORDS`):
    only the library's own advice phrases change, whatever else the text quotes."""
    for python, flags in FLAG_WORDS:
        text = re.sub(python, flags, text)
    return text


def _answered(exc: BaseException | None) -> bool:
    """Whether ``exc`` is the gateway's answer (its text as it came), not the library's
    (an unknown endpoint, no connection: said in the command's words)."""
    return isinstance(exc, GatewayError) and exc.status_code is not None


def error_words(exc: BaseException) -> str:
    """An error's text for a command: the library's advice in the command's words
    (:func:`command_words`), never Python's; a gateway's answer, as it came."""
    return str(exc) if _answered(exc) else command_words(str(exc))


def say_error(
    command: str,
    message: str,
    code: int,
    *,
    as_json: bool,
    exc: BaseException | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    **about: Any,
) -> int:
    """How every command says it did not do what was asked, on stderr or (``--json``) as
    one JSON object on stdout; returns ``code``, its exit status. docs/decisions.md#batch-cli."""
    if not _answered(exc):  # a gateway's text is shown as it came
        message = command_words(message)
    if not as_json:
        print(f"genwidgets {command}: {message}", file=stderr or sys.stderr)
        return code
    record: dict[str, Any] = {"error": message, "command": command, **about}
    if exc is not None:
        record["error_type"] = type(exc).__name__
        if isinstance(exc, PayloadError):
            record["problems"] = [p | {"msg": command_words(str(p["msg"]))} for p in exc.errors]
    print(json.dumps(record, default=str), file=stdout or sys.stdout)
    return code


#: the command a next step names first (``genwidgets batch --retry-failed``)
_COMMAND = re.compile(r"genwidgets [a-z]+(?: --[a-z-]+)*")


def _next_step(row: Any) -> str:
    """A row's next step in the command's words: the row's own (one source, so a failed
    row of the embedded simulator says "free" here as in the manifest and the view)."""
    return command_words(row.next_step)


def _not_repeated(error: str | None, step: str) -> str:
    """``step``, unless ``error`` already gave that advice (names its command)."""
    named = _COMMAND.match(step)
    return "" if named and error and named.group() in error else step


def _report(batch: Batch) -> dict[str, Any]:
    """The batch's outcome, the one object ``--json`` prints and the text lines say: its
    advice (``next``, ``stopped``, ``problem``, a row's ``error``) in the command's words."""
    snap = batch.snapshot()
    return {
        "id": batch.id,
        "out": str(batch.out),
        "manifest": str(batch.manifest.csv),
        "counts": {k: v for k, v in batch.counts().items() if v},
        "spent": snap.billed,  # what the rows done bill
        "reserved": snap.spent,  # what the rows sent hold from the budget
        "stopped": batch.stopped and command_words(batch.stopped),
        "paused": batch.paused is not None,
        "problem": snap.problem and command_words(snap.problem),
        "not_done": [
            {
                "row": r.index,
                "line": r.line,
                "status": r.status,
                "request_id": r.request_id,
                "error": r.error and command_words(r.error),
                "next": _next_step(r),
            }
            for r in batch.rows
            if r.status != "done"
        ],
    }


def _asked_on(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> TextIO | None:
    """Where the confirmation question goes: a terminal, where the person who must answer
    sees it. stdout, unless it holds the JSON or is redirected (``> log.txt``: the question
    went into the file and the command waited for an answer nobody was asked); else
    stderr; else none, and the command refuses as without a terminal (``--yes``)."""
    if stdout.isatty() and not args.json:
        return stdout
    return stderr if stderr.isatty() else None


def _say_plan(batch: Batch, embedded: bool, to_send: int, file: TextIO) -> None:
    """The plan a confirmation is asked for: the batch, its folder, its rows and cost."""
    print(f"batch {batch.id} → {shown_path(batch.out)}", file=file)
    if embedded:  # a forgotten export must not look like the real gateway
        print(
            f"simulated: neither {ENV_BASE_URL} nor {ENV_API_KEY} is set, so the "
            "embedded simulator answers and nothing is billed",
            file=file,
        )
    print(batch.plan.summary(), file=file)
    if to_send < len(batch.rows):
        print(f"resumed: {len(batch.rows) - to_send} row(s) already sent", file=file)


def run_batch(
    args: argparse.Namespace,
    *,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """The ``batch`` command (see the module docstring); returns the exit status."""
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    error = functools.partial(say_error, "batch", as_json=args.json, stdout=stdout, stderr=stderr)
    try:
        template = _once("--set", args.template)
        budget: Any = _once("--budget", args.budget) or None
        _once("--price", [(f"{endpoint}:{key}", value) for endpoint, key, value in args.price])
    except ValueError as exc:
        return error(f"refused, nothing sent: {exc}", EXIT_REFUSED, exc=exc, id=args.id)
    # a name not UTF-8 (byte 0xff: a lone surrogate) the batch's store cannot keep, named
    odd = [p for p in Path(args.out).absolute().parts if re.search("[\ud800-\udfff]", p)]
    if odd:
        said = (
            f"refused, nothing sent: --out {shown_path(args.out)} names a folder whose path "
            f"is not UTF-8 (the name {odd[0]}), which the batch's record cannot keep; give "
            "another folder"
        )
        return error(said, EXIT_REFUSED, id=args.id)
    prices: dict[str, dict[str, float]] = {}
    for endpoint, key, value in args.price:
        prices.setdefault(endpoint, {})[key] = value
    if budget is not None and set(budget) == {MONEY}:
        budget = budget[MONEY]
    try:
        client = Client()
    except ValueError as exc:  # a key with no gateway address, an address that is no URL
        return error(f"not opened, nothing sent: {exc}", EXIT_REFUSED, exc=exc, id=args.id)
    with client:
        try:
            batch = open_batch(
                args.endpoint,
                args.file,
                template or None,
                out=args.out,
                id=args.id,
                budget=budget,
                prices=prices or None,
                concurrency=args.concurrency,
                timeout=args.timeout,
                on_timeout=args.on_timeout,
                client=client,
                filenames=args.filenames,
                record=False,  # nothing recorded, no folder made, until confirmed
            )
        except (PayloadError, BudgetExceeded, EndpointNotFound, ValueError) as exc:
            return error(f"refused, nothing sent: {exc}", EXIT_REFUSED, exc=exc, id=args.id)
        except GenwidgetsError as exc:
            return error(f"not opened, nothing sent: {exc}", EXIT_NOT_DONE, exc=exc, id=args.id)
        retried = len(batch.failed) if args.retry_failed else 0
        to_send = len(batch.waiting()) + retried
        asking = bool(to_send) and not args.yes
        asked = _asked_on(args, stdout, stderr) if asking and stdin.isatty() else None
        # the plan goes to stdout, and where the question goes: the person confirming sees it
        plan_to = [] if args.json else [stdout]
        plan_to += [asked] if asked is not None and asked is not stdout else []
        for stream in plan_to:
            _say_plan(batch, client.embedded, to_send, stream)
        if asking:
            if asked is None:
                where = (
                    "neither stdout nor stderr is a terminal"
                    if stdin.isatty()
                    else "stdin is not a terminal"
                )
                return error(
                    f"refused: {to_send} row(s) to send and {where} to confirm; pass --yes",
                    EXIT_REFUSED,
                    id=batch.id,
                    to_send=to_send,
                )
            print(f"Send {to_send} row(s)? [y/N]", end=" ", file=asked, flush=True)
            if stdin.readline().strip().lower() not in ("y", "yes"):
                return error("not confirmed, nothing sent", EXIT_REFUSED, id=batch.id)
        try:  # confirmed: the folder made, the id recorded (another plan may hold it now)
            check_out(batch.out, batch.id, known=batch.stored)
            batch.submit()
        except PayloadError as exc:
            return error(f"refused, nothing sent: {exc}", EXIT_REFUSED, exc=exc, id=batch.id)
        except NotRecorded as exc:  # a home that cannot record it: the person must act
            return error(str(exc), EXIT_REFUSED, exc=exc, id=batch.id)
        except GenwidgetsError as exc:  # the ledger held by another process: its advice said
            return error(f"not sent: {exc}", EXIT_NOT_DONE, exc=exc, id=batch.id)
        if retried:
            batch.retry_failed()
        try:
            batch.wait(progress="none" if args.json else "auto", words=command_words)
        except KeyboardInterrupt as stop:  # Ctrl-C, SIGTERM, a reader gone: which, said
            why = str(stop) or "interrupted"
            if not args.json:
                print(file=stderr)  # past the ^C on the terminal's line
            if client.embedded:  # its tasks end with this process
                said = (
                    f"{why}; the embedded simulator ends with this command and its "
                    "tasks with it. The same command again sends the rows never made; add "
                    f"--retry-failed to make the interrupted ones of batch {batch.id} again."
                )
            else:
                said = (
                    f"{why}; tasks already created go on. Run the same command again "
                    f"to resume batch {batch.id}."
                )
            return error(said, EXIT_INTERRUPTED, id=batch.id)
        except GenwidgetsError as exc:
            return error(f"stopped: {exc}", EXIT_NOT_DONE, exc=exc, **_report(batch))
        report = _report(batch)
        if args.json:
            print(json.dumps(report), file=stdout)
        else:
            for row in report["not_done"][:LISTED]:
                where = f"row {row['row']}" + (f" (line {row['line']})" if row["line"] else "")
                line = f"  {where} {row['status']}: {terminal_text(row['error'] or 'not done')}"
                if row["request_id"] and row["request_id"] not in line:
                    line += f" [{row['request_id']}]"
                step = _not_repeated(row["error"], row["next"])
                line += f" → {step}" if step else ""
                print(line, file=stdout)
            if len(report["not_done"]) > LISTED:
                print(f"  … and {len(report['not_done']) - LISTED} more", file=stdout)
            for said in (report["stopped"], report["problem"] and f"trouble: {report['problem']}"):
                if said:
                    print(said, file=stdout)
            print(f"manifest: {shown_path(report['manifest'])}", file=stdout)
        return EXIT_DONE if not report["not_done"] else EXIT_NOT_DONE

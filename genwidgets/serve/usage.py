"""What each student spent against their budget: the teacher's view, as JSON rows
(``genwidgets serve usage --json``, ``/admin/usage.json``), CSV and an HTML table, and
the teacher's page at ``/admin`` that serves them behind an admin key (a key made with
``--admin``), sent as the bearer token or, for a browser, as ``?key=`` once, which sets
a cookie scoped to ``/admin``.

``held`` is what counts against the caps: ``spent`` (tasks ended and charged) plus
``reserved`` (tasks sent or unknown, not yet ended). Cells that could be read as a
formula by a spreadsheet are quoted (docs/decisions.md#serve-admin).
"""

from __future__ import annotations

import csv
import io
from functools import partial
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Route

from .._formats import spreadsheet_cell
from .._html import Html, tag
from ..protocol.refusals import bearer, gateway_error
from .app import serve_state
from .budgets import holding_creates
from .db import CAPS_HELD, KINDS, Database, Tx, caps_and_held
from .keys import KeyRecord, caps_shown, find_key, keys_where, to_units

__all__ = ["admin_routes", "usage", "usage_csv", "usage_html"]

#: a key's task counts, as usage() gives them, and their columns
COUNTS = ("tasks", "failed", "cached", "unknown")
_COUNT_COLUMNS = (
    "COUNT(*), SUM(CASE WHEN state = 'failed' THEN 1 ELSE 0 END), "
    "SUM(CASE WHEN cached_from IS NOT NULL THEN 1 ELSE 0 END), "
    "SUM(CASE WHEN state = 'unknown' THEN 1 ELSE 0 END)"
)


def _spent(tx: Tx) -> dict[str, dict[str, Any]]:
    sums = ", ".join(
        f"SUM(CASE WHEN charged = 1 AND state IN ('done', 'cancelled') THEN amt_{k} ELSE 0 END)"
        for k in KINDS
    )
    found: dict[str, dict[str, Any]] = {}
    for row in tx.rows(f"SELECT key_name, {_COUNT_COLUMNS}, {sums} FROM tasks GROUP BY key_name"):
        found[row[0]] = {
            **{c: int(v or 0) for c, v in zip(COUNTS, row[1:5], strict=True)},
            "spent": {k: int(v or 0) for k, v in zip(KINDS, row[5:], strict=True)},
        }
    return found


def usage(db: Database) -> dict[str, Any]:
    """Every key (never a token) with its caps, held, spent and reserved amounts and its
    task counts, and every group with its caps and held amounts, read in one transaction
    (one snapshot, so held, spent and reserved agree)."""

    def read(tx: Tx) -> tuple[Any, list[KeyRecord], list[tuple[Any, ...]]]:
        groups = f"SELECT name, cache_seconds, {CAPS_HELD} FROM groups ORDER BY name"
        return _spent(tx), keys_where(tx, "ORDER BY name"), tx.rows(groups)

    counts, records, rows = db.run(read, write=False)
    keys = []
    for key in records:
        seen = counts.get(key.name) or dict.fromkeys(COUNTS, 0)
        spent = seen.pop("spent", dict.fromkeys(KINDS, 0))
        reserved = {k: key.held[k] - spent[k] for k in KINDS}
        keys.append(
            {
                **key.describe(),
                "spent": {k: to_units(v) for k, v in spent.items() if v},
                "reserved": {k: to_units(v) for k, v in reserved.items() if v},
                **seen,
            }
        )
    groups = [
        {"name": r[0], "cache_seconds": int(r[1]), **caps_shown(*caps_and_held(r[2:]))}
        for r in rows
    ]
    return {"keys": keys, "groups": groups}


COLUMNS = ("name", "group", "revoked", *COUNTS)


def usage_csv(report: dict[str, Any]) -> str:
    """One row per key: the counts, then cap, spent and reserved per kind."""
    out = io.StringIO()
    writer = csv.writer(out)
    header = [*COLUMNS, *(f"{what}_{k}" for k in KINDS for what in ("cap", "spent", "reserved"))]
    writer.writerow(header)
    for key in report["keys"]:
        row = [key[c] for c in COLUMNS]
        for kind in KINDS:
            row += [key["caps"].get(kind), key["spent"].get(kind, 0), key["reserved"].get(kind, 0)]
        writer.writerow([spreadsheet_cell("" if v is None else str(v)) for v in row])
    return out.getvalue()


def _held_of_cap(held: float, cap: float | None) -> str:
    return f"{held:g}" + (f" / {cap:g}" if cap is not None else "")


def _table(head: list[str], rows: list[list[Any]]) -> Html:
    return tag(
        "table",
        None,
        tag("thead", None, tag("tr", None, *(tag("th", None, h) for h in head))),
        tag("tbody", None, *(tag("tr", None, *(tag("td", None, c) for c in row)) for row in rows)),
    )


#: The admin page's look: a constant of this module, never data.
_STYLE = Html(
    "body{font-family:sans-serif;margin:1.5em}td,th{padding:3px 10px;"
    "border-bottom:1px solid #ddd;text-align:left}th{background:#f4f4f4}"
)


def usage_html(
    report: dict[str, Any], held_back: float = 0.0, sweeps_held_back: float = 0.0
) -> str:
    """The admin page: per key, spent and reserved against each cap, and the task counts;
    per group, held against its caps (escaped text, no script); and, while upstream's
    429 to a create holds the class's creates back (or a 429 to a status its sweeps),
    for how long still and how the teacher clears it."""
    keys = report["keys"]
    shown = [
        k
        for k in KINDS
        if any(k in key["caps"] or k in key["spent"] or k in key["reserved"] for key in keys)
    ]
    head = ["student", "group", "state", "tasks", "failed", "demo cache", "unknown"]
    head += [f"{k.replace('_', ' ')}: held / cap" for k in shown]
    rows = []
    for key in keys:
        state = "revoked" if key["revoked"] else "admin" if key["admin"] else "active"
        row: list[Any] = [key["name"], key["group"] or "-", state, *(key[c] for c in COUNTS)]
        for kind in shown:
            held = key["spent"].get(kind, 0) + key["reserved"].get(kind, 0)
            row.append(_held_of_cap(held, key["caps"].get(kind)))
        rows.append(row)
    groups = [
        [
            g["name"],
            g["cache_seconds"] or "off",
            "; ".join(
                f"{k.replace('_', ' ')} {_held_of_cap(g['held'].get(k, 0), g['caps'].get(k))}"
                for k in KINDS
                if k in g["caps"] or k in g["held"]
            )
            or "-",
        ]
        for g in report["groups"]
    ]
    head_of_page = tag(
        "head",
        None,
        tag("meta", {"charset": "utf-8"}),
        tag("title", None, "Class usage"),
        tag("meta", {"http-equiv": "refresh", "content": "10"}),
        tag("style", None, _STYLE),
    )
    body = tag(
        "body",
        None,
        tag("h1", None, "Class usage"),
        tag(
            "p",
            None,
            "Held is what counts against a cap: spent (tasks ended and charged) and reserved "
            "(tasks not yet ended, or whose create had no answer). Refreshed every 10 s. ",
            tag("a", {"href": "admin/usage.csv"}, "CSV"),
            " · ",
            tag("a", {"href": "admin/usage.json"}, "JSON"),
        ),
        *(
            [
                tag(
                    "p",
                    None,
                    f"Upstream refused a create with a rate limit: the class gateway sends no "
                    f"create for {held_back:.0f} s more (students are told to wait as long). "
                    "If upstream takes creates again sooner, clear it: ",
                    tag("code", None, "genwidgets serve --database ... hold --clear"),
                )
            ]
            if held_back > 0
            else []
        ),
        *(
            [
                tag(
                    "p",
                    None,
                    f"Upstream refused a status request with a rate limit: the class gateway "
                    f"asks about no task for {sweeps_held_back:.0f} s more, so tasks nobody "
                    "polls do not end here meanwhile (their places and reservations stay). "
                    "If upstream answers again sooner, clear it: ",
                    tag("code", None, "genwidgets serve --database ... hold --clear"),
                )
            ]
            if sweeps_held_back > 0
            else []
        ),
        tag("h2", None, "Students"),
        _table(head, rows),
        tag("h2", None, "Groups"),
        _table(["group", "demo cache (s)", "held / cap"], groups),
    )
    return "<!doctype html>" + tag("html", None, head_of_page, body)


# --------------------------------------------------------------------------- the page

COOKIE = "gwc_admin"
#: the forms of the report besides the page, at ``/admin/usage.<form>``
FORMS = ("json", "csv")


async def admin(request: Request, form: str = "html") -> Response:
    """The teacher's page, or what it shows as ``json`` or ``csv``, for an admin key."""
    state = serve_state(request)
    token = bearer(request) or request.cookies.get(COOKIE) or request.query_params.get("key", "")
    key = await run_in_threadpool(find_key, state.config.database, token) if token else None
    if key is None or not key.admin or key.refusal():
        return gateway_error(401, "UNAUTHORIZED", "The admin page needs the class's admin key")
    report = await run_in_threadpool(usage, state.config.database)
    held_back = await run_in_threadpool(holding_creates, state.config.database)
    sweeps_held_back = await run_in_threadpool(
        partial(holding_creates, state.config.database, what="sweeps")
    )
    if form == "json":
        return JSONResponse(report)
    if form == "csv":
        return Response(
            usage_csv(report),
            media_type="text/csv",
            headers={"Content-Disposition": "attachment; filename=usage.csv"},
        )
    page = HTMLResponse(
        usage_html(report, held_back, sweeps_held_back),
        headers={
            "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'",
            "Cache-Control": "no-store",
        },
    )
    if "key" in request.query_params:
        page.set_cookie(
            COOKIE,
            request.query_params["key"],
            path=state.config.mount + "/admin",
            httponly=True,
            samesite="strict",
        )
    return page


def admin_routes() -> list[BaseRoute]:
    return [
        Route("/admin", admin, methods=["GET"]),
        *(Route(f"/admin/usage.{f}", partial(admin, form=f), methods=["GET"]) for f in FORMS),
    ]

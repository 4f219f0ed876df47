"""The teacher's page at ``/admin``: spend against budget per student, as HTML, CSV and
JSON, behind an admin key (a key made with ``--admin``), sent as the bearer token or,
for a browser, as ``?key=`` once, which sets a cookie scoped to ``/admin``."""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Route

from .app import bearer, gateway_error, serve_state
from .keys import find_key
from .usage import usage, usage_csv, usage_html

__all__ = ["admin_routes"]

COOKIE = "gwc_admin"


async def _report(request: Request) -> dict[str, object] | Response:
    state = serve_state(request)
    token = bearer(request) or request.cookies.get(COOKIE) or request.query_params.get("key", "")
    key = await run_in_threadpool(find_key, state.config.database, token) if token else None
    if key is None or not key.admin or key.refusal():
        return gateway_error(401, "UNAUTHORIZED", "The admin page needs the class's admin key")
    report: dict[str, object] = await run_in_threadpool(usage, state.config.database)
    return report


async def admin_page(request: Request) -> Response:
    report = await _report(request)
    if isinstance(report, Response):
        return report
    page = HTMLResponse(
        usage_html(report),
        headers={
            "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'",
            "Cache-Control": "no-store",
        },
    )
    if "key" in request.query_params:
        path = serve_state(request).config.mount + "/admin"
        page.set_cookie(
            COOKIE, request.query_params["key"], path=path, httponly=True, samesite="strict"
        )
    return page


async def admin_json(request: Request) -> Response:
    report = await _report(request)
    return report if isinstance(report, Response) else JSONResponse(report)


async def admin_csv(request: Request) -> Response:
    report = await _report(request)
    if isinstance(report, Response):
        return report
    return Response(
        usage_csv(report),
        media_type="text/csv",
        headers={"Content-Disposition": "attachment; filename=usage.csv"},
    )


def admin_routes() -> list[BaseRoute]:
    return [
        Route("/admin", admin_page, methods=["GET"]),
        Route("/admin/usage.json", admin_json, methods=["GET"]),
        Route("/admin/usage.csv", admin_csv, methods=["GET"]),
    ]

"""The teacher's page: behind an admin key; the same rows as ``usage``; CSV with no
formulas; escaped HTML with no script allowed."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable

import httpx
import pytest
from serve_helpers import Class, wait_for

from genwidgets.serve.keys import add_key
from genwidgets.serve.usage import usage

IMAGE = "genW2.5-t2i-preview"


@pytest.mark.slow
def test_the_admin_page_needs_an_admin_key(make_class: Callable[..., Class]) -> None:
    klass = make_class()
    student = add_key(klass.db, "alice", {})
    base = klass.server.base_url
    for path in ("/admin", "/admin/usage.json", "/admin/usage.csv"):
        assert httpx.get(base + path, timeout=30).status_code == 401
        refused = httpx.get(base + path, headers={"Authorization": f"Bearer {student}"}, timeout=30)
        assert refused.status_code == 401 and refused.json()["error"]["code"] == "UNAUTHORIZED"
        assert httpx.get(base + path, params={"key": student}, timeout=30).status_code == 401


@pytest.mark.slow
def test_the_admin_views_show_what_usage_shows(make_class: Callable[..., Class]) -> None:
    klass = make_class()
    admin = add_key(klass.db, "teacher", {}, admin=True)
    token = add_key(klass.db, "=HYPERLINK(1)", {"images": 10})
    evil = add_key(klass.db, "<script>alert(1)</script>", {"images": 4})
    with klass.client(token) as api, klass.client(evil) as other:
        handle = api.post(f"/v1/queue/{IMAGE}", json={"prompt": "x", "n": 2}).json()
        assert other.post(f"/v1/queue/{IMAGE}", json={"prompt": "x", "n": 1}).status_code == 200
        wait_for(
            lambda: api.get(handle["status_url"]).json()["status"] == "COMPLETED", what="the task"
        )
    with httpx.Client(base_url=klass.server.base_url, timeout=30) as browser:
        page = browser.get("/admin", params={"key": admin})
        assert (
            page.status_code == 200 and "script-src" not in page.headers["content-security-policy"]
        )
        assert "default-src 'none'" in page.headers["content-security-policy"]
        assert "<script>" not in page.text and "&lt;script&gt;" in page.text
        assert "2 / 10" in page.text  # held / cap of the first student's images
        again = browser.get("/admin/usage.json")  # the cookie the first visit set
        assert again.status_code == 200
        assert again.json() == usage(klass.db)
        table = list(csv.DictReader(io.StringIO(browser.get("/admin/usage.csv").text)))
    names = {row["name"] for row in table}
    assert "'=HYPERLINK(1)" in names and "teacher" in names
    row = next(r for r in table if r["name"] == "'=HYPERLINK(1)")
    assert row["cap_images"] == "10.0" and float(row["spent_images"]) == 2.0


def test_the_admin_page_under_a_prefix(make_class: Callable[..., Class]) -> None:
    klass = make_class(prefix="services/class")
    admin = add_key(klass.db, "teacher", {}, admin=True)
    with httpx.Client(timeout=30) as browser:
        page = browser.get(f"{klass.server.base_url}/admin", params={"key": admin})
        assert page.status_code == 200 and 'href="admin/usage.csv"' in page.text
        link = httpx.URL(f"{klass.server.base_url}/admin").join("admin/usage.csv")
        assert link.path == "/services/class/admin/usage.csv"
        assert browser.get(link).status_code == 200  # the cookie's path fits the prefix

"""The class gateway's teacher's page in a real chromium: the admin key opens it once and
a cookie keeps it; each student's spend against their budget shows, live (the page
refreshes itself); a hostile name stays text and runs no script; the CSV link downloads."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from serve_helpers import TEACHER_KEY, wait_for

from genwidgets.serve import ClassServer, Database, ServeConfig, Upstream
from genwidgets.serve.keys import add_key
from genwidgets.simulator import SimConfig, SimulatorServer

pytestmark = pytest.mark.browser
IMAGE = "genW2.5-t2i-preview"


@pytest.fixture
def class_server(tmp_path: Path) -> Iterator[tuple[ClassServer, Database]]:
    with SimulatorServer(SimConfig(speed=20.0, keys=(TEACHER_KEY,)), port=0) as sim:
        db = Database(tmp_path / "class.db")
        db.migrate()
        config = ServeConfig(upstream=Upstream(sim.base_url, TEACHER_KEY), database=db)
        with ClassServer(config) as server:
            yield server, db


def test_the_teachers_page_in_a_browser(
    browser: Any, class_server: tuple[ClassServer, Database], tmp_path: Path
) -> None:
    server, db = class_server
    admin = add_key(db, "teacher", {}, admin=True)
    alice = add_key(db, "alice", {"images": 10})
    add_key(db, "<img src=x onerror=alert(1)>", {"images": 3})
    with httpx.Client(
        base_url=server.base_url, timeout=60, headers={"Authorization": f"Bearer {alice}"}
    ) as api:
        handle = api.post(f"/v1/queue/{IMAGE}", json={"prompt": "x", "n": 3}).json()
        wait_for(
            lambda: api.get(handle["status_url"]).json()["status"] == "COMPLETED", what="the task"
        )
    page = browser.new_page()
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(f"{server.base_url}/admin?key={admin}")
    page.wait_for_selector("table")
    row = page.locator("tr", has_text="alice")
    assert "3 / 10" in row.inner_text()
    assert page.locator("td", has_text="<img src=x onerror=alert(1)>").count() == 1
    shot = Path(os.environ.get("GENWIDGETS_SCREENSHOTS", tmp_path)) / "serve-admin.png"
    page.screenshot(path=str(shot), full_page=True)
    page.goto(f"{server.base_url}/admin")  # the cookie, no key in the address
    assert page.locator("tr", has_text="alice").count() == 1
    with page.expect_download() as download:
        page.click("text=CSV")
    assert "alice" in Path(download.value.path()).read_text()
    assert dialogs == []
    page.close()

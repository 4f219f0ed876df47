"""A notebook exported to static HTML with its widget state renders offline: the
lasting faces show every task and play its media; the live faces drawn from the saved
state (no kernel behind them) hide themselves.

nbconvert embeds the saved widget state, but by default loads require.js and
``@jupyter-widgets/html-manager`` from CDNs. Here both come from the npm
registry at build time (``npm pack``), sit beside the HTML, and the page is
opened in headless chromium with every non-loopback request refused: the
widgets must render from the files in the folder alone.

Which file: ``@jupyter-widgets/html-manager``'s ``dist/embed-amd.js`` is the
AMD bundle (base, controls, output and the HTML manager) that nbconvert's
``widget_renderer_url`` expects. Its icon fonts sit beside it in ``dist/`` and
it asks for them under ``/@jupyter-widgets/html-manager/dist/`` (its webpack
public path), so the whole ``dist/`` folder goes there. ``requirejs``'s
``require.js`` is the loader. The task view is an anywidget: the html-manager
asks require.js for the module ``anywidget``, which resolves to
``anywidget.js`` beside the page; the Python package ships that AMD build
(``anywidget/nbextension/index.js``), so it is copied from there.
"""

from __future__ import annotations

import functools
import http.server
import re
import shutil
import subprocess
import sys
import tarfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import jupyter_env  # tests/jupyter_env.py (tests/ is on pytest's pythonpath)
import pytest

pytestmark = pytest.mark.browser

#: ipywidgets 8 speaks widget protocol 2 with controls 2.x; html-manager 1.x matches.
NPM_PACKAGES = {
    "@jupyter-widgets/html-manager@1": ("package/dist", "@jupyter-widgets/html-manager/dist"),
    "requirejs@2": ("package/require.js", "require.js"),
}
RENDERER = "@jupyter-widgets/html-manager/dist/embed-amd.js"
NOTEBOOK = "00_quickstart.ipynb"
RENDER_TIMEOUT_MS = 30_000


def npm_pack(destination: Path) -> Path:
    """Fetch the two packages with ``npm pack`` (cached in ``destination``) and
    unpack the files the page needs into ``destination / "static"``."""
    static = destination / "static"
    if (static / RENDERER).exists() and (static / "require.js").exists():
        return static
    npm = shutil.which("npm")
    assert npm, "npm is needed to fetch @jupyter-widgets/html-manager for the static export"
    tarballs = destination / "tarballs"
    tarballs.mkdir(parents=True, exist_ok=True)
    packed = subprocess.run(
        [
            npm,
            "pack",
            *NPM_PACKAGES,
            "--pack-destination",
            str(tarballs),
            "--json",
            "--cache",
            str(destination / "npm-cache"),
        ],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert packed.returncode == 0, f"npm pack failed:\n{packed.stderr[-2000:]}"
    static.mkdir(exist_ok=True)
    archives = sorted(tarballs.glob("*.tgz"))
    for (member, target), archive in zip(NPM_PACKAGES.values(), _match(archives), strict=True):
        with tarfile.open(archive) as tar:
            tar.extractall(destination / archive.stem, filter="data")
        source = destination / archive.stem / member
        if source.is_dir():
            shutil.copytree(source, static / target, dirs_exist_ok=True)
        else:
            (static / target).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(source, static / target)
    return static


def _match(archives: list[Path]) -> list[Path]:
    """The tarball of each package of :data:`NPM_PACKAGES`, in that order."""
    by_prefix = {
        "@jupyter-widgets/html-manager@1": "jupyter-widgets-html-manager-",
        "requirejs@2": "requirejs-",
    }
    return [next(a for a in archives if a.name.startswith(by_prefix[p])) for p in NPM_PACKAGES]


@pytest.fixture(scope="module")
def widget_scripts(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """The unpacked scripts; kept in pytest's cache folder (gitignored) between runs."""
    cache = getattr(request.config, "cache", None)  # absent under -p no:cacheprovider
    where = cache.mkdir("genwidgets-npm") if cache is not None else tmp_path_factory.mktemp("npm")
    return npm_pack(Path(where))


@pytest.fixture(scope="module")
def exported_site(widget_scripts: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The quickstart executed (widget state stored) and exported next to its scripts."""
    root = tmp_path_factory.mktemp("export")
    # at the lessons' speed: what is exported is what a Run All saves, whatever its pace
    with jupyter_env.isolated_kernel(
        root / "jupyter", sim_speed=jupyter_env.LESSON_SIM_SPEED
    ) as kernel:
        workdir = root / "run"
        workdir.mkdir()
        nb, _ = jupyter_env.execute(jupyter_env.NOTEBOOKS / NOTEBOOK, workdir, kernel_name=kernel)
    assert jupyter_env.widget_state(nb), "the executed notebook has no widget state"
    site = root / "site"
    shutil.copytree(widget_scripts, site)
    import anywidget

    shutil.copy(
        Path(anywidget.__file__).with_name("nbextension") / "index.js", site / "anywidget.js"
    )
    subprocess.run(
        [
            sys.executable,
            "-m",
            "nbconvert",
            "--to",
            "html",
            f"--HTMLExporter.widget_renderer_url={RENDERER}",
            "--HTMLExporter.require_js_url=require.js",
            "--output-dir",
            str(site),
            str(workdir / NOTEBOOK),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return site


@pytest.fixture()
def served(exported_site: Path) -> Iterator[str]:
    """The export folder over HTTP on loopback (file:// would block the scripts)."""
    handler = functools.partial(QuietHandler, directory=str(exported_site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_export_uses_local_scripts_only(exported_site: Path) -> None:
    html = (exported_site / NOTEBOOK.replace(".ipynb", ".html")).read_text()
    assert 'src="require.js"' in html or "require.js" in html
    assert f"'{RENDERER}'" in html
    assert "unpkg.com" not in html and "jsdelivr" not in html
    external = re.findall(r'<script[^>]*src="(https?://[^"]+)"', html)
    assert [u for u in external if "mathjax" not in u] == [], "only MathJax may come from a CDN"
    assert "application/vnd.jupyter.widget-state+json" in html


@pytest.mark.timeout(300)
def test_exported_widgets_render_offline(served: str, browser: Any) -> None:
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    refused: list[str] = []
    page_errors: list[str] = []

    def loopback_only(route: Any) -> None:
        if urlsplit(route.request.url).hostname in {"127.0.0.1", "localhost"}:
            route.continue_()
        else:
            refused.append(route.request.url)
            route.abort()

    page.route("**/*", loopback_only)
    page.on("pageerror", lambda exc: page_errors.append(str(exc)))
    try:
        page.goto(f"{served}/{NOTEBOOK.replace('.ipynb', '.html')}", timeout=60_000)
        # The saved widgets are drawn from the folder's scripts alone (the form's
        # controls exist)...
        page.locator(".widget-button", has_text="Submit").first.wait_for(
            state="attached", timeout=RENDER_TIMEOUT_MS
        )
        assert page.locator(".widget-textarea textarea").count() >= 1
        # ... but genwidgets' live faces drawn from saved state have no kernel behind
        # them: they hide themselves (the form's container too), and the lasting faces,
        # which need no widget state at all, show every finished task.
        assert page.locator(".gw-lasting .gw-final .gw-status-done:visible").count() >= 3
        assert page.locator(".gw-form-lasting:visible").count() == 1
        page.wait_for_function(
            "() => [...document.querySelectorAll('.gw-task-view')].length >= 3",
            timeout=RENDER_TIMEOUT_MS,
        )
        assert page.locator(".gw-task-view:visible").count() == 0
        # Audio and video play from the page alone (data: URLs in the lasting faces),
        # each video with its poster frame.
        page.wait_for_function(
            """() => {
              const lasting = [...document.querySelectorAll('.gw-lasting')];
              const audio = lasting.flatMap(l => [...l.querySelectorAll('audio')]);
              const videos = lasting.flatMap(l => [...l.querySelectorAll('video')]);
              return audio.length >= 1 && videos.length >= 1
                && [...audio, ...videos].every(el => /^data:/.test(el.currentSrc || el.src)
                                                 && el.readyState >= 2 && !el.error)
                && videos.every(el => el.poster.startsWith('data:image/jpeg;base64,'));
            }""",
            timeout=RENDER_TIMEOUT_MS,
            polling=250,
        )
        page.wait_for_function(
            "() => document.querySelectorAll('.gw-live').length >= 1"
            " && [...document.querySelectorAll('.gw-live')].every(e => !e.offsetParent)",
            timeout=RENDER_TIMEOUT_MS,
        )
        text = page.inner_text("body")
        assert "Error displaying widget" not in text
        assert "model not found" not in text.lower()
        assert page_errors == []
        # Rendered with every other host refused (the template's MathJax, for one).
        print("refused:", refused)
    finally:
        page.close()

"""A Jupyter server extension: the kept outputs, read-only, to the server's own user.

A saved notebook's lasting faces link each image to its full file. The gateway's URL
expires and the embedded simulator's port dies with the kernel, but the file the
ledger kept lives on in ``GENWIDGETS_HOME/outputs``. JupyterLab and Notebook 7 load
this extension (``jupyter-config/`` installs it enabled) and serve that tree at
``<base_url>genwidgets/outputs/<path>``: authenticated and authorised like
``/files/``, GET and HEAD only, confined to the tree (symbolic links that leave it are
refused), with JavaScript sandboxed to a unique origin. The server sets
``GENWIDGETS_OUTPUTS_URL`` in its environment, so the kernels it starts inherit the
link's prefix (``genwidgets._config.served_url``): docs/decisions.md#served-outputs.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ._config import ENV_OUTPUTS_URL, home

__all__ = ["ROUTE", "outputs_handler"]

#: Where, under the server's base URL, the outputs are served.
ROUTE = "genwidgets/outputs/"


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "genwidgets.server_extension"}]


def outputs_handler() -> type:
    """The handler class (built on first use: jupyter_server is imported only by a
    server, never by ``import genwidgets``)."""
    from jupyter_server.base.handlers import AuthenticatedFileHandler  # noqa: PLC0415 - only the Jupyter server, which has them, loads this
    from tornado import web  # noqa: PLC0415 - only the Jupyter server, which has them, loads this

    class OutputsHandler(AuthenticatedFileHandler):
        """``/files/``'s handler over the outputs tree, refusing what leaves it."""

        def validate_absolute_path(self, root: str, absolute_path: str) -> str:
            found = super().validate_absolute_path(root, absolute_path)
            assert found is not None
            real_root = Path(root).resolve()
            if not Path(found).resolve().is_relative_to(real_root):
                raise web.HTTPError(404)  # a symbolic link out of the tree
            return found

        def set_extra_headers(self, path: str) -> None:
            self.set_header("X-Content-Type-Options", "nosniff")

    return OutputsHandler


def _load_jupyter_server_extension(serverapp: Any) -> None:
    from jupyter_server.utils import url_path_join  # noqa: PLC0415 - only the Jupyter server, which has them, loads this

    root = home() / "outputs"
    prefix = url_path_join(serverapp.base_url, ROUTE)
    pattern = url_path_join(prefix, "(.*)")
    serverapp.web_app.add_handlers(".*$", [(pattern, outputs_handler(), {"path": str(root)})])
    os.environ[ENV_OUTPUTS_URL] = prefix  # inherited by every kernel this server starts
    serverapp.log.info("genwidgets: serving %s at %s", root, prefix)

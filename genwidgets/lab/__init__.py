"""The prompt lab: grids and sweeps planned, sent, judged and kept (no widgets here).

Below the widgets, above the jobs: :mod:`.axes` reads axes, :mod:`.plan` plans
grids (counted, billed, validated before sending), :mod:`.sweep` plans a sweep as
a one-axis grid, :mod:`.run` sends a grid (or a sweep) and keeps its ratings,
:mod:`.batch_store` keeps grids and batches in the ledger's SQLite file,
:mod:`.export` writes contact sheets and offline pages, :mod:`.mapping` writes one
payload for several endpoints, :mod:`.scores` gathers ratings across grids. Batches
from data (``gw.batch``) are :mod:`.batch` and the modules it names;
:mod:`.batch_open` opens one; :func:`read_provenance` reads back how a batch's file
was made. Each name is imported from its module; the package itself offers
``read_provenance``, the one README shows (``gw.lab.read_provenance``), and
``GridStore``, which the tests of grids open.
"""

from .batch_store import GridStore
from .provenance import read_provenance

__all__ = ["GridStore", "read_provenance"]

"""The prompt lab: grids and sweeps planned, sent, judged and kept (no widgets here).

Below the widgets, above the jobs: :mod:`.axes` reads axes, :mod:`.plan` plans
grids (counted, billed, validated before sending), :mod:`.sweep` plans a sweep as
a one-axis grid, :mod:`.run` sends a grid (or a sweep) and keeps its ratings,
:mod:`.batch_store` keeps grids and batches in the ledger's SQLite file,
:mod:`.export` writes contact sheets and offline pages, :mod:`.mapping` writes one
payload for several endpoints, :mod:`.scores` gathers ratings across grids. Batches
from data (``gw.batch``) are :mod:`.batch` and the modules it names;
:mod:`.batch_open` opens one; :func:`read_provenance` reads back how a batch's file
was made.
"""

from .axes import PROMPT_SR, Axis, make_axis, parse_values
from .batch_store import GridRecord, GridStore, store_for
from .mapping import ENDPOINT_AXIS, map_payload, mapping_table
from .plan import (
    MAX_CELLS,
    GridPlan,
    PlannedCell,
    differing_params,
    plan_grid,
)
from .provenance import read_provenance
from .run import GridCell, GridRun, list_grids
from .scores import ScoreTable, scores
from .sweep import SweepPlan, plan_sweep

__all__ = [
    "ENDPOINT_AXIS",
    "MAX_CELLS",
    "PROMPT_SR",
    "Axis",
    "GridCell",
    "GridPlan",
    "GridRecord",
    "GridRun",
    "GridStore",
    "PlannedCell",
    "ScoreTable",
    "SweepPlan",
    "differing_params",
    "list_grids",
    "make_axis",
    "map_payload",
    "mapping_table",
    "parse_values",
    "plan_grid",
    "plan_sweep",
    "read_provenance",
    "scores",
    "store_for",
]

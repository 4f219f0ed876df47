"""``gw.batch`` and ``gw.batches``: the arguments, the plan, the id and folder, what the
store holds under the id, the budget; only then, below ``confirm_above``, a send.
docs/decisions.md#batches.
"""

from __future__ import annotations

import functools
import re
import sys
import threading
import weakref
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec

from .._client import default_client
from .._config import normal_base_url
from ..jobs.fanout import valid_concurrency
from .batch import Batch
from .batch_plan import plan_batch
from .batch_store import WAITING, BatchRecord, BatchStore, id_taken, store_for
from .cost import CONFIRM_ABOVE, needs_confirmation, not_sent_line
from .naming import safe_part
from .outfiles import check_out
from .problems import problem
from .progress import progress_mode
from .run import CONCURRENCY

if TYPE_CHECKING:
    from .._protocols import ClientLike

__all__ = ["CONFIRM_ABOVE", "ON_TIMEOUT", "batch", "batch_id_of", "batches"]

#: what a row past its ``timeout`` becomes: cancelled at the gateway, or left running
ON_TIMEOUT = ("cancel", "leave")
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
#: the batches of this process by (store, id): one opened again while it sends (a cell
#: run twice) is given back, its rows in flight never settled as a dead run's
_opened: weakref.WeakValueDictionary[tuple[BatchStore, str], Batch] = weakref.WeakValueDictionary()
_opened_lock = threading.Lock()
P = ParamSpec("P")


def batch_id_of(stem: str, digest: str) -> str:
    """A derived id: the rows file's stem and the start of the plan's digest
    (``prompts-3fa2c1d04e``), the same for the same rows, template and names."""
    return f"{safe_part(stem, 40) or 'batch'}-{digest[:10]}"


def _check_arguments(
    timeout: Any, on_timeout: Any, confirm_above: Any, concurrency: Any, batch_id: Any
) -> None:
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0
    ):
        raise problem(
            "timeout", f"a row's deadline is a number of seconds above 0, not {timeout!r}"
        )
    if on_timeout not in ON_TIMEOUT:
        raise problem(
            "on_timeout",
            f"{on_timeout!r} is not one of 'cancel' (cancel the row at the gateway) or "
            "'leave' (leave it running and list it)",
        )
    needs_confirmation(0, confirm_above)  # a bad value is a ValueError saying so
    valid_concurrency(concurrency)
    if batch_id is not None and (not isinstance(batch_id, str) or not _ID.fullmatch(batch_id)):
        raise problem(
            "id",
            f"{batch_id!r} is not a batch id: 1-100 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit",
        )


def open_batch(
    endpoint: str,
    rows: Any,
    template: Mapping[str, Any] | None = None,
    *,
    out: str | Path | None = None,
    id: str | None = None,
    budget: Any = None,
    prices: Mapping[str, Mapping[str, float]] | None = None,
    concurrency: int | None = None,
    confirm_above: int | None = None,
    timeout: float | None = None,
    on_timeout: str = "cancel",
    client: ClientLike | None = None,
    filenames: str | None = None,
    record: bool = True,
) -> Batch:
    """Everything :func:`batch` does but sending: the plan, the id, the folder, what
    the store holds under the id, the budget. ``batch.needs_confirmation`` says whether
    it would wait for ``.submit()`` (the command line asks first, whatever the count).
    ``record`` false: a new batch's id is recorded and its folder made only by
    ``.submit()`` and ``check_out`` (the command line confirms in the same process).
    A batch of this id still sending in this process is returned as it is."""
    concurrency = CONCURRENCY if concurrency is None else concurrency
    confirm_above = CONFIRM_ABOVE if confirm_above is None else confirm_above
    _check_arguments(timeout, on_timeout, confirm_above, concurrency, id)
    chosen = client if client is not None else default_client()
    plan = plan_batch(
        endpoint,
        rows,
        template,
        filenames=filenames,
        budget=budget,
        prices=prices,
        prepare=chosen.prepare,
    )
    batch_id = id or batch_id_of(plan.stem, plan.digest)
    store = store_for(chosen, BatchStore)
    stored = store.summary(batch_id)
    if stored is not None and stored.digest != plan.digest:
        differing = store.row_differing(batch_id, plan.rows)
        raise id_taken(batch_id, stored.description, plan.describe(), differing)
    if stored is not None and normal_base_url(stored.gateway) != chosen.gateway_name:
        back = (  # its tasks are that gateway's: another would make them again
            "unset GENWIDGETS_BASE_URL and GENWIDGETS_API_KEY to resume it there"
            if stored.gateway == "simulator"
            else f"set GENWIDGETS_BASE_URL={stored.gateway} to resume it (the same gateway "
            "under another address too)"
        )
        raise problem(
            "id",
            f"batch {batch_id!r} was sent through the gateway {stored.gateway!r}, and this "
            f"client talks to {chosen.gateway_name!r}: {back}, or give another id= for a "
            "new batch",
        )
    folder = _folder(out, stored, batch_id)
    key = (store, batch_id)
    with _opened_lock:
        sending = _opened.get(key)
    if sending is not None and sending.sending:
        return sending
    check_out(folder, batch_id, known=stored is not None, make=record)
    run = Batch(
        plan,
        chosen,
        batch_id=batch_id,
        out=folder,
        store=store,
        timeout=timeout,
        on_timeout=on_timeout,
        concurrency=concurrency,
    )
    run.restore()
    waiting = [r for r in run.rows if r.state == WAITING]
    plan.budget.check(
        [(r.index, r.endpoint, r.units) for r in waiting], run.spent, f"batch {batch_id}"
    )
    if stored is None and record:
        run.store_batch()  # the id is this plan's before anything is confirmed
    billed = sum(r.planned.billed for r in waiting)
    run.confirm_above = confirm_above
    run.needs_confirmation = needs_confirmation(billed, confirm_above)
    with _opened_lock:
        _opened[key] = run
    return run


def _sending(opened: Callable[P, Batch]) -> Callable[P, Batch]:
    """``gw.batch`` from :func:`open_batch`: its one signature (``help`` shows it),
    then the batch sent unless it waits for confirmation."""

    @functools.wraps(opened, assigned=("__module__",))
    def batch(*args: P.args, **kwargs: P.kwargs) -> Batch:
        """Plan, validate, count and (below ``confirm_above``) send a batch from data.

        ``rows``: a list of dicts, a ``.csv`` or ``.jsonl`` path, or a pandas DataFrame.
        ``template`` maps fields to values or format strings over the columns
        (``{"prompt": "{text}, watercolor", "seed": "{seed}"}``), typed by field; with
        none, columns named like fields are the payload; an ``endpoint`` column sends
        each row to its own endpoint. ``out``: the folder of files and manifests
        (default ``./<id>``); ``id``: the batch's name (default: derived from the rows,
        so running the same call again resumes it). ``budget``: caps per billed kind
        (``{"images": 100}``), or money with ``prices={endpoint: {"per_image": 0.04}}``.
        ``timeout``: seconds per row, then ``on_timeout="cancel"`` (at the gateway) or
        ``"leave"``. ``filenames``: the name template (``{row:05d}-{slug}-{seed}.{ext}``).
        Nothing is sent when any row is invalid, when the plan is over budget
        (:class:`~genwidgets.errors.BudgetExceeded`), or above ``confirm_above`` billed
        generations until ``batch.submit()``. Returns at once; ``batch.wait()`` blocks.
        """
        run = opened(*args, **kwargs)
        if run.started:  # it sends already, in this process
            return run
        if not run.needs_confirmation:
            run.submit()
        elif progress_mode(sys.stdout) != "none":
            how = "call .submit() on the returned batch"
            print(not_sent_line(run.plan.summary(), run.confirm_above, how))
        return run

    return batch


batch = _sending(open_batch)


def _folder(out: str | Path | None, stored: BatchRecord | None, batch_id: str) -> Path:
    """Where the files go: ``out``, else where the stored batch wrote, else ``./<id>``;
    a resumed batch keeps its folder."""
    if out is not None and not isinstance(out, (str, Path)):
        raise problem("out", f"out is a folder path, not {type(out).__name__}")
    if stored is not None:
        kept = Path(stored.out)
        if out is not None and Path(out).expanduser().resolve() != kept:
            raise problem(
                "out",
                f"batch {batch_id!r} writes into {kept}; give out={str(kept)!r} (or none) "
                "to resume it, or another id= for a new batch",
            )
        return kept
    base = Path(out).expanduser() if out is not None else Path.cwd() / batch_id
    return base.resolve()


def batches(client: ClientLike | None = None) -> list[BatchRecord]:
    """``gw.batches()``: the batches kept for the client's gateway, newest first, each
    with its rows per state; running the same ``gw.batch(...)`` again resumes one."""
    chosen = client if client is not None else default_client()
    return store_for(chosen, BatchStore).batches(chosen.gateway_name)

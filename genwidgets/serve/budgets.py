"""Exact budgets: a create's cost is reserved for its key and its group in one
transaction before it is forwarded, and settled when the task ends.

The cost is what the catalog's billing rules count, priced by the class's table. The
key's and its group's rows are locked while the caps are compared, so concurrent
creates, in one process or several, never pass a cap together. The settlement rule:
docs/decisions.md#serve-reservations.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..catalog import collect_warnings, sent_from_elsewhere, validate
from ..catalog import endpoint as catalog_endpoint
from ..errors import EndpointNotFound, PayloadError, ServeError
from ..lab.budget import Budget, make_budget, plain_amount
from ..lab.cost import UNITS, billed_units
from ..protocol.records import (
    ERROR_TEXT_KEYS,
    Result,
    Status,
    readable,
    says_cancelled,
    says_nothing,
)
from .db import CAPS_HELD, KINDS, LOCK_WAIT, MARKS, SCALE, Database, Tx, caps_and_held
from .fairshare import MAX_WAIT
from .keys import KEY_FIELDS, KeyRecord, hash_token, keys_where, to_stored
from .upstream import CONNECT_TIMEOUT, TIMEOUT

__all__ = [
    "ENDING",
    "FOLLOWED",
    "GONE",
    "GONE_AFTER",
    "HOLDS",
    "LIVE",
    "LOST_AFTER",
    "MAYBE_TAKEN",
    "SHARED_CANCEL",
    "TAKEN",
    "TOLD",
    "CancelWay",
    "Reservation",
    "as_counted",
    "ask_cancel",
    "caller_and_task",
    "cancel_answered",
    "cancels_in_flight",
    "charge_of",
    "clear_hold",
    "end_stale_cancels",
    "forgotten",
    "heard",
    "hold_creates",
    "holding_creates",
    "longest_send",
    "move",
    "rate_limited",
    "refusal",
    "release",
    "reserve",
    "resolve_unknown",
    "settle",
    "storable",
    "task_state",
    "tasks_of",
    "unanswered",
    "update_followers",
    "usable",
]

#: the holds upstream's rate limit writes (``holds.name``), and what each holds back
HOLDS = {"creates": "creates", "sweeps": "the sweep's status requests"}
#: the hold row of upstream's own wait when it was past the creates' hold's ceiling: what
#: a create held back is told (the hold itself ends sooner, then upstream is asked again)
TOLD = "creates_told"
#: task states that hold a place in a key's concurrency cap
LIVE = ("sending", "open", "cancelling")
#: task states upstream is asked about (it made them)
FOLLOWED = ("open", "cancelling")
#: task states from which a task may end (settle)
ENDING = ("open", "cancelling", "unknown")
_AMT = ", ".join(f"amt_{k}" for k in KINDS)
#: seconds after its create from which upstream's ``404 Request not found`` for a task
#: means it is gone (restarted, its retention ended): before, a task may not show yet
GONE_AFTER = 60.0
#: seconds after which a create still ``sending`` is taken as one whose process stopped
#: mid-send: it becomes ``unknown`` (still reserved), so it no longer holds a running place
STALE_SENDING = 600.0
#: why a task upstream no longer knows is ``unknown`` (spec 2.4)
GONE = (
    "upstream answered 404 Request not found for it (it restarted or forgot it): it may "
    "have been made and billed, so its cost stays reserved until the teacher settles it"
)


def longest_send(
    queue_wait: float = MAX_WAIT, connect_timeout: float = CONNECT_TIMEOUT, timeout: float = TIMEOUT
) -> float:
    """Seconds a create may rightly be ``sending``: its turn, the database's lock, the
    connect and upstream's answer (the defaults: 125 s). A create sending longer likely
    lost its process (:func:`reserve`'s ``long_sending``; ``ServeConfig.longest_send``)."""
    return queue_wait + LOCK_WAIT + connect_timeout + timeout


def refusal(
    status: int, code: str | None, message: str, retry_after: float | None = None
) -> ServeError:
    """A request refused before anything reached upstream, as the gateway's error shape
    (``code`` None: a ``detail`` answer)."""
    return ServeError(message, status=status, code=code, retry_after=retry_after)


def _running_limit(
    running: int, moving: int, oldest_sending: float | None, limit: int, now: float
) -> ServeError:
    """The 429 of a key at its running cap. When every place is held by a create
    ``sending`` for longer than the server's longest send (its process likely stopped
    mid-send: kill -9), the place frees only when it is given up as ``unknown``, up to
    :data:`STALE_SENDING` after it began: said, and waited for, not retried each second."""
    why = f"this key has {running} tasks running, at most {limit} at once"
    if moving or oldest_sending is None:
        return rate_limited(1.0, why)
    left = max(1.0, oldest_sending + STALE_SENDING - now)
    why += (
        f"; its running places are held by creates sending for {now - oldest_sending:.0f} s "
        f"(their server may have stopped mid-send): one frees within {left:.0f} s"
    )
    return rate_limited(left, why)


def rate_limited(wait: float, why: str = "") -> ServeError:
    """The gateway's 429, saying ``why`` after its own words; try again in ``wait`` s."""
    message = "Rate limit exceeded, please try again later" + (f": {why}" if why else "")
    return refusal(429, "RATE_LIMIT_EXCEEDED", message, retry_after=wait)


def hold_creates(
    db: Database,
    wait: float,
    now: float | None = None,
    *,
    what: str = "creates",
    told: float | None = None,
) -> None:
    """Upstream refused a create with a rate limit: every process sends no create for
    ``wait`` seconds (a longer hold already written stays). ``what="sweeps"``: the same
    for the sweep's status requests (a status answered 429). ``told``: upstream's own
    wait, past the hold's ceiling, which the creates held back are told (:data:`TOLD`).
    It is upstream's latest word, written whole (none when it is within the hold): only
    ever lengthened, a 3600 s quota was still told after upstream had come to say 5 s."""
    now = time.time() if now is None else now

    upsert = (
        "INSERT INTO holds (name, until) VALUES (?, ?) ON CONFLICT (name) "
        "DO UPDATE SET until = excluded.until"
    )

    def work(tx: Tx) -> None:
        tx.run(upsert + " WHERE holds.until < excluded.until", (what, now + wait))
        if told is not None and told <= wait:
            tx.run("DELETE FROM holds WHERE name = ?", (TOLD,))
        elif told is not None:
            tx.run(upsert, (TOLD, now + told))

    db.run(work)


def holding_creates(db: Database, now: float | None = None, *, what: str = "creates") -> float:
    """Seconds the class's creates (or ``what``) are still held back by upstream's rate
    limit (0: none)."""
    row = db.run(lambda tx: tx.one("SELECT until FROM holds WHERE name = ?", (what,)), write=False)
    return max(0.0, row[0] - (time.time() if now is None else now)) if row else 0.0


def clear_hold(db: Database, *, what: str = "creates") -> float:
    """The teacher's word that upstream takes creates (``what="sweeps"``: the sweep's
    status requests) again: every process sends them at once. The seconds the hold had
    left (0: there was none). Read and deleted in one transaction, and only the hold
    read: a longer one another process's 429 wrote in between stays (it was deleted
    unseen)."""

    def work(tx: Tx) -> float:
        row = tx.one("SELECT until FROM holds WHERE name = ? {lock}", (what,))
        if row is None:
            return 0.0
        tx.run("DELETE FROM holds WHERE name = ? AND until = ?", (what, row[0]))
        if what == "creates":  # upstream's longer word goes with it
            tx.run("DELETE FROM holds WHERE name = ?", (TOLD,))
        return max(0.0, float(row[0]) - time.time())

    return db.run(work)


@dataclass(frozen=True)
class Reservation:
    """A create that may go: the task's own id, and whether the demo cache answered it
    (it shares a first task's upstream task: nothing is forwarded, nothing charged)."""

    task_id: str
    cached: bool = False


def as_counted(endpoint: str, payload: Mapping[str, Any]) -> dict[str, Any]:
    """The body a create sends upstream: ``payload`` as the catalog reads it, the body a
    genwidgets client sends, so what is counted is what is made (``"n": "4"`` is counted
    and sent as 4, never counted as 1 and made as 4 by a lenient upstream). An invalid
    payload is a :class:`~..errors.PayloadError` listing every problem, before anything
    is reserved (docs/decisions.md#serve-reservations)."""
    with collect_warnings(), sent_from_elsewhere():  # an unknown field passes, as upstream
        return validate(endpoint, payload).to_wire()


def price_table(prices: Any) -> dict[str, dict[str, float]]:
    """The class's price table checked as a batch's ``prices=`` is (every unit one the
    gateway bills, every price a number 0 or more), each endpoint one the catalog knows:
    a misspelt unit cost nothing (a money cap never bit) and a number where a table
    belongs failed every create. Each entry prices only units its endpoint bills, and at
    least one: a real unit on the wrong endpoint (``per_second`` on an image endpoint) or
    an empty entry cost nothing, too. A :class:`~..errors.PayloadError` names each problem."""
    table = make_budget(None, prices, [], []).prices
    problems = []
    for name, entry in table.items():
        try:
            spec = catalog_endpoint(name)
        except EndpointNotFound as exc:
            problems.append({"loc": ("prices", name), "msg": str(exc)})
            continue
        billed = [UNITS[kind] for kind in billed_units(spec, {})]  # by its kind, not payload
        said = ", ".join(billed)
        problems += [
            {"loc": ("prices", name, unit), "msg": f"{unit}: {name} bills only {said}"}
            for unit in entry
            if unit not in billed
        ]
        if not entry:
            msg = f"{name} prices none of the units it bills ({said})"
            problems.append({"loc": ("prices", name), "msg": msg})
    if problems:
        raise PayloadError(problems)
    return table


def charge_of(
    endpoint: str, payload: Mapping[str, Any], prices: Mapping[str, Mapping[str, float]]
) -> dict[str, int | None]:
    """What one create of ``endpoint`` costs, per kind of :data:`~.db.KINDS`, in
    millionths; None for a kind the payload cannot say (an automatic duration, money on
    an unpriced endpoint), which a cap on that kind refuses (:func:`reserve`). An
    unknown endpoint is :class:`~..errors.EndpointNotFound`."""
    spec = catalog_endpoint(endpoint)
    units = billed_units(spec, payload)
    money = Budget({}, {k: dict(v) for k, v in prices.items()}).cost(endpoint, units)
    found: dict[str, float | None] = {**units, "money": money}
    return {kind: to_stored(found.get(kind, 0.0)) for kind in KINDS}


def _uncountable(endpoint: str, kind: str) -> ServeError:
    why = (
        f"the class's price table has no price for {endpoint}"
        if kind == "money"
        else f"this payload does not say its {kind.replace('_', ' ')} (an automatic "
        "duration): send an explicit one"
    )
    return refusal(400, "BUDGET_UNCOUNTABLE", f"Cannot count this create's cost: {why}")


def _group_row(tx: Tx, name: str) -> tuple[dict[str, int | None], dict[str, int], int]:
    row = tx.one(f"SELECT cache_seconds, {CAPS_HELD} FROM groups WHERE name = ? {{lock}}", (name,))
    assert row is not None, f"group {name} is gone"
    return (*caps_and_held(row[1:]), int(row[0]))


def _hold(tx: Tx, key: str, group: str | None, amounts: Mapping[str, int], sign: int) -> None:
    """Add ``amounts`` (``sign`` -1: take them back) to what the key and its group hold."""
    sets = ", ".join(f"held_{k} = held_{k} + ?" for k in KINDS)
    for table, name in (("keys", key), ("groups", group)):
        if name:
            tx.run(
                f"UPDATE {table} SET {sets} WHERE name = ?",
                (*(sign * amounts[k] for k in KINDS), name),
            )


def usable(key: KeyRecord | None, now: float | None = None) -> KeyRecord:
    """The key, if it may be used now; else the gateway's 401 saying why."""
    if key is None:
        raise refusal(401, "UNAUTHORIZED", "Invalid API key")
    why = key.refusal(now)
    if why:
        raise refusal(401, "UNAUTHORIZED", why)
    return key


def reserve(
    db: Database,
    key_name: str,
    endpoint: str,
    amounts: Mapping[str, int | None],
    *,
    cache_key: str | None = None,
    max_running: int | None = None,
    long_sending: float | None = None,
    now: float | None = None,
) -> Reservation:
    """Reserve ``amounts`` for the key and its group and record the task as being sent,
    or answer from the group's demo cache, or refuse (a ServeError) saying what is left.
    ``long_sending``: the server's longest send, past which a ``sending`` create holding
    a running place is said to have likely lost its process (:func:`_running_limit`;
    None: the defaults', :func:`longest_send`)."""
    now = time.time() if now is None else now
    long_sending = longest_send() if long_sending is None else long_sending

    def work(tx: Tx) -> Reservation:
        found = keys_where(tx, "WHERE name = ? {lock}", (key_name,))
        key = usable(found[0] if found else None, now)
        if key.endpoints is not None and endpoint not in key.endpoints:
            raise refusal(403, None, "Model not allowed for this user")
        limit = key.max_running if key.max_running is not None else max_running
        if limit is not None:
            marks = ", ".join("?" for _ in LIVE)
            row = tx.one(
                f"SELECT COUNT(*), SUM(CASE WHEN state = 'sending' AND created_at < ? "
                "THEN 0 ELSE 1 END), MIN(CASE WHEN state = 'sending' THEN created_at END) "
                f"FROM tasks WHERE key_name = ? AND state IN ({marks}) AND cached_from IS NULL",
                (now - long_sending, key.name, *LIVE),
            )
            if row and int(row[0]) >= limit:
                raise _running_limit(int(row[0]), int(row[1] or 0), row[2], limit, now)
        group = _group_row(tx, key.group) if key.group else None
        task_id = str(uuid.uuid4())
        if group is not None and group[2] > 0 and cache_key is not None:
            first = tx.one(
                "SELECT id, upstream_id FROM tasks WHERE cache_key = ? AND group_name = ? "
                "AND created_at >= ? AND cached_from IS NULL "
                "AND state IN ('sending', 'open', 'done') ORDER BY created_at LIMIT 1 {lock}",
                (cache_key, key.group, now - group[2]),
            )
            if first is not None:
                tx.run(
                    "INSERT INTO tasks (id, key_name, group_name, endpoint, upstream_id, state, "
                    "charged, cache_key, cached_from, created_at) "
                    "VALUES (?, ?, ?, ?, ?, 'open', 0, ?, ?, ?)",
                    (task_id, key.name, key.group, endpoint, first[1], cache_key, first[0], now),
                )
                return Reservation(task_id, cached=True)
        for kind in KINDS:
            cost = amounts.get(kind) or 0
            checks = [("your key", key.caps, key.held)]
            if group is not None:
                checks.append((f"the group {key.group}", group[0], group[1]))
            for who, caps, held in checks:
                cap = caps[kind]
                if cap is not None and amounts.get(kind) is None:
                    raise _uncountable(endpoint, kind)
                if cap is not None and held[kind] + cost > cap:
                    left = plain_amount(max(0, cap - held[kind]) / SCALE)
                    raise refusal(
                        402,
                        "BUDGET_EXCEEDED",
                        f"Budget exceeded: this create costs {plain_amount(cost / SCALE)} "
                        f"{kind.replace('_', ' ')}; {who} has {left} of "
                        f"{plain_amount(cap / SCALE)} left. Nothing was sent",
                    )
        counted = {k: amounts.get(k) or 0 for k in KINDS}
        _hold(tx, key.name, key.group, counted, +1)
        tx.run(
            f"INSERT INTO tasks (id, key_name, group_name, endpoint, state, charged, cache_key, "
            f"created_at, {_AMT}) VALUES (?, ?, ?, ?, 'sending', 1, ?, ?, {MARKS})",
            (task_id, key.name, key.group, endpoint, cache_key, now, *(counted[k] for k in KINDS)),
        )
        return Reservation(task_id)

    return db.run(work)


def storable(text: str) -> str:
    """``text`` as both databases store it: a NUL (PostgreSQL refuses one in text) and a
    lone surrogate (no UTF-8, so neither database takes it) written as escapes, ``\\x00``
    and ``\\ud800``; the rest kept as written. An upstream error holding one made the
    task's settling fail for ever, its cost reserved (docs/decisions.md#serve-reservations)."""
    return text.replace("\x00", "\\x00").encode("utf-8", "backslashreplace").decode("utf-8")


def move(
    db: Database,
    task_id: str,
    state: str,
    *,
    source: tuple[str, ...] = ("sending",),
    **columns: Any,
) -> bool:
    """Move the task to ``state`` if it is in one of ``source``, setting ``columns`` too;
    whether it moved. Upstream made the task: ``open`` with its ``upstream_id`` (it holds
    its reservation until it ends); upstream may or may not have made it (a timeout, a
    5xx): ``unknown`` with its ``error``, still reserved (:func:`storable`)."""
    if columns.get("error"):
        columns["error"] = storable(columns["error"])
    sets = ", ".join(f"{name} = ?" for name in ("state", *columns))
    marks = ", ".join("?" for _ in source)

    def work(tx: Tx) -> bool:
        changed = tx.run(
            f"UPDATE tasks SET {sets} WHERE id = ? AND state IN ({marks})",
            (state, *columns.values(), task_id, *source),
        )
        if changed and "sending" in source:
            update_followers(tx, task_id)
        return bool(changed)

    return db.run(work)


def update_followers(tx: Tx, task_id: str) -> None:
    """The demo-cache answers that follow the create ``task_id``, once upstream answered
    it: given its upstream id (so the sweep follows them too), or, when it has none to
    follow (upstream refused it, it was never sent, its outcome is unknown), ended with it
    at no cost (``refused`` or ``not_sent`` as it, else ``failed``), their error saying
    why. Before, they stayed ``open`` for ever, answered ``Request not found``."""
    row = tx.one("SELECT state, upstream_id, error FROM tasks WHERE id = ?", (task_id,))
    if row is None or row[0] == "sending":
        return
    if row[1] is not None:
        tx.run(
            "UPDATE tasks SET upstream_id = ? WHERE cached_from = ? AND upstream_id IS NULL",
            (row[1], task_id),
        )
        return
    ended = row[0] if row[0] in ("refused", "not_sent") else "failed"
    why = f"the identical create this demo-cache answer shared was {row[0].replace('_', ' ')}"
    why += (f" ({row[2]})" if row[2] else "") + ": nothing was charged"
    tx.run(
        "UPDATE tasks SET state = ?, error = ?, settled_at = ? "
        "WHERE cached_from = ? AND state = 'open' AND upstream_id IS NULL",
        (ended, why[:500], time.time(), task_id),
    )


#: why a cancelled task whose upstream task others share ended alone
SHARED_CANCEL = "cancelled by its student; its upstream task runs on for the demo cache"


#: what :func:`ask_cancel` found: forward the cancel upstream (the task is ``cancelling``);
#: the task ended ``alone`` now (others follow its upstream task); or it had ``ended``
CancelWay = Literal["forward", "alone", "ended"]
#: ``tasks.cancel_taken``: a cancel of the task may have been applied upstream, as its
#: answer said (accepted, a 5xx, no answer once it may have left): it holds, and the
#: task's end, whatever upstream says but done, is a cancel, charged
TAKEN = 1
#: ``tasks.cancel_taken``: a cancel whose answer never came (its server stopped before
#: it: a stale count, :func:`cancels_in_flight`) may have been taken. It holds too, and
#: upstream's word settles the task: cancelled is a cancel (charged), a failure is
#: ``failed`` (given back); it was taken as not taken, the task put back ``open``, and
#: upstream's billed cancel given back as a failure (review-31 fault 1)
MAYBE_TAKEN = 2


def cancels_in_flight(count: Any, sent_at: Any, now: float) -> int:
    """A task's count of cancels forwarded and not answered, as in flight now: none once
    the latest was forwarded :data:`STALE_SENDING` ago (a forward is one upstream send,
    shorter than that: ``ServeConfig``), as its server stopped before the answer (a kill,
    a crash) and nothing else ever decrements it (review-30 fault 3); none stamped (an
    older version's count) likewise. A count dropped so may have been applied upstream
    (:data:`MAYBE_TAKEN`)."""
    fresh = sent_at is not None and float(sent_at) >= now - STALE_SENDING
    return int(count) if fresh else 0


def ask_cancel(db: Database, task_id: str, *, now: float | None = None) -> CancelWay:
    """A student's cancel: whether to forward it. A task that shares an upstream task with
    others (a demo-cache answer; the sent task while demo-cache answers still follow it)
    ends alone, at once, ``cancelled`` (the sent one still charged), and the shared task
    runs on, never cancelled. Else it is asked first (``cancelling``), so a poll that sees
    it end meanwhile settles it cancelled, charged; asked again while ``cancelling`` (its
    first answer may never have come), it is forwarded again. Each forwarded cancel is
    counted in flight with the task until :func:`cancel_answered`, stamped when sent
    (:func:`cancels_in_flight`). Any other state has ended here, a task cancelled alone
    too: never forwarded, or a second cancel would end the shared task after all
    (docs/decisions.md#serve-reservations)."""
    now = time.time() if now is None else now

    def work(tx: Tx) -> CancelWay:
        row = tx.one(  # as a create that follows it takes this lock: none slips in after
            "SELECT state, cached_from, cancels_out, cancel_sent_at, cancel_taken FROM tasks "
            "WHERE id = ? {lock}",
            (task_id,),
        )
        followed = tx.one(
            "SELECT COUNT(*) FROM tasks WHERE cached_from = ? AND state = 'open'", (task_id,)
        )
        if row is None or row[0] not in ("open", "unknown", "cancelling"):
            return "ended"
        if row[0] == "cancelling":  # nobody follows a task being cancelled
            out = cancels_in_flight(row[2], row[3], now)
            held = int(row[4]) or (MAYBE_TAKEN if int(row[2]) > out else 0)
            tx.run(
                "UPDATE tasks SET cancels_out = ?, cancel_sent_at = ?, cancel_taken = ? "
                "WHERE id = ?",
                (out + 1, now, held, task_id),
            )
            return "forward"
        if row[1] is not None or (followed is not None and int(followed[0])):
            tx.run(
                "UPDATE tasks SET state = 'cancelled', error = ?, settled_at = ? WHERE id = ?",
                (SHARED_CANCEL, now, task_id),
            )
            return "alone"
        tx.run(
            "UPDATE tasks SET state = 'cancelling', cancel_from = ?, cancels_out = 1, "
            "cancel_taken = 0, cancel_sent_at = ? WHERE id = ?",
            (row[0], now, task_id),
        )
        return "forward"

    return db.run(work)


#: what :func:`cancel_answered` and :func:`end_stale_cancels` read of a task
_CANCEL_COLUMNS = (
    "state, cancels_out, cancel_taken, cancel_from, failed_upstream, error, cancel_sent_at"
)


def cancel_answered(db: Database, task_id: str, *, taken: bool, now: float | None = None) -> bool:
    """A forwarded cancel of the task came back: ``taken`` when upstream may have applied
    it (accepted, a 5xx, no answer once it may have left), else it never left or was
    refused. Only when no other cancel of the task is in flight and none was taken, nor
    may have been (:data:`MAYBE_TAKEN`), is the task put back as the first cancel found
    it; if it ended meanwhile on upstream's failure (not its cancel word), settled
    ``cancelled`` and charged as if a cancel caused it, it is ``failed`` and given back:
    nothing was cancelled. Whether it was undone so (False: it stays asked, by this
    cancel or another). One transaction under the task's lock: a cancel accepted upstream
    holds whichever request sent it, and the one that moved the task, failing after it,
    put back ``open``. Cancels counted in flight but stale (:func:`cancels_in_flight`)
    are not others in flight, but may have been taken
    (docs/decisions.md#serve-reservations)."""
    now = time.time() if now is None else now

    def work(tx: Tx) -> bool:
        row = tx.one(f"SELECT {_CANCEL_COLUMNS} FROM tasks WHERE id = ? {{lock}}", (task_id,))
        if row is None:
            return False
        counted = cancels_in_flight(row[1], row[6], now)
        out = max(0, counted - 1)
        lost = int(row[1]) > max(1, counted)  # others' answers never came
        held = TAKEN if taken else int(row[2]) or (MAYBE_TAKEN if lost else 0)
        tx.run(
            "UPDATE tasks SET cancels_out = ?, cancel_taken = ? WHERE id = ?",
            (out, held, task_id),
        )
        return not out and _undo_cancel(tx, task_id, row, held)

    return db.run(work)


def _undo_cancel(tx: Tx, task_id: str, row: Sequence[Any], held: int) -> bool:
    """No cancel of the task in flight (``row`` as :data:`_CANCEL_COLUMNS`, ``held`` its
    ``cancel_taken`` now): none taken, it is put back as the first cancel found it; one
    taken holds. Ended on upstream's failure while being cancelled, and no cancel known
    to be taken (one may have been: upstream's word then is a failure), it is ``failed``
    and given back. Whether it was undone."""
    if held == TAKEN:
        return False
    if row[0] == "cancelling" and row[3] is not None and not held:
        tx.run("UPDATE tasks SET state = ?, cancel_from = NULL WHERE id = ?", (row[3], task_id))
        return True
    if row[0] == "cancelled" and row[4]:
        _give_back(tx, task_id, "failed", str(row[5] or ""), ("cancelled",))
        return True
    return False


def end_stale_cancels(tx: Tx, now: float) -> None:
    """Tasks whose cancels counted in flight are all stale (their server stopped before
    the answers: :func:`cancels_in_flight`) have none in flight, and those cancels may
    have been taken (:data:`MAYBE_TAKEN`): a task still ``cancelling`` stays so, settled
    by upstream's word as it ends; one settled ``cancelled`` on upstream's failure meanwhile
    is ``failed`` and given back, unless another cancel of it is known taken. The sweep
    does it with no upstream needed. One read, under the tasks' locks: on PostgreSQL a
    task asked again meanwhile is read as it is then, its stamp fresh, and passed over."""
    stale = tx.rows(
        f"SELECT id, {_CANCEL_COLUMNS} FROM tasks WHERE state IN ('cancelling', 'cancelled') "
        "AND cancels_out > 0 AND (cancel_sent_at IS NULL OR cancel_sent_at < ?) "
        "ORDER BY id {lock}",
        (now - STALE_SENDING,),
    )
    for task_id, *row in stale:
        held = int(row[2]) or MAYBE_TAKEN
        tx.run("UPDATE tasks SET cancels_out = 0, cancel_taken = ? WHERE id = ?", (held, task_id))
        _undo_cancel(tx, task_id, row, held)


def release(
    db: Database, task_id: str, state: str, why: str = "", *, source: tuple[str, ...] = ()
) -> bool:
    """End the task as ``state`` and give back what it held (upstream refused the create,
    or the task failed); only from one of ``source`` when given, read under the task's
    lock. Idempotent: only the first call gives back; whether it did."""
    return db.run(lambda tx: _give_back(tx, task_id, state, why, source))


def _give_back(tx: Tx, task_id: str, state: str, why: str, source: tuple[str, ...]) -> bool:
    """:func:`release` inside the caller's transaction."""
    row = tx.one(
        f"SELECT key_name, group_name, charged, state, {_AMT} FROM tasks WHERE id = ? {{lock}}",
        (task_id,),
    )
    if row is None or (source and row[3] not in source):
        return False
    if not row[2]:  # a demo-cache answer holds nothing: only its state changes
        tx.run(
            "UPDATE tasks SET state = ?, settled_at = ? WHERE id = ? AND settled_at IS NULL",
            (state, time.time(), task_id),
        )
        return False
    amounts = dict(zip(KINDS, (int(v) for v in row[4:]), strict=True))
    _hold(tx, row[0], row[1], amounts, -1)
    tx.run(
        "UPDATE tasks SET state = ?, charged = 0, error = ?, settled_at = ? WHERE id = ?",
        (state, storable(why[:500]) or None, time.time(), task_id),
    )
    if row[3] == "sending":
        update_followers(tx, task_id)
    return True


#: seconds of nothing but error answers to its status, none of them upstream's word
#: (``Not found.``, ``Request expired``, a 400, a 403 after the teacher's key changed, a
#: lasting 5xx), after which a task is taken as gone all the same (:func:`unanswered`):
#: ten times :data:`GONE_AFTER`, past any deploy's proxy pages
LOST_AFTER = 600.0
#: why a task upstream answered only errors for, for :data:`LOST_AFTER`, is ``unknown``
LOST = (
    f"upstream answered only errors for it for {LOST_AFTER / 60:g} minutes (a 404 or 410 "
    "never its 'Request not found', another 4xx, a 5xx): it may have been made and billed, "
    "so its cost stays reserved until the teacher settles it"
)


def _forget(tx: Tx, task_id: str, why: str, ended: str, now: float) -> bool:
    """The move of :func:`forgotten` under the task's lock: ``why`` an open task is
    ``unknown``, ``ended`` the words of one that ends. Whether it moved."""
    row = tx.one("SELECT state, charged, created_at FROM tasks WHERE id = ? {lock}", (task_id,))
    if row is None or row[0] not in FOLLOWED or now - row[2] < GONE_AFTER:
        return False
    if row[1] and row[0] == "open":
        tx.run(
            "UPDATE tasks SET state = 'unknown', error = ?, missing_since = NULL WHERE id = ?",
            (why, task_id),
        )
    else:
        state = "cancelled" if row[1] else "failed"
        tx.run(
            "UPDATE tasks SET state = ?, error = ?, settled_at = ? WHERE id = ?",
            (state, ended, now, task_id),
        )
    return True


def forgotten(db: Database, task_id: str) -> bool:
    """Upstream answered ``404 Request not found`` for the task: once it is older than
    :data:`GONE_AFTER`, it frees its key's place. Open, it is ``unknown`` (upstream may
    have billed it: reserved until the teacher settles it); being cancelled, it is
    ``cancelled`` (charged, as any cancel upstream accepted); a demo-cache answer, which
    costs nothing, has lost its shared task and ``failed``. Whether it moved."""
    ended = "gone upstream (404 Request not found)"
    return db.run(lambda tx: _forget(tx, task_id, GONE, ended, time.time()))


def unanswered(db: Database, task_id: str, *, now: float | None = None) -> bool:
    """Upstream answered an error for the task's status without its word that it does
    not know it (a proxy's page, a router's ``Not Found``, a wording of its own, a 400
    "expired", a 403 after the teacher's key changed, a 5xx). One such answer settles
    nothing; the first starts a stretch, which a status answer ends
    (:func:`heard`), and a task answered nothing else for :data:`LOST_AFTER` seconds is
    :func:`forgotten` all the same, or it held its key's place for ever. Whether it moved."""
    now = time.time() if now is None else now

    def work(tx: Tx) -> bool:
        row = tx.one("SELECT state, missing_since FROM tasks WHERE id = ? {lock}", (task_id,))
        if row is None or row[0] not in FOLLOWED:  # an unknown one stays as it is
            return False
        if row[1] is None:
            tx.run("UPDATE tasks SET missing_since = ? WHERE id = ?", (now, task_id))
            return False
        ended = f"gone upstream (only errors for {LOST_AFTER / 60:g} minutes)"
        return now - row[1] >= LOST_AFTER and _forget(tx, task_id, LOST, ended, now)

    return db.run(work)


def heard(db: Database, task_id: str) -> None:
    """Upstream answered for the task: a stretch of 404s (:func:`unanswered`) is over."""
    db.run(lambda tx: tx.run("UPDATE tasks SET missing_since = NULL WHERE id = ?", (task_id,)))


def settle(db: Database, task_id: str, body: Any, *, seen: str | None = None) -> bool:
    """Settle the task when its upstream status ``body`` says it ended, read as the
    client reads it (any gateway's ending word, :data:`~..protocol.records.TERMINAL_WORDS`:
    ``COMPLETED`` or ``succeeded``, a failure word or an ``error``); whether it did.
    ``done`` stays charged, and so does ``cancelled`` (upstream's cancel word, or a
    failure after we asked upstream to cancel it: :func:`_ended`); ``failed`` is
    released. Which one is decided by the task's state as
    stored, under its lock: a cancel may have come since the caller read it. A task the
    caller ``seen`` unknown that upstream answers for as still going is ``open`` again
    (only then written: a poll of a running task writes nothing). A poll and the sweep
    both settle by it."""
    if not isinstance(body, dict):
        return False
    try:
        status = Status.from_body(body)
        # its error as the student's client reads it ({} or false is none); outputs unread
        ended = Result.from_body({**body, "outputs": []})
    except ValueError:  # not a status answer: nothing said about the task
        return False
    if not status.done:
        if seen == "unknown":  # answered: upstream knows it again
            move(db, task_id, "open", source=("unknown",), error=None)
        return False
    now = time.time()
    if ended.ok:
        return move(db, task_id, "done", source=ENDING, settled_at=now)
    # kept as upstream wrote it, not as the client shows it on a terminal (pre-escaped,
    # its escapes doubled in JSON): each surface makes it inert, JSON by its own escapes
    said = None if says_nothing(body.get("error")) else readable(body["error"], ERROR_TEXT_KEYS)
    error = str(said or ended.error or status.status.lower())[:500]
    failed_upstream = not says_cancelled(status.status, ended.error_type)
    return db.run(lambda tx: _ended(tx, task_id, error, failed_upstream=failed_upstream, now=now))


def _ended(tx: Tx, task_id: str, error: str, *, failed_upstream: bool, now: float) -> bool:
    """:func:`settle` of a task upstream ended not done, under its lock: upstream's cancel
    word is ``cancelled``, charged, whoever asked it (a task ``open`` here too: it was
    ``failed`` and given back, its error "cancelled by user"); a failure of a task being
    cancelled is ``cancelled`` too, charged but marked ``failed_upstream`` (given back if
    every cancel of it then never left or was refused: :func:`cancel_answered`), unless
    its cancel only may have been taken (:data:`MAYBE_TAKEN`: upstream's word, a
    failure); any other failure is ``failed``, given back. Whether it ended here."""
    row = tx.one("SELECT state, cancel_taken FROM tasks WHERE id = ? {lock}", (task_id,))
    if row is None or row[0] not in ENDING:
        return False
    if not failed_upstream or (row[0] == "cancelling" and int(row[1]) != MAYBE_TAKEN):
        tx.run(
            "UPDATE tasks SET state = 'cancelled', error = ?, settled_at = ?, "
            "failed_upstream = ? WHERE id = ?",
            (storable(error), now, int(failed_upstream), task_id),
        )
        return True
    return _give_back(tx, task_id, "failed", error, ENDING)


def task_state(db: Database, task_id: str) -> str | None:
    """The task's state as stored now, or None when there is no such task."""
    row = db.run(lambda tx: tx.one("SELECT state FROM tasks WHERE id = ?", (task_id,)), write=False)
    return None if row is None else str(row[0])


def resolve_unknown(db: Database, task_id: str, *, made: bool) -> bool:
    """The teacher's word on a create whose outcome was unknown: upstream ``made`` it
    (it stays charged, as ``done``) or not (released). Whether the task was unknown when
    written, under its lock: a sweep or a poll that settled it meanwhile wins (upstream's
    answer)."""
    if not made:
        why = "upstream did not make it (the teacher)"
        return release(db, task_id, "not_made", why, source=("unknown",))
    return move(db, task_id, "done", source=("unknown",), settled_at=time.time())


def tasks_of(
    db: Database,
    *,
    state: str | None = None,
    key: str | None = None,
    now: float | None = None,
) -> list[dict[str, Any]]:
    """Tasks, newest first (at most 1000), as the teacher's ``tasks`` command lists them,
    in one reading transaction: a listing writes nothing. A create ``sending`` for longer
    than :data:`STALE_SENDING` is ``stale``: one the sweep or a settle gives up as
    ``unknown``, shown so without being written (and listed under ``unknown`` too)."""
    cutoff = (time.time() if now is None else now) - STALE_SENDING
    where: list[str] = []
    params: list[Any] = []
    if state == "unknown":
        where.append("(state = 'unknown' OR state = 'sending' AND created_at < ?)")
        params.append(cutoff)
    elif state:
        where.append("state = ?")
        params.append(state)
    if key:
        where.append("key_name = ?")
        params.append(key)
    clause = (" WHERE " + " AND ".join(where)) if where else ""
    columns = "id, key_name, endpoint, state, charged, error, created_at, settled_at, cached_from"
    rows = db.run(
        lambda tx: tx.rows(
            f"SELECT {columns} FROM tasks{clause} ORDER BY created_at DESC LIMIT 1000", params
        ),
        write=False,
    )
    names = [c.removesuffix("_name") for c in columns.split(", ")]  # key_name is shown as key
    return [
        dict(zip(names, row, strict=True))
        | {"charged": bool(row[4]), "stale": row[3] == "sending" and row[6] < cutoff}
        for row in rows
    ]


#: a task as a follow-up needs it: id, endpoint, upstream id (a demo-cache answer's is its
#: first task's, known once upstream answered that one), state, charged, and the state of
#: the first task of a demo-cache answer, the task's error, and since when upstream
#: answered only 404s and 410s for it (:func:`unanswered`)
_TASK_FIELDS = (
    "t.id, t.endpoint, COALESCE(t.upstream_id, src.upstream_id), t.state, t.charged, "
    "src.state, t.error, t.missing_since"
)


def caller_and_task(
    db: Database, token: str, endpoint: str, task_id: str
) -> tuple[KeyRecord | None, tuple[Any, ...] | None]:
    """The key whose token this is and its task ``task_id`` of ``endpoint`` (None when the
    key has no such task), in one query: a status poll's one read."""
    fields = ", ".join(f"k.{name}" for name in KEY_FIELDS)
    row = db.run(
        lambda tx: tx.one(
            f"SELECT {fields}, {_TASK_FIELDS} FROM keys k "
            "LEFT JOIN tasks t ON t.key_name = k.name AND t.id = ? AND t.endpoint = ? "
            "LEFT JOIN tasks src ON src.id = t.cached_from WHERE k.token_hash = ?",
            (task_id, endpoint, hash_token(token)),
        ),
        write=False,
    )
    if row is None:
        return None, None
    n = len(KEY_FIELDS)
    task = tuple(row[n:])
    return KeyRecord.from_row(row[:n]), (task if task[0] is not None else None)

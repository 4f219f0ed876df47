"""A batch's budget: caps on billed units (``budget={"images": 100}``, the kinds of
:data:`~.cost.UNITS`), or on money (``budget=25.0``) through the user's ``prices=``;
checked before sending, reserved row by row while sending: docs/decisions.md#batch-budget.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import BudgetExceeded, PayloadError
from .cost import UNITS
from .problems import problem

__all__ = ["MONEY", "MONEY_WORDS", "Budget", "make_budget", "over_cap", "plain_amount", "summed"]

#: the kind a budget in money is kept under
MONEY = "money"
#: how an amount of :data:`MONEY` is said: in the units of the user's price table (the
#: spec publishes no prices, so no currency is known)
MONEY_WORDS = "price units"
_KINDS = ", ".join(UNITS)
_PRICE_KEYS = ", ".join(UNITS.values())


def summed(charges: Iterable[Mapping[str, float | None]]) -> dict[str, float]:
    """Per kind, the sum of ``charges`` (each row's units; an uncounted one is 0)."""
    total: dict[str, float] = {}
    for units in charges:
        for kind, amount in units.items():
            total[kind] = total.get(kind, 0.0) + (amount or 0.0)
    return total


def plain_amount(value: float) -> str:
    """``12``, ``2.5``, ``0.08``: an amount as a person writes it (``1e+20`` past what
    digits show well, ``0.0001`` for a tiny one, ``over 1.8e308`` for an overflowed sum)."""
    if not math.isfinite(value):
        return "over 1.8e308"
    if abs(value) >= 1e15 or 0 < abs(value) < 0.005:
        return f"{value:.2g}"
    return f"{value:.2f}".rstrip("0").rstrip(".") if value != int(value) else str(int(value))


def over_cap(total: float, cap: float) -> bool:
    """Whether ``total`` passes ``cap``: the one test of a cap (the plan's check and the
    sender's reservation). Float sums may land a hair over an exact cap, so the slack is
    relative to the cap: a cap of 0 allows nothing at all. docs/decisions.md#batch-budget."""
    return total > cap and not math.isclose(total, cap, rel_tol=1e-9, abs_tol=0.0)


def _amount(value: Any) -> float | str:
    """``value`` as a float when it is a finite number a float holds, else what a message
    calls it: a bool, inf, nan or text by its repr, an integer past 1.8e308 (which
    ``float()`` refuses with an OverflowError) by what it is."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return repr(value)
    try:
        number = float(value)
    except OverflowError:
        return "an integer past 1.8e308"
    return number if math.isfinite(number) else repr(value)


def _prices(prices: Any, endpoints: Sequence[str]) -> dict[str, dict[str, float]]:
    """The price table checked: every endpoint of the plan priced, each price a number
    0 or more under a key of :data:`~.cost.UNITS`."""
    if not isinstance(prices, Mapping):
        raise problem("prices", "prices is a dict: endpoint -> {'per_second': 0.08}")
    problems = []
    table: dict[str, dict[str, float]] = {}
    for endpoint, entry in prices.items():
        where = ("prices", str(endpoint))
        if not isinstance(entry, Mapping):
            problems.append({"loc": where, "msg": f"a dict of prices ({_PRICE_KEYS})"})
            continue
        table[str(endpoint)] = {}
        for key, price in entry.items():
            if key not in UNITS.values():
                problems.append({"loc": (*where, str(key)), "msg": f"not one of {_PRICE_KEYS}"})
            elif isinstance(number := _amount(price), str) or number < 0:
                said = number if isinstance(number, str) else repr(price)
                problems.append({"loc": (*where, key), "msg": f"a price 0 or more, not {said}"})
            else:
                table[str(endpoint)][key] = number
    priced = {str(endpoint) for endpoint in prices}
    problems += [
        {
            "loc": ("prices", endpoint),
            "msg": f"the plan sends to {endpoint}, which prices= does not price "
            f"(give {{{endpoint!r}: {{'per_task': ...}}}} with any of {_PRICE_KEYS})",
        }
        for endpoint in endpoints
        if endpoint not in priced
    ]
    if problems:
        raise PayloadError(problems)
    return table


@dataclass(frozen=True)
class Budget:
    """Caps per billed kind (and :data:`MONEY`), and the prices that turn units into money."""

    caps: dict[str, float] = field(default_factory=dict)
    prices: dict[str, dict[str, float]] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.caps)

    def cost(self, endpoint: str, units: Mapping[str, float | None]) -> float | None:
        """What a task of ``endpoint`` billing ``units`` costs (None: no prices, or a
        priced unit the plan cannot count, such as automatic video seconds)."""
        table = self.prices.get(endpoint)
        if table is None:
            return None
        total = 0.0
        for kind, key in UNITS.items():
            if key not in table or kind not in units:
                continue
            if (amount := units[kind]) is None:
                return None
            total += table[key] * amount
        return total

    def charges(self, endpoint: str, units: Mapping[str, float | None]) -> dict[str, float | None]:
        """What one task bills: its ``units``, and :data:`MONEY` when prices are given
        (None: it cannot be counted)."""
        return {**units, MONEY: self.cost(endpoint, units)} if self.prices else dict(units)

    def check(
        self,
        planned: Sequence[tuple[int, str, Mapping[str, float | None]]],
        spent: Mapping[str, float],
        who: str,
    ) -> None:
        """Raise :class:`BudgetExceeded` when ``planned`` ((row, endpoint, units) of the
        rows to send) bills more of a capped kind than the cap less ``spent``, or bills an
        amount the plan cannot count."""
        charged = [(index, self.charges(endpoint, units)) for index, endpoint, units in planned]
        totals = summed(charges for _, charges in charged)
        for kind, cap in self.caps.items():
            unknown = [index for index, charges in charged if charges.get(kind, 0) is None]
            total = totals.get(kind, 0.0)
            already = spent.get(kind, 0.0)
            name = MONEY_WORDS if kind == MONEY else kind
            if unknown:
                rows = ", ".join(map(str, unknown[:10])) + (" …" if len(unknown) > 10 else "")
                raise BudgetExceeded(
                    f"the budget caps {name}, which the plan cannot count for {len(unknown)} "
                    f"row(s) ({rows}): their endpoint chooses the amount (an automatic or "
                    "unstated duration). Set it in the rows or the template, or cap tasks "
                    "instead; nothing was sent",
                    kind=kind,
                    cap=cap,
                    planned=math.inf,
                    spent=already,
                )
            if over_cap(already + total, cap):
                spent_text = f" ({plain_amount(already)} already spent by {who})" if already else ""
                raise BudgetExceeded(
                    f"the plan bills {plain_amount(total)} {name}; the budget allows "
                    f"{plain_amount(cap)}{spent_text}: nothing was sent. Raise the budget "
                    "or send fewer rows",
                    kind=kind,
                    cap=cap,
                    planned=total,
                    spent=already,
                )

    def describe(self) -> dict[str, Any]:
        return {"caps": dict(self.caps), "prices": {k: dict(v) for k, v in self.prices.items()}}


def make_budget(budget: Any, prices: Any, kinds: Sequence[str], endpoints: Sequence[str]) -> Budget:
    """The budget of ``budget=`` and ``prices=`` checked against the plan's billed
    ``kinds`` and ``endpoints``: a dict of caps by kind, or money when prices are given."""
    table = _prices(prices, endpoints) if prices is not None else {}
    if budget is None:
        return Budget({}, table)
    money = not isinstance(budget, Mapping)  # an amount of money, through the prices
    if money and not table:
        raise problem(
            "budget",
            f"a budget is a dict of caps by billed kind ({_KINDS}), or an "
            "amount of money together with prices={endpoint: {'per_second': ...}}",
        )
    caps = {}
    problems = []
    for kind, cap in ({MONEY: budget} if money else budget).items():
        if kind == MONEY and not table:
            wrong = "money needs prices= as well"
        elif kind != MONEY and kind not in UNITS:
            wrong = f"not a billed kind; one of {_KINDS}"
        elif kind != MONEY and kind not in kinds:
            wrong = f"the plan bills no {kind} (it bills {', '.join(kinds)})"
        elif isinstance(number := _amount(cap), str):
            what = "a budget in money" if money else f"the cap on {kind}"
            wrong = f"{what} is a number, not {number}"
        elif number < 0:
            wrong = "a budget is 0 or more" if money else "a cap is 0 or more"
        else:
            caps[kind] = number
            continue
        problems.append({"loc": ("budget", str(kind)), "msg": wrong})
    if problems:
        raise PayloadError(problems)
    return Budget(caps, table)

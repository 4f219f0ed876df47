"""Work a view needs that may wait on the network, run off every write path.

A view writes under its lock (:class:`~genwidgets.widgets.ticker.Throttle`), and
an engine callback may want that lock; so nothing under it may wait on the
engine (docs/decisions.md#no-waits-under-locks). What a view can only get from
the network (the thumbnail of an output whose bytes are at a URL) is made on the
package's worker threads (:mod:`genwidgets._workers`), two at most, holding no
view's lock, and the view asks for a write when it is ready.
"""

from __future__ import annotations

from .._workers import Workers

__all__ = ["BACKGROUND", "VIEW_FAILED"]

#: what a view's work that failed is called in the log
VIEW_FAILED = "a view update"
#: The process's background workers for views.
BACKGROUND = Workers(2, failed=VIEW_FAILED)

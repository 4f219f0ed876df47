"""Every piece of HTML the widgets write, as small functions: what a saved notebook shows.

The lasting faces (a task's, a result's, a card's, the board's, a batch's, a grid's
contact sheet, a form's) and the small HTML lines of the live widgets are written in
this package and nowhere else in :mod:`genwidgets.widgets`: the other modules choose
what to show (which bytes, which URL, which words) and call these. Each function is
written with :func:`~genwidgets._html.tag`, which escapes every text and attribute
value by one rule and returns :class:`~genwidgets._html.Html` (markup already safe,
never escaped again): a ``str`` argument is text, an ``Html`` argument is markup.
URLs arrive checked (``url_kind``). Styles are inline, so a face needs no stylesheet.
By noun: :mod:`.pieces` (badges, lines, tables), :mod:`.outputs`, :mod:`.views`.
docs/decisions.md#lasting-html.
"""

from ..._html import Html, esc, join, tag
from . import outputs, pieces, views
from .outputs import *  # noqa: F403 - the package's names are its modules': each sets __all__
from .pieces import *  # noqa: F403 - as above
from .views import *  # noqa: F403 - as above

__all__ = ["Html", "esc", "join", "tag", *outputs.__all__, *pieces.__all__, *views.__all__]

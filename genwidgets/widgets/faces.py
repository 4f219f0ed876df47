"""Every view has two faces in one place: live while the kernel lives, lasting after it.

A displayed view is two display outputs: the **live face** (the widget, live as long as
its kernel) and the **lasting face** (plain HTML under a ``display_id``, rewritten when
the view changes), which a notebook saved without widget state shows. Who hides whom
and why (``static/faces.js``): docs/decisions.md#two-faces.
"""

from __future__ import annotations

import functools
import re
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import anywidget
import anywidget.experimental
import ipywidgets
import traitlets

from .._workers import Workers
from ..jobs.engine import engine_waits_forbidden
from . import markup
from .lasting import media_choice
from .ticker import Throttle, as_current_request, guarded

__all__ = [
    "BACKGROUND",
    "CELL_VIEWS",
    "CLOSED_VIEW",
    "REPUBLISH",
    "SETTLE_LIMIT",
    "STOPPED_WAITING",
    "WIDGET_VIEW_MIME",
    "Asked",
    "CellViews",
    "CommandView",
    "Faces",
    "LiveMark",
    "Republisher",
    "TwoFaced",
    "answers",
    "close_unused",
    "closed",
    "give_up",
    "in_kernel",
    "make_two_faced",
    "static_module",
    "widget_bundle",
]

WIDGET_VIEW_MIME = "application/vnd.jupyter.widget-view+json"
STATIC = Path(__file__).with_name("static")
#: The longest the end of a cell waits for lasting faces being rewritten (a hang
#: guard: a rewrite takes milliseconds, a video's first preview about a second).
SETTLE_LIMIT = 30.0
#: What displaying a view closed by a run again of the cell that displayed it says.
CLOSED_VIEW = (
    "this view was closed when the cell that displayed it ran again or was deleted "
    "(its widget state is no longer saved); make it again to see it"
)
#: What the end of a cell says when it is stopped while it waits for lasting faces.
STOPPED_WAITING = (
    "genwidgets: stopped waiting for views to be rewritten for saving; a save now may "
    "keep them as they were, a later cell's end writes them"
)


def static_module(*names: str) -> str:
    """Files of ``static/`` joined into one module, without comments and indentation
    (line breaks stay): a saved notebook holds it once per view, and joining is how
    modules share code without a build step (docs/decisions.md#view-commands).
    """
    parts = []
    for name in names:
        text = (STATIC / name).read_text(encoding="utf-8")
        if name.endswith(".css"):
            text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
        lines = (line.strip() for line in text.splitlines())
        parts.append("\n".join(line for line in lines if line and not line.startswith("//")))
    return "\n".join(parts)


class Asked(ValueError):
    """What a view's page asked cannot be done; the reply says what is wrong and what
    is allowed, and the page shows it."""


#: What a command of :func:`answers` returns: fields added to ``{"ok": true}``, or None.
Ask = Callable[[Any, dict[str, Any]], "dict[str, Any] | None"]
Reply = tuple[dict[str, Any], list[bytes]]


def answers(ask: Ask) -> Callable[[Any, Any, list[bytes]], Reply]:
    """An anywidget command (``static/ask.js`` asks it by anywidget's protocol),
    answered either way: ``{"ok": true, ...}``, or ``{"error": "..."}`` for a bad ask
    or a failure doing it, which the page shows; never a traceback in the kernel
    (docs/decisions.md#view-commands)."""

    @functools.wraps(ask)
    def command(view: Any, msg: Any, _buffers: list[bytes]) -> Reply:
        try:
            if not isinstance(msg, dict):
                raise Asked(f"an ask is a JSON object, not {type(msg).__name__}")
            answer = ask(view, msg)
        except Exception as exc:  # the page's ask is answered whatever failed
            said = str(exc) if isinstance(exc, ValueError) else f"{type(exc).__name__}: {exc}"
            return {"error": said or type(exc).__name__}, []
        return {"ok": True, **(answer or {})}, []

    return anywidget.experimental.command(command)


class _Commands(dict[str, Any]):
    """anywidget's table of a class's commands, which answers a name it lacks."""

    def __missing__(self, name: str) -> Callable[[Any, Any, list[bytes]], Reply]:
        known = ", ".join(sorted(self))

        def unknown(_view: Any, _msg: Any, _buffers: list[bytes]) -> Reply:
            return {"error": f"unknown ask {str(name)[:60]!r}; this view answers {known}"}, []

        return unknown


class TwoFaced:
    """A view shown as its two faces: the live one (``live`` beside a :class:`LiveMark`,
    or a :class:`CommandView` itself), then the lasting one, made on its first display.

    Every widget made while a view is made (on that thread: its parts, the ones it holds
    aside, a layout it replaced) is in its ``_made_with``, closed with it (:class:`CellViews`)."""

    _faces: Faces | None = None
    _made_with: tuple[Any, ...] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "__init__" in cls.__dict__:
            cls.__init__ = _gathering(cls.__dict__["__init__"])  # type: ignore[method-assign]

    def _show_faces(
        self,
        build: Callable[[str], dict[str, str]],
        *,
        interval: float = 0.0,
        live: Any = None,
        plain: Callable[[], str] | None = None,
    ) -> bool:
        """Display this view (or ``live``, a box holding it), then its lasting face;
        outside a kernel, print ``plain()`` (else its repr) instead and say False, as
        for a view closed by a run again of its cell (:class:`CellViews`)."""
        if not in_kernel():
            print(plain() if plain is not None else repr(self))
            return False
        live = self if live is None else live
        if live is not self and not isinstance(self, ipywidgets.Widget):
            vars(live).setdefault("_made_with", self._made_with)  # closed with its live face
        if closed(live):
            print(CLOSED_VIEW)
            return False
        if self._faces is None:
            self._faces = Faces(build, interval=interval)
        return self._faces.show(self._live_face(live, self._faces))

    def _live_face(self, live: Any, faces: Faces) -> Any:
        return live_container(live, faces)

    def _refresh_face(
        self, *, force: bool = False, then: Callable[[], object] | None = None
    ) -> None:
        """Rewrite the lasting face soon, if the view was displayed (never waits); ``then``
        once it is written, or at once without one (:meth:`Faces.refresh`)."""
        if self._faces is not None:
            self._faces.refresh(force=force, then=then)
        elif then is not None:
            then()


class CommandView(TwoFaced, anywidget.AnyWidget):
    """An anywidget whose page's asks are anywidget commands (:func:`answers`): an
    ask of a name it has no command for is answered with an error too (anywidget
    itself would raise a KeyError in the kernel)."""

    _anywidget_commands: dict[str, Any]
    #: Which lasting face this live view hides while its kernel lives (``faces.js``).
    face = traitlets.Dict().tag(sync=True)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._anywidget_commands = _Commands(cls._anywidget_commands)

    def _live_face(self, live: Any, faces: Faces) -> Any:
        self.face = faces.live(self)  # its own ES module hides the lasting twin
        return live


#: per thread, the views being made now and what each gathered (:func:`_gathering`)
_MAKING = threading.local()


def _gathering(init: Callable[..., None]) -> Callable[..., None]:
    """``init`` of a :class:`TwoFaced` class, which gathers into the view's ``_made_with``
    every widget made on this thread while it runs (an enclosing view's too)."""

    @functools.wraps(init)
    def made(view: Any, *args: Any, **kwargs: Any) -> None:
        making: list[tuple[Any, list[Any]]] = _MAKING.__dict__.setdefault("views", [])
        if any(other is view for other, _ in making):  # super().__init__ of a subclass
            init(view, *args, **kwargs)
            return
        gathered: list[Any] = []
        making.append((view, gathered))
        try:
            init(view, *args, **kwargs)
        finally:
            making.pop()
        vars(view)["_made_with"] = tuple(w for w in gathered if w is not view)

    return made


def _constructed(widget: Any) -> None:
    """ipywidgets' hook for every widget made (one per process; any earlier one is
    called too, e.g. marimo's)."""
    for _view, gathered in getattr(_MAKING, "views", ()):
        gathered.append(widget)
    if _EARLIER is not None:
        _EARLIER(widget)


#: the construction hook set before this module's (ipywidgets keeps one), called on
_EARLIER = ipywidgets.Widget._widget_construction_callback  # noqa: SLF001 - no public getter
if getattr(_EARLIER, "__qualname__", "") == _constructed.__qualname__:  # a module reload
    _EARLIER = None
ipywidgets.Widget.on_widget_constructed(_constructed)


def _shell() -> Any:
    """IPython's shell, or None where there is none (no IPython, a plain interpreter)."""
    try:
        from IPython import get_ipython  # noqa: PLC0415 - IPython is asked only where a kernel may run
    except ImportError:
        return None
    return get_ipython()


def in_kernel() -> bool:
    """True inside a Jupyter kernel (where widgets can be shown)."""
    return getattr(_shell(), "kernel", None) is not None


class Republisher:
    """Runs each pending write once more at the end of the next cell, on the main
    thread (a ``key`` keeps only the latest); :attr:`in_cell` and :attr:`turn` tell a
    write that landed inside one running cell: docs/decisions.md#two-faces."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: dict[object, Callable[[], Any]] = {}
        self._installed = False
        self.in_cell = False
        self.turn = 0

    def inside(self) -> tuple[bool, int]:
        """Where a write starts: compare it with where it ended (:meth:`landed`)."""
        return self.in_cell, self.turn

    def landed(self, started: tuple[bool, int]) -> bool:
        """Whether a write that started at ``started`` ran inside one running cell,
        start to end (so its label was that cell's, and a headless runner kept it)."""
        return started[0] and started == (self.in_cell, self.turn)

    def add(self, write: Callable[[], Any], *, key: object = None) -> None:
        if self.install():  # with no shell there is no next cell to write in
            with self._lock:
                self._pending[key if key is not None else object()] = write

    def discard(self, key: object) -> None:
        """Forget the pending write of ``key``: a later write carrying a running cell's
        label has landed, and the pending one, older, would overwrite it."""
        with self._lock:
            self._pending.pop(key, None)

    def install(self) -> bool:
        """Hook the end of every cell (once); False where there is no shell."""
        with self._lock:
            if not self._installed:
                self._installed = self._install()
            return self._installed

    def _install(self) -> bool:
        shell = _shell()
        if shell is None:
            return False
        shell.events.register("pre_run_cell", self._cell_starts)
        shell.events.register("post_run_cell", self.flush)
        # hooked from inside a cell (its first view): that cell's start was missed
        running = getattr(getattr(shell, "displayhook", None), "exec_result", None)
        if running is not None:
            CELL_VIEWS.starts(running.info)
        return True

    def _cell_starts(self, info: Any = None, *_args: Any) -> None:
        self.in_cell, self.turn = True, self.turn + 1
        CELL_VIEWS.starts(info)

    def flush(self, *_args: Any) -> None:
        # what is written from now on is written again next time
        self.in_cell, self.turn = False, self.turn + 1
        try:
            if not settle(SETTLE_LIMIT):
                give_up()
        except KeyboardInterrupt:  # the stop button: the user's code has ended already
            give_up()
            print(STOPPED_WAITING, file=sys.stderr)
        with self._lock:
            pending, self._pending = self._pending, {}
        for write in pending.values():
            guarded(write)
        CELL_VIEWS.ends()


#: One display of a view: its live face (the widget displayed), its faces and the
#: lasting face's display handle.
Shown = tuple[Any, "Faces", Any]


class CellViews:
    """The views each cell displayed, by the cell's id (JupyterLab and Notebook 7 send
    it with each run, and the ids of cells deleted since), so that a cell run again, or
    deleted, closes the views its last run displayed: their widget state is no longer
    saved, once a run (docs/decisions.md#two-faces)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cell: str | None = None
        self._shown: dict[str, list[Shown]] = {}
        #: the displays of the running cell's last run and of cells deleted since
        self._gone: list[Shown] = []

    def starts(self, info: Any) -> None:
        """A cell starts: ``info`` is IPython's ``ExecutionInfo`` (no id: nbclient)."""
        cell = getattr(info, "cell_id", None)
        meta = getattr(info, "cell_meta", None)
        deleted = meta.get("deletedCells", []) if isinstance(meta, dict) else []
        with self._lock:
            self._cell = cell if isinstance(cell, str) else None
            for gone in [self._cell, *deleted]:
                self._gone.extend(self._shown.pop(gone, []) if isinstance(gone, str) else [])

    def shown(self, display: Shown) -> None:
        with self._lock:
            if self._cell is not None:
                self._shown.setdefault(self._cell, []).append(display)

    def ends(self) -> None:
        """The cell ended: close what its last run displayed and no other display shows
        (this run displayed again, another cell, a user's own container)."""
        with self._lock:
            gone, self._gone, self._cell = self._gone, [], None
            kept = [live for displays in self._shown.values() for live, _, _ in displays]
        if not gone:
            return
        for _, faces, handle in gone:
            faces.forget(handle)  # its output was cleared: no need to rewrite it
        guarded(functools.partial(close_unused, [live for live, _, _ in gone], kept))


def close_unused(roots: list[Any], kept: list[Any]) -> None:
    """Close the widgets of ``roots``' trees that neither ``kept`` nor any other live
    widget holds (a user's box around a view displayed in a later cell keeps it)."""
    from ipywidgets.widgets.widget import _instances  # noqa: PLC0415 - ipywidgets' live widgets

    doomed = _tree(roots, made=True)
    others = [w for w in list(_instances.values()) if id(w) not in doomed]
    used = _tree([*others, *kept], made=True)
    for key, widget in doomed.items():
        if key not in used:
            widget.close()


def closed(live: Any) -> bool:
    """Whether ``live``, or a widget it holds, was closed (:class:`CellViews`)."""
    return any(widget.comm is None for widget in _tree([live]).values())


def _tree(roots: list[Any], *, made: bool = False) -> dict[int, Any]:
    """``roots`` and the widgets their synced traits hold (children, layout, style), and
    with ``made`` the widgets made with each view (:class:`TwoFaced`)."""
    found: dict[int, Any] = {}
    todo = list(roots)
    while todo:
        widget = todo.pop()
        if id(widget) in found or not isinstance(widget, ipywidgets.Widget):
            continue
        found[id(widget)] = widget
        if made:
            todo.extend(vars(widget).get("_made_with", ()))
        for name in widget.keys:
            value = getattr(widget, name, None)
            if isinstance(value, dict):
                value = list(value.values())
            todo.extend(value if isinstance(value, (list, tuple)) else [value])
    return found


REPUBLISH = Republisher()
CELL_VIEWS = CellViews()

#: What a view's work that failed is called in the log.
VIEW_FAILED = "a view update"
#: Lasting faces are rewritten here, never on the thread that asked: the engine's
#: thread must do no view work, and a video's first preview takes about a second.
LASTING_WORK = Workers(1, failed=VIEW_FAILED)
#: What a view can only get from the network (a thumbnail from a URL) is made here,
#: holding no view's lock, never under a write: docs/decisions.md#no-waits-under-locks.
BACKGROUND = Workers(2, failed=VIEW_FAILED)
_SETTLING = threading.Condition()
#: the lasting faces asked to be rewritten and not yet written as asked
_unsettled: set[Faces] = set()


def settle(timeout: float) -> bool:
    """Wait until every lasting face is written as it was when this began (a refresh
    asked since does not make it wait longer, nor one given up); False at the deadline."""
    deadline = time.monotonic() + timeout
    with _SETTLING:
        wanted = [(face, face.asked) for face in _unsettled if face.asked > face.given_up]
        while any(face.answered < asked for face, asked in wanted):
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            _SETTLING.wait(left)
    return True


def give_up() -> None:
    """Wait no more for the refreshes asked so far (:func:`settle`): a wait for them was
    stopped or reached its limit, and the next cell must not wait for them again."""
    with _SETTLING:
        for face in _unsettled:
            face.given_up = face.asked


def widget_bundle(widget: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """A live face's display data: the widget's view, and an empty text for the
    front-ends that cannot draw it (its lasting twin says it all there). Returns the
    data and metadata (anywidget adds Colab's widget-manager metadata there)."""
    bundle = widget._repr_mimebundle_()
    assert bundle is not None  # a displayable widget always has a front-end view
    data, metadata = bundle if isinstance(bundle, tuple) else (bundle, {})
    return {WIDGET_VIEW_MIME: data[WIDGET_VIEW_MIME], "text/plain": ""}, metadata


class Faces:
    """The lasting face of one view, shown after each of its live faces and kept current.

    ``build(media)`` returns the face's content (``text/html`` and ``text/plain``); it
    must wait on nothing (it runs inside ``engine_waits_forbidden``). ``media`` is read
    once, when the view is made (``GENWIDGETS_SAVED_MEDIA``), so a bad value is an error
    in the cell that made it. :meth:`refresh` may be called from any thread, the engine's
    included: the rewrite happens later on :data:`LASTING_WORK`, at most once per
    ``interval`` seconds, then each display is updated and the write is queued again
    for the end of the next cell (:class:`Republisher`).
    """

    def __init__(
        self,
        build: Callable[[str], dict[str, str]],
        *,
        interval: float = 0.0,
        media: str | None = None,
    ) -> None:
        self.id = uuid.uuid4().hex
        self.media = media_choice(media)
        self._build = build
        #: each display of this face and the bundle last sent to it: a display made
        #: while a rewrite was being built shows what the rewrite shows, the older ones not
        self._handles: dict[Any, dict[str, str]] = {}
        self._lock = threading.Lock()
        self._queued = False
        self._again = False
        self._refresher = Throttle(self._submit, interval=interval)
        self._last: dict[str, str] | None = None  # the bundle last shown or written
        #: held while a bundle is made the last and written, while a write again (the
        #: end of a cell, on the main thread) writes the last, and while a display is
        #: made: the newest lands last, on every display
        self._writing = threading.Lock()
        self.writes = 0
        #: refreshes asked, and how many of them the last rewrite ended had answered
        #: (begun after them): both under ``_SETTLING``, for :func:`settle`
        self.asked = self.answered = 0
        #: refreshes a wait gave up on (:func:`settle`), under ``_SETTLING``
        self.given_up = 0
        #: (ask, callback) of refreshes asked with ``then``, under ``_SETTLING``
        self._then: list[tuple[int, Callable[[], object]]] = []

    def live(self, widget: Any) -> dict[str, str]:
        """The ``face`` trait of a live face: this lasting face's id and the widget's
        model id (``static/faces.js`` asks the widget manager whether its comm lives)."""
        return {"id": self.id, "model": str(widget.model_id)}

    def bundle(self) -> dict[str, str]:
        """The lasting face as display data, built now."""
        with engine_waits_forbidden("a lasting face's build"):
            inner = self._build(self.media)
        html = markup.lasting_box(self.id, inner["text/html"])
        return {"text/html": html, "text/plain": inner.get("text/plain", "")}

    def show(self, live: Any) -> bool:
        """Display ``live`` (a widget), then the lasting face under a new display id;
        False, saying why, when ``live`` was closed (:class:`CellViews`)."""
        from IPython import display as ipd  # noqa: PLC0415 - IPython is asked only where a kernel may run

        # the cells' hooks from now on: a write made in a later cell is seen to carry
        # that cell's label, and kept, not written again at its end
        REPUBLISH.install()
        if closed(live):
            print(CLOSED_VIEW)
            return False
        data, metadata = widget_bundle(live)
        ipd.display(data, raw=True, metadata=metadata)
        with self._writing:  # a rewrite in flight then writes the displays it missed
            bundle = self.bundle()
            handle = ipd.display(bundle, raw=True, display_id=True)
            if handle is not None:
                with self._lock:
                    self._handles[handle] = bundle
                    self._last = bundle
                CELL_VIEWS.shown((live, self, handle))
        return True

    def forget(self, handle: Any) -> None:
        """Stop rewriting one display (its cell's output was cleared by a run again)."""
        with self._lock:
            self._handles.pop(handle, None)

    @property
    def shown(self) -> bool:
        with self._lock:
            return bool(self._handles)

    def refresh(self, *, force: bool = False, then: Callable[[], object] | None = None) -> None:
        """Rewrite the lasting face soon (see the class docstring); never waits. ``then``
        is called once a rewrite begun after this ask has been written (at once when the
        face is not shown): a live face shows an end only after its lasting face does,
        so a notebook saved as soon as a view says done keeps the end in both faces."""
        if not self.shown:
            if then is not None:
                then()
            return
        REPUBLISH.install()  # so the end of the cell waits for this rewrite
        with _SETTLING:
            _unsettled.add(self)
            self.asked += 1
            if then is not None:
                self._then.append((self.asked, then))
        self._refresher.request(force=force)

    def _submit(self) -> None:
        with self._lock:
            if self._queued:
                self._again = True
                return
            self._queued = True
        LASTING_WORK.submit(self._rewrite)

    def _rewrite(self) -> None:
        with self._lock:
            self._again = False
        with _SETTLING:  # the refreshes this bundle answers: asked before it is built
            answered = self.asked
        try:
            bundle = self.bundle()
            with self._writing:
                with self._lock:
                    self._last = bundle
                    stale = [h for h, shown in self._handles.items() if shown != bundle]
                if not stale:  # nothing it shows changed (a late callback): no second megabyte
                    return
                started = REPUBLISH.inside()
                self._write(bundle, stale)
            if not REPUBLISH.landed(started):  # nbclient keeps it only if written again
                REPUBLISH.add(self._write_last, key=self)
            else:  # this one lands: no need to write it again
                REPUBLISH.discard(self)
        finally:
            with self._lock:
                again, self._queued = self._again, self._again
            if again:
                LASTING_WORK.submit(self._rewrite)
            # the live faces waiting for this rewrite are written before it counts as
            # settled: the end of a cell, which waits for that, then sends them again
            with _SETTLING:
                due = [then for ask, then in self._then if ask <= answered]
                self._then = [(ask, then) for ask, then in self._then if ask > answered]
            for then in due:
                guarded(then)
            # a refresh asked once this bundle was begun may still be on its way here
            # (a throttle's timer): this face stays unsettled until a rewrite answers it
            with _SETTLING:
                self.answered = max(self.answered, answered)
                if self.answered == self.asked:
                    _unsettled.discard(self)
                _SETTLING.notify_all()

    def _write_last(self) -> None:
        """Write again the newest bundle, not the one of the rewrite that asked: the end
        of a cell may run it while a newer one is being written (a task that ended then),
        and an older bundle landing after it would be the one saved."""
        with self._writing:
            with self._lock:
                bundle, handles = self._last, list(self._handles)
            if bundle is not None:
                self._write(bundle, handles)

    def _write(self, bundle: dict[str, str], handles: list[Any]) -> None:
        """Send ``bundle`` to ``handles``, each of them this face's displays."""
        with self._lock:
            for handle in handles:
                self._handles[handle] = bundle
            self.writes += 1
        for handle in handles:
            guarded(
                functools.partial(
                    as_current_request, functools.partial(handle.update, bundle, raw=True)
                )
            )


class LiveMark(anywidget.AnyWidget):
    """What an ipywidgets view (the board, a sweep, a ``gw.render``) lacks to be a live
    face, put in its container (``static/live_mark.js``): docs/decisions.md#two-faces."""

    _esm = static_module("faces.js", "live_mark.js")
    face = traitlets.Dict().tag(sync=True)


def live_container(widget: Any, faces: Faces) -> Any:
    """``widget`` with a :class:`LiveMark` beside it, in a box marked with the face id."""
    box = ipywidgets.VBox([widget])
    mark = LiveMark()
    mark.face = faces.live(mark)
    box.children = (widget, mark)
    box.add_class("gw-live")
    box.add_class(f"gw-live-{faces.id}")
    return box


W = TypeVar("W")


def make_two_faced(widget: W, build: Callable[[str], dict[str, str]]) -> W:
    """Give an ipywidgets widget whose content is final (a ``gw.render``) both faces
    when it is a cell's result or passed to ``display()``: an instance attribute
    IPython's display formatter finds, so the widget still nests in containers as
    itself. Outside a kernel, the plain text."""

    def show() -> None:
        faces = Faces(build)
        if not in_kernel():
            print(faces.bundle()["text/plain"])
            return
        faces.show(live_container(widget, faces))

    vars(widget)["_ipython_display_"] = show
    return widget

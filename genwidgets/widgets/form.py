"""``gw.form(endpoint)``: a form per endpoint, generated from its catalog model.

The form validates on every change with no network, shows what the submission bills,
and sends only on a click (or ``form.submit()``). Top to bottom: title and "simulated"
badge, required fields, "Optional settings (N)" folded away, the billing line, notes,
Submit/Reset with the reason Submit is disabled and a folded Code view. A click asks
first (a "Send ..." button beside Submit) when the payload bills more than
``confirm_above`` or its last create got no answer. Displayed, the
form is followed by its own output of the tasks it submitted, with both faces of a
task view (:class:`~.task.TaskList`), so a saved notebook keeps them.
What ``None``, unknown names, Reset, a double click and the asking do:
docs/decisions.md#form-fields.
"""

from __future__ import annotations

import json
import math
import os
import re
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import ipywidgets as W

from .._client import created_nothing, default_client, live_client  # who pays: LiveClients' readers
from .._config import redact, resolve, shown_path, shown_url
from ..catalog import EndpointSpec
from ..catalog import endpoint as catalog_endpoint
from ..errors import GenwidgetsError, PayloadError
from ..lab.code import curl_code, one_line
from ..lab.cost import CONFIRM_ABOVE, billed_count, billed_unit, needs_confirmation, plural
from ..media import validate  # pathlib.Path values (typed local files) are encoded
from ..media.files import LocalMedia
from . import markup
from ._style import ERROR_STYLE, HELP_STYLE, OK_STYLE, WARN_STYLE, layout
from .containers import ModelElement
from .dispatch import build_element
from .elements import BuildContext, Element, checked
from .faces import TwoFaced
from .field_spec import UNSET, FieldSpec, plain
from .task import TaskList
from .ticker import guarded

if TYPE_CHECKING:
    from .._protocols import ClientLike, JobLike

__all__ = ["EndpointForm", "form"]

#: Strings longer than this that look like inline data are shortened in the views.
SHORTEN_AT = 200
_B64_RE = re.compile(r"^[A-Za-z0-9+/=\s]+$")
_UNITS = {"duration": "s"}
#: Clicks this soon after a submission are ignored: a double click queued behind the
#: first one (browser messages wait while a handler runs) must not create a second task.
CLICK_GUARD_SECONDS = 2.0


def form(
    endpoint: str,
    client: ClientLike | None = None,
    *,
    confirm_above: int = CONFIRM_ABOVE,
    **initial: Any,
) -> EndpointForm:
    """A form for ``endpoint`` (see :class:`EndpointForm`); ``initial`` fills fields."""
    return EndpointForm(endpoint, client=client, confirm_above=confirm_above, **initial)


class EndpointForm(TwoFaced, W.VBox):
    """A generated form for one endpoint: ``value``, ``set(**fields)``, ``submit()``.
    A click on Submit asks first above ``confirm_above`` billed generations, the
    rule of grids, sweeps and batches (``lab.cost.needs_confirmation``)."""

    def __init__(
        self,
        endpoint: str,
        client: ClientLike | None = None,
        *,
        confirm_above: int = CONFIRM_ABOVE,
        **initial: Any,
    ) -> None:
        needs_confirmation(0, confirm_above)  # a bad value is a ValueError saying so
        self.spec: EndpointSpec = catalog_endpoint(endpoint)
        self.endpoint = self.spec.id
        self.confirm_above = confirm_above
        self._client = client
        self._initial = dict(initial)
        self._submitting = False
        self._submitted_at = -CLICK_GUARD_SECONDS
        #: payloads whose create got no answer (a task may exist): a click asks first
        self._unknown: list[dict[str, Any]] = []
        #: the payload the "Send ..." button sends, while it is shown
        self._asked: dict[str, Any] | None = None
        self.errors: list[dict[str, Any]] = []
        self.warnings: list[str] = []
        self.last_job: JobLike | None = None

        ctx = BuildContext(endpoint=self.endpoint, model=self.spec.model)
        #: the payload's fields as one sub-form at the root (the form lays them out)
        whole = FieldSpec(name="", wire="", path="", annotation=self.spec.model, required=True)
        self.root = ModelElement(whole, ctx, self.spec.model, build=build_element, lay_out=False)
        self.root.observe(self._refresh)
        #: the field elements by wire name, the required first
        self.fields: dict[str, Element] = self.root.children

        required = [e for e in self.fields.values() if e.spec.required]
        optional = [e for e in self.fields.values() if not e.spec.required]
        self.optional_box = W.VBox()
        self._optional = optional
        title = f"Optional settings ({len(optional)})"
        self.optional = W.Accordion([self.optional_box], titles=(title,), selected_index=None)
        self.optional.observe(self._opened, "selected_index")

        self.title = W.HTML(self._title_html())
        self.billing = W.HTML()
        self.notes = W.HTML()
        self.submit_button = W.Button(
            description="Submit", button_style="primary", icon="paper-plane"
        )
        self.submit_button.on_click(self._on_submit_click)
        self.reset_button = W.Button(description="Reset", icon="undo")
        self.reset_button.on_click(lambda _b: self.reset())
        #: shown beside Submit when a click asks first (what it sends is on it)
        self.confirm_button = W.Button(button_style="warning", icon="exclamation-triangle")
        self.confirm_button.on_click(self._on_confirm_click)
        self.reason = W.HTML(layout=layout("reason"))
        self.reason.add_class("gw-form-reason")
        for button in (self.submit_button, self.confirm_button, self.reset_button):
            button.layout = layout("fixed")  # a long reason never squeezes them to "Su…"
        self.actions = W.HBox(
            [self.submit_button, self.reset_button, self.reason], layout=layout("actions")
        )
        self.actions.add_class("gw-form-actions")
        self.code_view = W.HTML()
        self.json_view = W.HTML()
        code_tabs = W.Tab(children=[self.code_view, self.json_view], titles=("Python", "JSON"))
        self.code = W.Accordion(children=[code_tabs], titles=("Code",), selected_index=None)
        self.output = W.Output()
        #: the submitted tasks, displayed under the form (see the module docstring)
        self.submitted = TaskList(self.output)

        children: list[W.Widget] = [self.title, *(e.widget for e in required)]
        if optional:
            children.append(self.optional)
        children += [
            self.billing,
            self.notes,
            self.actions,
            self.code,
            self.output,
        ]
        super().__init__(children=children)
        if not required and optional:
            self.optional.selected_index = 0
        self.set(**initial)

    # --- building ----------------------------------------------------------------------
    def _title_html(self) -> markup.Html:
        spec = self.spec
        first = spec.description.strip().splitlines()[0] if spec.description else ""
        return markup.form_title(
            spec.title or spec.id, spec.id, spec.kind, self._simulated(), first
        )

    def _simulated(self) -> bool:
        if self._client is not None:
            return bool(self._client.embedded)
        found = live_client()  # the client a submit would use, if one is live
        if found is not None:
            return found.embedded
        try:
            return resolve(None, None).embedded
        except ValueError:
            return False

    def _opened(self, change: Any) -> None:
        if change["new"] is not None:
            self._show_optional()

    def _show_optional(self) -> None:
        """Optional rows are put on screen on first open (cheaper forms)."""
        if not self.optional_box.children and self._optional:
            self.optional_box.children = tuple(e.widget for e in self._optional)

    # --- values ------------------------------------------------------------------------
    @property
    def value(self) -> dict[str, Any]:
        """The payload: set fields only, by wire name (unset optionals are omitted)."""
        payload = self.root.get()
        return {} if payload is UNSET else payload

    def set(self, **fields: Any) -> None:
        """Fill fields by wire or attribute name; nested dicts and lists are accepted.
        ``None`` (or UNSET) clears a field; unknown names are kept and sent as is. A
        value no box can hold is the catalog's :class:`~genwidgets.PayloadError`, and
        the form keeps what it held (a list or a sub-form is not left half set)."""
        before = self.value
        try:
            self.root.update(fields)
        except PayloadError:
            self.root.set(before)
            raise
        self._show_set_optional()

    def reset(self) -> None:
        """Back to the values the form was built with."""
        self.root.set(self._initial)
        self._show_set_optional()

    def _show_set_optional(self) -> None:
        if any(e.get() is not UNSET for e in self._optional):
            self._show_optional()

    # --- validation --------------------------------------------------------------------
    def check(self) -> list[dict[str, Any]]:
        """Validate the current value (no network); returns the errors, also shown."""
        self._refresh()
        return list(self.errors)

    def _refresh(self) -> None:
        payload = self.value
        _, self.errors, self.warnings = checked(lambda: validate(self.endpoint, payload))
        if self._asked is not None and (self.errors or payload != self._asked):
            self._ask(None)  # changed since it asked: Submit asks again if need be
        self._show_errors()
        self._update_submit()
        self.billing.value = markup.join([markup.BILLED_BADGE, " ", self.billing_summary(payload)])
        self.code_view.value = _pre(
            python_code(self.endpoint, payload)
            + "\n# the same request with cURL:\n"
            + curl_code(self.endpoint, payload)
        )
        # default=str: a value the body cannot carry (an unknown field's bytes) is shown,
        # and the catalog's error beside it says why; the view never fails
        shown = json.dumps(_shortened(payload), indent=2, ensure_ascii=False, default=str)
        self.json_view.value = _pre(shown)

    def _show_errors(self) -> None:
        for sub in self.root.walk():
            if sub.errors:
                sub.show_errors([])
        by_element: dict[int, tuple[Element, list[str]]] = {}
        general: list[str] = []
        for error in self.errors:
            loc, msg = _place(error, self.fields)
            target, rest = self.root.locate(loc)
            where = ".".join(map(str, rest))
            text = f"{where}: {msg}" if where else msg
            if target is self.root:
                general.append(text)
                continue
            by_element.setdefault(id(target), (target, []))[1].append(text)
            top = self.fields.get(target.spec.path.split(".")[0].removesuffix("[]"))
            if top is not None and not top.spec.required:
                self.optional.selected_index = 0  # an error must be in sight
        for target, messages in by_element.values():
            target.show_errors(messages)
        self.notes.value = markup.join(
            [markup.lines(general, ERROR_STYLE, "⚠"), markup.lines(self.warnings, WARN_STYLE, "⚑")]
        )

    def _update_submit(self) -> None:
        if self._submitting:
            return
        invalid = bool(self.errors)
        self.submit_button.disabled = invalid
        if invalid:
            first = self.errors[0]
            where = ".".join(map(str, first["loc"]))
            more = f" (and {len(self.errors) - 1} more)" if len(self.errors) > 1 else ""
            text = f"Cannot submit: {where + ': ' if where else ''}{first['msg']}{more}"
            self.submit_button.tooltip = text
            self.reason.value = markup.span(text, ERROR_STYLE)
        elif self._asked is None:  # else the question stays in sight
            self.submit_button.tooltip = "send this task (billed)"
            self.reason.value = markup.span("ready to submit", HELP_STYLE)

    # --- billing -----------------------------------------------------------------------
    def billing_summary(self, payload: Mapping[str, Any] | None = None) -> str:
        """One line: the values of billing fields (the documented default when unset)."""
        payload = self.value if payload is None else payload
        parts = []
        for wire in self.spec.billing_fields:
            spec = field.spec if (field := self.fields.get(wire)) else None
            unit = next((u for k, u in _UNITS.items() if k in wire), "")
            if wire in payload:
                value = payload[wire]
                shown = f"{len(value)} items" if isinstance(value, list) else plain(value)
                note = ""
            else:
                shown = spec.default_text if spec and spec.default_text else "service default"
                note = " (default)" if spec and spec.default_text else ""
            numeric = shown[:1].isdigit() or shown[:2] == "-1"
            unit_text = f" {unit}" if unit and numeric else ""
            parts.append(f"{wire} {shown}{unit_text}{note}")
        if self.spec.prompt_fields:  # imgM: each prompt the text makes bills
            return "Billed per prompt: " + self._prompts_billed(payload)
        if not parts:
            return "Billed per task (no field of this endpoint changes the price)"
        return "Billed on: " + ", ".join(parts)

    def billed(self, payload: Mapping[str, Any] | None = None) -> int | None:
        """Generations the payload bills, as grids count them (``lab.cost.billed_count``:
        its ``n``, times an imgM prompt's permutations and ``--repeat``); what
        ``confirm_above`` compares. None while a prompt does not parse."""
        try:
            return billed_count(self.spec, self.value if payload is None else payload)
        except PayloadError:
            return None

    def _prompts_billed(self, payload: Mapping[str, Any]) -> str:
        count = self.billed(payload)
        if count is None:
            return "counted once the prompt parses (each prompt it makes is billed)"
        said = billed_unit(self.spec).amount(count, "billed ")
        if needs_confirmation(count, self.confirm_above):
            said += f", above confirm_above={self.confirm_above}: Submit asks first"
        return said

    # --- submitting --------------------------------------------------------------------
    @property
    def client(self) -> ClientLike:
        """The client used to submit (``default_client()`` on first use)."""
        if self._client is None:
            self._client = default_client()
        return self._client

    def submit(self) -> JobLike:
        """Validate once and send; raises :class:`~genwidgets.PayloadError` (sending
        nothing) when the payload is invalid, its problems shown beside the fields. One
        trip, and the task joins the form's list: docs/decisions.md#form-fields."""
        payload = self.value
        try:
            prepared = self.client.prepare(self.endpoint, payload)
        except PayloadError as exc:
            self.errors = list(exc.errors)
            self._show_errors()
            self._update_submit()
            raise
        try:
            job = self.client.send(prepared)
        except BaseException as exc:
            if not created_nothing(exc):  # a task may exist (and bill): a click asks first
                self._unknown.append(payload)
            raise
        self.last_job = job
        # sent in code as by the button, the task joins the list under the form, whose
        # lasting face a saved notebook keeps (docs/decisions.md#form-task-list)
        guarded(lambda: self._list(job))
        return job

    def _list(self, job: JobLike) -> None:
        self.submitted.add(job)
        self._refresh_face()  # what it was set to when it sent

    def _on_submit_click(self, _button: Any = None) -> None:
        """The button: submit once, show problems inline, display the job below; or ask
        first, with a "Send ..." button beside it (a double click's second message lands
        on Submit again, which only asks again)."""
        if self._submitting or time.monotonic() - self._submitted_at < CLICK_GUARD_SECONDS:
            return  # a double click (queued behind the first) must not pay twice
        payload = self.value
        question = None if self.errors else self._question(payload)
        if question is not None:
            self._ask(payload, *question)
        else:
            self._send_clicked(payload)

    def _question(self, payload: dict[str, Any]) -> tuple[str, str] | None:
        """What a click must ask before sending ``payload`` (the words of the "Send ..."
        button, and why), or None. A resend whose last create got no answer comes first."""
        if payload in self._unknown:
            return "Send again", (
                "not sent again: the last create of this payload got no answer, so its task "
                "may exist (and bill); look for it with client.history(), or click "
                "“Send again” to create another"
            )
        count = self.billed(payload)
        if count is None or not needs_confirmation(count, self.confirm_above):
            return None
        unit = billed_unit(self.spec)
        return f"Send {count} {plural(unit.noun, count)}", (
            f"not sent yet: it bills {unit.amount(count, 'billed ')}, above "
            f"confirm_above={self.confirm_above}; click “Send {count} "
            f"{plural(unit.noun, count)}” to send it"
        )

    def _ask(self, payload: dict[str, Any] | None, words: str = "", why: str = "") -> None:
        """Show the "Send ..." button for ``payload`` beside Submit, or (None) take it away."""
        self._asked = payload
        buttons = [self.submit_button, self.reset_button, self.reason]
        if payload is not None:
            buttons.insert(1, self.confirm_button)
            self.confirm_button.description = words
            self.confirm_button.tooltip = why
            self.reason.value = markup.span(why, WARN_STYLE)
        self.actions.children = tuple(buttons)

    def _on_confirm_click(self, _button: Any = None) -> None:
        """The "Send ..." button: the deliberate second action that sends what was asked
        about; nothing when it was taken away (sent, or the payload changed)."""
        payload = self._asked
        if self._submitting or payload is None or payload != self.value:
            return
        if payload in self._unknown:
            self._unknown.remove(payload)  # the user chose: asked again only if it fails so
        self._send_clicked(payload)

    def _send_clicked(self, payload: dict[str, Any]) -> None:
        self._ask(None)
        self._submitting = True
        self.submit_button.disabled = True
        self.reason.value = markup.span("submitting…", HELP_STYLE)
        problem = ""
        job = None
        try:
            job = self.submit()
        except PayloadError:
            pass  # shown beside the fields by submit()
        except Exception as exc:  # a transport failure must not vanish into a log
            known = isinstance(exc, GenwidgetsError)
            problem = str(exc) if known else f"{type(exc).__name__}: {exc}"
            if payload in self._unknown:
                problem += " (a click on Submit asks before sending it again)"
        finally:
            self._submitting = False
        self._update_submit()  # the payload did not change: no second validation
        if job is not None:  # counted from the end, the task listed: a slow display
            self._submitted_at = time.monotonic()
            self.reason.value = markup.span(f"submitted: {job.request_id}", OK_STYLE)
        elif problem:
            self.reason.value = markup.span(redact(problem), ERROR_STYLE)

    def _ipython_display_(self) -> None:
        """Both faces of the form (it is a control: its lasting face says what it was
        set to and that it needs its kernel), then the output of the tasks it submits."""
        if self._show_faces(self._lasting):
            self.submitted.show()

    def _lasting(self, media: str) -> dict[str, str]:
        payload = json.dumps(_shortened(self.value), indent=2, ensure_ascii=False, default=str)
        note = "a form needs its kernel: run the cell again to use it"
        html = markup.form_face(self._title_html(), note, redact(payload))
        return {"text/html": html, "text/plain": f"{self!r}: {note}"}

    def __repr__(self) -> str:
        return f"<EndpointForm {self.endpoint} ({len(self.value)} fields set)>"


# --- code views -------------------------------------------------------------------------


def _place(error: Mapping[str, Any], fields: Mapping[str, Any]) -> tuple[tuple[Any, ...], str]:
    """Where an error belongs: a model-level message that starts with a field's name
    ("content: audio needs ...") goes beside that field."""
    loc, msg = tuple(error["loc"]), str(error["msg"])
    if not loc:
        head, sep, rest = msg.partition(": ")
        if sep and head in fields:
            return (head,), rest
    return loc, msg


def _pre(text: str) -> markup.Html:
    return markup.code_view(redact(text))


def _is_inline_data(text: str) -> bool:
    if len(text) <= SHORTEN_AT:
        return False
    return text.startswith("data:") or bool(_B64_RE.match(text[:SHORTEN_AT]))


def _inline_summary(text: str) -> str:
    head = text.split(",", 1)[0] if text.startswith("data:") else "base64"
    return f"{head}, {len(text):,} characters"


def _shortened(value: Any) -> Any:
    """The payload as the JSON view and the lasting face show it: inline data as a short
    marker, a local file by its shown path, a loopback URL by its name (both saved in
    notebooks: docs/decisions.md#shown-paths)."""
    if isinstance(value, os.PathLike):
        return f"<the file {shown_path(value)}, sent encoded for its field>"
    if isinstance(value, str) and _is_inline_data(value):
        return f"<{_inline_summary(value)} (shortened)>"
    if isinstance(value, str) and value.startswith(("http://", "https://")):
        return shown_url(value)
    if isinstance(value, Mapping):
        return {k: _shortened(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shortened(v) for v in value]
    return value


_LITERALS: dict[type, Callable[[Any], object]] = {
    bool: bool,
    int: int.__int__,
    float: float.__float__,
    str: str.__str__,
    bytes: bytes,
    type(None): lambda none: none,
}
"""Types whose ``repr`` is a Python literal that reads back the same (finite floats), in
the order a value is tried (bool before int), each with what gives a value of exactly
that type: a subclass (``np.float64``, an ``IntEnum``) has a ``repr`` that is no literal
(``np.float64(1.1)``, ``<Choice.FOUR: 4>``), and ``str()`` of a ``(str, Enum)`` is its
name, not its text."""


def _literal(value: Any) -> str | None:
    """``value``'s Python literal, written as its built-in type's value; None when it
    has none."""
    for kind, exact in _LITERALS.items():
        if isinstance(value, kind):
            return repr(exact(value))
    return None


def _py(value: Any, indent: int) -> str:
    """A Python literal, pretty-printed, with inline data shortened to a comment. What
    has no literal (a refused upload without a path, an object) is written ``None``, so
    the code parses; :func:`_py_item` says in a comment what it was."""
    pad, inner = "    " * indent, "    " * (indent + 1)
    if isinstance(value, Mapping):
        rows = [
            f"{inner}{_literal(k) or repr(k)}: {_py_item(v, indent + 1)}" for k, v in value.items()
        ]
        return "{\n" + "\n".join(rows) + f"\n{pad}}}" if rows else "{}"
    if isinstance(value, (list, tuple)):
        rows = [f"{inner}{_py_item(v, indent + 1)}" for v in value]
        return "[\n" + "\n".join(rows) + f"\n{pad}]" if rows else "[]"
    if isinstance(value, str) and _is_inline_data(value):
        head = value.split(",", 1)[0] + "," if value.startswith("data:") else ""
        return repr(head + "...")
    if isinstance(value, LocalMedia) and value.path is not None:
        value = value.path
    if isinstance(value, os.PathLike):
        return f"Path({os.fspath(value)!r})"
    if isinstance(value, float) and not math.isfinite(value):
        return f"float({str(float.__float__(value))!r})"
    return _literal(value) or "None"


def _py_item(value: Any, indent: int) -> str:
    text = _py(value, indent) + ","
    if isinstance(value, str) and _is_inline_data(value):
        text += f"  # shortened: {_inline_summary(value)} of inline data"
    elif isinstance(value, LocalMedia):  # the form holds an upload its field refuses
        text += f"  # {one_line(repr(value))}: this field refuses it (see the form)"
    elif not isinstance(value, (Mapping, list, tuple, os.PathLike)) and _literal(value) is None:
        text += f"  # {one_line(repr(value))}: not written, it has no Python literal"
    return text


def python_code(endpoint: str, payload: Mapping[str, Any]) -> str:
    """The equivalent Python for a payload; never holds a key (the client reads it)."""
    paths = "from pathlib import Path\n\n" if _has_path(payload) else ""
    return (
        f"{paths}import genwidgets as gw\n\n"
        "client = gw.Client()  # reads GENWIDGETS_BASE_URL / GENWIDGETS_API_KEY\n"
        f"job = client.submit({endpoint!r}, {_py(dict(payload), 0)})\n"
        "job  # shows the live task view\n"
    )


def _has_path(value: Any) -> bool:
    if isinstance(value, Mapping):
        return any(_has_path(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_has_path(v) for v in value)
    if isinstance(value, LocalMedia):
        return value.path is not None
    return isinstance(value, os.PathLike)

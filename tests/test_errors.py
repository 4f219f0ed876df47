"""The error tree: drawn as it is, and no "a task may exist" under a class one retries on."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

import genwidgets as gw
from genwidgets import errors

#: Errors that say a task may exist at the gateway (retrying could bill a second one).
MAYBE_CREATED = (gw.OutcomeUnknown, gw.ClientClosed)
#: Classes a user catches to try again: nothing under them may mean "a task may exist".
RETRYABLE = (gw.GatewayError, gw.ServerError, gw.RateLimited, gw.Unreachable)


def drawn_tree() -> dict[str, str]:
    """{class name: parent name} as the errors docstring draws it (box-drawing indents)."""
    doc = errors.__doc__ or ""
    block = doc[doc.index("GenwidgetsError\n") : doc.index("GenwidgetsWarning (UserWarning)")]
    parents: dict[str, str] = {}
    stack: list[tuple[int, str]] = []
    for line in block.splitlines():
        match = re.match(r"^(\s*(?:[│ ]   )*)(?:[├└]── )?([A-Z]\w+)", line)
        if not match:
            continue
        depth = len(match.group(1)) // 4 + (1 if "──" in line else 0)
        name = match.group(2)
        stack = [(d, n) for d, n in stack if d < depth]
        if stack:
            parents[name] = stack[-1][1]
        stack.append((depth, name))
    return parents


def test_the_docstring_draws_the_real_hierarchy() -> None:
    tree = drawn_tree()
    assert tree["OutcomeUnknown"] == "NoAnswer" and tree["Unreachable"] == "NoAnswer"
    assert tree["ClientClosed"] == "NoAnswer" and tree["NoAnswer"] == "GenwidgetsError"
    for name, parent in tree.items():
        cls = getattr(errors, name)
        assert cls.__bases__[0] is getattr(errors, parent), f"{name} is drawn under {parent}"
    exceptions = {n for n in errors.__all__ if issubclass(getattr(errors, n), Exception)}
    warnings = {n for n in exceptions if issubclass(getattr(errors, n), gw.GenwidgetsWarning)}
    assert set(tree) | {"GenwidgetsError"} == exceptions - warnings


def test_nothing_that_may_have_created_a_task_sits_under_a_retryable_class() -> None:
    for cls in MAYBE_CREATED:
        assert not issubclass(cls, RETRYABLE), cls
        assert issubclass(cls, gw.NoAnswer)
    assert not issubclass(gw.NoAnswer, gw.GatewayError)
    assert not issubclass(gw.Unreachable, gw.GatewayError)  # no answer came


def test_the_new_names_are_exported_from_the_facade() -> None:
    for name in ("NoAnswer", "Unreachable", "OutcomeUnknown", "ClientClosed", "AmbiguousClient"):
        assert name in gw.__all__ and getattr(gw, name) is getattr(errors, name)


def test_client_closed_says_the_task_may_run_and_how_to_re_attach() -> None:
    exc = gw.ClientClosed(endpoint="ep-1", request_id="req-9")
    text = str(exc)
    assert "may still run" in text and ".job('ep-1', 'req-9')" in text
    assert exc.endpoint == "ep-1" and exc.request_id == "req-9"
    assert "resume()" in str(gw.ClientClosed())


def test_ambiguous_client_names_the_clients_and_asks_for_client() -> None:
    exc = gw.AmbiguousClient(["<Client https://a.test>", "<Client https://b.test>"])
    assert "https://a.test" in str(exc) and "https://b.test" in str(exc)
    assert "client=" in str(exc) and exc.clients[1] == "<Client https://b.test>"


def test_no_answer_messages_are_redacted(known_key: Callable[[str], str]) -> None:
    known_key("sk-in-a-message-1234")
    exc = gw.OutcomeUnknown("echoed sk-in-a-message-1234", endpoint="ep")
    assert "sk-in-a-message-1234" not in str(exc) and "[endpoint ep]" in str(exc)


def test_the_readme_draws_the_same_branches() -> None:
    readme = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("### Errors") :]
    section = section[: section.index("\n## ")] if "\n## " in section else section
    for name in ("GatewayError", "ServerError", "NoAnswer", "Unreachable", "OutcomeUnknown"):
        assert name in section, name
    assert section.index("NoAnswer") > section.index("ServerError")  # its own branch


def test_a_wait_that_ends_after_its_task_ended_says_the_result_is_on_its_way() -> None:
    """3,000 outputs being saved: "the task is still alive" while its status said
    COMPLETED sent the user to cancel a finished, paid task."""
    from types import SimpleNamespace

    ended = SimpleNamespace(
        endpoint="ep", request_id="r1", last_status=SimpleNamespace(done=True, status="COMPLETED")
    )
    said = str(gw.TaskTimeout(ended, 15))
    assert "though the task has ended (COMPLETED)" in said and "still alive" not in said
    running = SimpleNamespace(
        endpoint="ep", request_id="r1", last_status=SimpleNamespace(done=False, status="RUNNING")
    )
    assert "still alive" in str(gw.TaskTimeout(running, 15))


@pytest.mark.parametrize(
    ("seconds", "words"),
    [
        (3.0, "slow down (retry after 3.0 s)"),
        (1e308, "slow down (retry after more than a day)"),
        (float("inf"), "slow down (retry after more than a day)"),
        (float("nan"), "slow down"),
    ],
)
def test_a_rate_limits_wait_is_said_in_words_a_person_reads(seconds: float, words: str) -> None:
    """Explorer (pipes) defect 6: 1e308 was said in 309 digits, inf as "inf s"."""
    assert str(gw.RateLimited("slow down", retry_after=seconds)) == words


REFUSALS = (
    gw.PayloadError("out: the folder cannot be written; nothing was sent"),
    gw.BudgetExceeded(
        "the plan bills 9 images; the budget allows 4", kind="images", cap=4, planned=9
    ),
    gw.NotRecorded("grid g-1 not sent: GENWIDGETS_HOME cannot be written; nothing was sent"),
    gw.LedgerError("another process holds the ledger; nothing was sent", refusal=True),
)


@pytest.mark.parametrize("refusal", REFUSALS, ids=lambda e: type(e).__name__)
def test_a_refusal_shows_in_a_notebook_as_its_words_alone(refusal: gw.GenwidgetsError) -> None:
    try:
        raise refusal
    except gw.GenwidgetsError as caught:
        caught.add_note("gw.load_grid('g-1') re-opens it")
        lines = caught._render_traceback_()
    assert lines[0].startswith(f"{type(refusal).__name__}: ")
    name = type(refusal).__name__
    assert "\n".join(lines) == f"{name}: {refusal}\ngw.load_grid('g-1') re-opens it"
    assert not any("File " in line or "Traceback" in line for line in lines)


@pytest.mark.parametrize(
    "error",
    [gw.LedgerError("not a database"), gw.ServerError("boom", status_code=500), gw.NoAnswer("x")],
    ids=lambda e: type(e).__name__,
)
def test_other_errors_keep_their_traceback_in_a_notebook(error: gw.GenwidgetsError) -> None:
    assert not hasattr(error, "_render_traceback_")  # IPython's test: its usual traceback


def test_ipython_shows_a_refusal_without_frames(capsys: pytest.CaptureFixture[str]) -> None:
    from IPython.core.interactiveshell import InteractiveShell

    # the process's one shell, as a kernel has one: the views' cell hooks are on it, and
    # a test that cleared it would leave the next test's cells unhooked
    shell = InteractiveShell.instance()
    shell.run_cell(
        "from genwidgets import errors\n"
        "def deep():\n    raise errors.NotRecorded('grid g-1 not sent; nothing was sent')\n"
        "deep()\n"
    )
    shown = capsys.readouterr().out
    assert "NotRecorded: grid g-1 not sent; nothing was sent" in shown
    assert "deep()" not in shown and "Traceback" not in shown
    shell.run_cell("from genwidgets import errors\nraise errors.LedgerError('damaged')\n")
    assert "Traceback" in capsys.readouterr().out  # not a refusal: frames as usual

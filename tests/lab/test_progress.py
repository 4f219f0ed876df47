"""A batch's progress outside a notebook: the line, the mode chosen by the stream, a tqdm
bar on a terminal, quiet lines otherwise, nothing in a kernel."""

from __future__ import annotations

import io

from genwidgets.lab import progress as progress_module
from genwidgets.lab.progress import Progress, Snapshot, progress_mode


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def snap(**kw: object) -> Snapshot:
    base: dict[str, object] = {
        "id": "b1",
        "total": 10,
        "counts": {"done": 4, "failed": 1, "running": 2, "queued": 1, "waiting": 2},
        "spent": {"tasks": 7.0, "images": 28.0},
        "billed": {"tasks": 4.0, "images": 16.0},
        "rate": 0.5,
        "eta": 10.0,
    }
    base.update(kw)
    return Snapshot(**base)  # type: ignore[arg-type]


def test_the_line_counts_spend_rate_and_time_left() -> None:
    assert snap().line() == (
        "batch b1: 4 of 10 done, 1 failed, 2 running, 3 queued; 0.5 rows/s, about 10 s left; "
        "spent 16 images (28 reserved)"
    )
    ended = snap(finished=True, stopped="stopped at the budget's cap")
    assert ended.line().endswith("spent 16 images (28 reserved); stopped at the budget's cap")
    assert snap(eta=3600 * 3).line().count("about 3.0 h left") == 1


def test_the_mode_follows_the_stream() -> None:
    assert progress_mode(Terminal()) == "bar"
    assert progress_mode(io.StringIO()) == "lines"
    kernel_stream = type("OutStream", (io.StringIO,), {"__module__": "ipykernel.iostream"})()
    assert progress_mode(kernel_stream) == "none"


def test_lines_are_quiet_and_the_last_one_always_printed(monkeypatch: object) -> None:
    out = io.StringIO()
    face = Progress(10, stream=out)
    face.show(snap())
    face.show(snap(counts={"done": 5}))  # within LINE_EVERY: not printed
    face.close(snap(counts={"done": 10}, billed={"images": 28.0}, finished=True))
    lines = out.getvalue().splitlines()
    assert lines == [snap().line(), "batch b1: 10 of 10 done; spent 28 images"]
    assert progress_module.LINE_EVERY >= 5


def test_a_terminal_gets_a_tqdm_bar() -> None:
    out = Terminal()
    face = Progress(10, stream=out)
    face.show(snap())
    face.close(snap(counts={"done": 10}, billed={"images": 28.0}, finished=True))
    text = out.getvalue()
    assert "batch b1" in text and "10/10" in text and "row" in text
    assert text.rstrip().endswith("batch b1: 10 of 10 done; spent 28 images")


def test_nothing_is_drawn_in_a_kernel() -> None:
    out = io.StringIO()
    face = Progress(10, mode="none", stream=out)
    face.show(snap())
    face.close(snap(finished=True))
    assert out.getvalue() == ""


def test_a_batch_id_with_escapes_is_shown_inert_on_both_faces() -> None:
    """A derived id comes from the rows file's name, which may hold anything."""
    for out in (io.StringIO(), Terminal()):
        face = Progress(10, stream=out)
        hostile = snap(id="b\x1b]0;pwned\x07\x9b2J", counts={"done": 10}, finished=True)
        face.show(hostile)
        face.close(hostile)
        text = out.getvalue()
        assert "b\\x1b]0;pwned\\x07\\x9b2J" in text
        assert not {"\x1b", "\x07", "\x9b"} & set(text), text


def test_reserved_is_not_called_spent() -> None:
    """Issue 40.10: units are reserved as each row is sent; only the rows done spent."""
    sent = snap(counts={"running": 3}, spent={"tasks": 3.0, "video_seconds": 24.0}, billed={})
    assert sent.line().endswith("3 running; 0.5 rows/s, about 10 s left; reserved 24 video_seconds")
    assert "spent" not in sent.line()
    money = snap(spent={"money": 0.24, "images": 6.0}, billed={"money": 0.08, "images": 2.0})
    assert money.spent_text() == (
        "spent 0.08 price units (0.24 reserved), spent 2 images (6 reserved)"
    )


def test_rows_a_pause_keeps_back_are_waiting_not_queued_and_lines_take_the_callers_words() -> None:
    """Paused (or stopped), rows waiting are sent by nothing: "waiting (not sent)", not
    counted as queued; ``words`` rewrites each printed line's advice (the command's)."""
    paused = snap(paused=True, stopped="paused: ... until batch.submit()", finished=True)
    assert "2 running, 1 queued, 2 waiting (not sent);" in paused.line()
    out = io.StringIO()
    face = Progress(10, stream=out, words=lambda text: text.replace("batch.submit()", "again"))
    face.close(paused)
    assert out.getvalue().rstrip().endswith("paused: ... until again")
    assert "3 queued" in snap().line()  # sending goes on: waiting rows are queued

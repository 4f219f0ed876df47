"""Reading a batch's rows: every source, empty cells, capped reads, each bad source a
PayloadError naming the row (and line) and saying what is accepted."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from genwidgets.errors import PayloadError
from genwidgets.lab import rows as rows_module
from genwidgets.lab.rows import read_rows


def messages(exc: pytest.ExceptionInfo[PayloadError]) -> list[tuple[tuple[str, ...], str]]:
    return [(tuple(e["loc"]), e["msg"]) for e in exc.value.errors]


def test_a_csv_file_gives_its_rows_columns_lines_and_leaves_empty_cells_unset(
    tmp_path: Path,
) -> None:
    path = tmp_path / "shots.csv"
    path.write_text('\ufefftext,seed,note\n"a fox, red",1,\n\nsnow,,x\n', encoding="utf-8")
    found = read_rows(path)
    assert found.rows == [{"text": "a fox, red", "seed": "1"}, {"text": "snow", "note": "x"}]
    assert found.columns == ["text", "seed", "note"]
    assert found.lines == [2, 4]  # the blank line is no row
    assert found.stem == "shots" and found.source == "shots.csv"


def test_a_jsonl_file_keeps_json_types(tmp_path: Path) -> None:
    path = tmp_path / "script.jsonl"
    path.write_text(
        '{"text": "hello", "speed": 1.5, "tags": ["a"]}\n\n{"text": "bye", "x": null}\n'
    )
    found = read_rows(str(path))
    assert found.rows == [{"text": "hello", "speed": 1.5, "tags": ["a"]}, {"text": "bye"}]
    assert found.columns == ["text", "speed", "tags", "x"] and found.lines == [1, 3]


def test_a_list_of_dicts_and_a_dataframe(tmp_path: Path) -> None:
    assert read_rows([{"prompt": "a"}, {"prompt": "b", "seed": 2}]).columns == ["prompt", "seed"]
    frame = pd.DataFrame({"prompt": ["a", "b"], "seed": [1.0, float("nan")]})
    found = read_rows(frame)
    assert found.rows == [{"prompt": "a", "seed": 1.0}, {"prompt": "b"}]  # NaN: unset
    assert type(found.rows[0]["seed"]) is float  # numpy scalars become plain Python
    assert found.lines is None


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("empty.csv", "", "is empty"),
        ("blank.csv", "\n\n  \n", "is empty"),
        ("header.csv", "text,seed\n", "a header but no rows"),
        ("twice.csv", "text,text\na,b\n", "names a column twice: text"),
        ("nameless.csv", "text,,seed\na,b,c\n", "column 2 of the header has no name"),
        ("empty.jsonl", "\n\n", "is empty"),
    ],
)
def test_empty_and_malformed_files_are_refused_saying_what_is_accepted(
    tmp_path: Path, name: str, text: str, expected: str
) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(PayloadError, match=expected):
        read_rows(path)


def test_bad_rows_are_named_by_number_and_line_all_at_once(tmp_path: Path) -> None:
    csv_path = tmp_path / "p.csv"
    csv_path.write_text("text,seed\na,1\nb,2,3\nc,4\nd,5,6\n")
    with pytest.raises(PayloadError) as info:
        read_rows(csv_path)
    assert [loc for loc, _ in messages(info)] == [("row 1",), ("row 3",)]
    assert "line 3 of p.csv has 3 values for 2 columns" in messages(info)[0][1]
    jsonl = tmp_path / "p.jsonl"
    jsonl.write_text('{"a": 1}\n[1, 2]\n{"a": \n')
    with pytest.raises(PayloadError) as info:
        read_rows(jsonl)
    found = messages(info)
    assert [loc for loc, _ in found] == [("row 1",), ("row 2",)]
    assert "line 2 of p.jsonl is a JSON list" in found[0][1]
    assert "line 3 of p.jsonl is not JSON" in found[1][1]
    with pytest.raises(PayloadError) as info:
        read_rows([{"prompt": "a"}, "a prompt", {1: "x"}])
    assert [loc for loc, _ in messages(info)] == [("row 1",), ("row 2",)]


def test_unreadable_sources_say_what_rows_may_be(tmp_path: Path) -> None:
    with pytest.raises(PayloadError, match=r"cannot read .*missing\.csv"):
        read_rows(tmp_path / "missing.csv")
    with pytest.raises(PayloadError, match="not a file"):
        (tmp_path / "folder.csv").mkdir()
        read_rows(tmp_path / "folder.csv")
    (tmp_path / "latin.csv").write_bytes("text\ncaf\xe9\n".encode("latin-1"))
    with pytest.raises(PayloadError, match="not UTF-8 text"):
        read_rows(tmp_path / "latin.csv")
    good = b"prompt\n" + b"a fox\n" * 3000  # past 8 KB: a decoder fed in chunks counts anew
    (tmp_path / "late.csv").write_bytes(good + b"caf\xe9\n")
    with pytest.raises(PayloadError, match=rf"not UTF-8 text \(byte {len(good) + 3}\)"):
        read_rows(tmp_path / "late.csv")  # the byte counted from the file's start
    for wrong in ("a red fox", tmp_path / "rows.txt", 42, b"text\na\n", None):
        with pytest.raises(PayloadError, match=r"a list of dicts, a path to a \.csv"):
            read_rows(wrong)
    with pytest.raises(PayloadError, match="the list of rows is empty"):
        read_rows([])
    with pytest.raises(PayloadError, match="DataFrame has no rows"):
        read_rows(pd.DataFrame({"prompt": []}))


def test_reads_are_capped_before_reading(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "big.csv"
    path.write_text("text\n" + "a\n" * 50)
    monkeypatch.setattr(rows_module, "MAX_FILE_BYTES", 40)
    with pytest.raises(PayloadError, match="may be at most"):
        read_rows(path)
    monkeypatch.setattr(rows_module, "MAX_FILE_BYTES", 10_000)
    monkeypatch.setattr(rows_module, "MAX_ROWS", 10)
    with pytest.raises(PayloadError, match="at most 10: split it"):
        read_rows(path)
    with pytest.raises(PayloadError, match="at most 10"):
        read_rows([{"a": 1}] * 11)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a stray quote: every later line would have been one value of row 1
        (
            'text,seed\na fox,1\n"a stray quote,2\n'
            + "".join(f"row {i},{i}\n" for i in range(3, 50)),
            "line 3: a quote opened here is never closed",
        ),
        # read as `Hello, she said` before: the quotes silently dropped
        ('text,seed\na fox,1\n"Hello," she said,2\n', "line 3: a quoted value ends at a quote"),
        ('text\n"a stray\n"b",\nc\n', "line 2: a quoted value begins here and, on line 3, ends"),
    ],
    ids=["left open", "closed mid-value", "closed on a later line"],
)
def test_a_quote_left_open_or_closed_mid_value_is_refused_naming_its_line(
    tmp_path: Path, text: str, expected: str
) -> None:
    path = tmp_path / "quotes.csv"
    path.write_text(text)
    with pytest.raises(PayloadError) as info:
        read_rows(path)
    [(_, msg)] = messages(info)
    assert expected in msg and '"""Hello,"" she said"' in msg  # what is allowed


def test_quotes_a_valid_csv_file_may_hold_are_read(tmp_path: Path) -> None:
    path = tmp_path / "quotes.csv"
    path.write_bytes(
        b'text,seed\r\nshe said "hi",1\r\n"""Hello,"" she said",2\r\n"two\r\nlines",3\r\n'
    )
    found = read_rows(path)
    assert [r["text"] for r in found.rows] == ['she said "hi"', '"Hello," she said', "two\r\nlines"]
    assert found.lines == [2, 3, 5]


def test_jsonl_lines_end_at_newlines_only(tmp_path: Path) -> None:
    path = tmp_path / "breaks.jsonl"
    texts = ["a fox\u2028on two lines", "b\x85c", "d\u2029e\x0bf\x1cg"]
    lines = [json.dumps({"text": t}, ensure_ascii=False) for t in texts]
    path.write_bytes(("\n".join(lines[:2]) + "\r\n\r\n" + lines[2] + "\r\n").encode())
    found = read_rows(path)
    assert [r["text"] for r in found.rows] == texts
    assert found.lines == [1, 2, 4]


def test_a_jsonl_object_naming_a_key_twice_is_refused_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "twice.jsonl"
    path.write_text('{"text": "a"}\n{"text": "a fox", "text": "a dog"}\n{"a": {"b": 1, "b": 2}}\n')
    with pytest.raises(PayloadError) as info:
        read_rows(path)
    assert messages(info) == [
        (
            ("row 1",),
            "line 2 of twice.jsonl names a key twice: 'text'; an object names each key once",
        ),
        (("row 2",), "line 3 of twice.jsonl names a key twice: 'b'; an object names each key once"),
    ]


def test_a_jsonl_number_too_long_to_read_is_refused_naming_its_line_and_key(
    tmp_path: Path,
) -> None:
    path = tmp_path / "long.jsonl"
    long = "1" * 5000
    path.write_text(
        f'{{"text": "a", "seed": {long}}}\n{{"text": "b", "seed": {"9" * 4300}}}\n'
        f'{{"text": "c", "points": [1, -{long}]}}\n{{"a": {{"b": {long}}}}}\n{long}\n'
    )
    with pytest.raises(PayloadError) as info:
        read_rows(path)
    said = "digits (111111111111…): no field takes a number so long; a number in a rows file "
    assert messages(info) == [
        (("row 0",), f"line 1 of long.jsonl: 'seed' holds a number of 5000 {said}"
         "has at most 4300 digits"),
        (("row 2",), f"line 3 of long.jsonl: 'points' holds a number of 5000 "
         f"{said.replace('(', '(-')}has at most 4300 digits"),
        (("row 3",), f"line 4 of long.jsonl: 'b' holds a number of 5000 {said}"
         "has at most 4300 digits"),
        (("row 4",), "line 5 of long.jsonl is a JSON number, not an object of columns"),
    ]  # fmt: skip
    assert "sys.set_int_max_str_digits" not in str(info.value)


def test_a_jsonl_float_python_would_read_as_inf_or_0_is_refused_naming_its_line_and_key(
    tmp_path: Path,
) -> None:
    """A float past a float's range is refused as a too long integer is: read, it
    would be ``inf`` (or ``0.0``), a number the user never wrote."""
    path = tmp_path / "far.jsonl"
    path.write_text(
        f'{{"text": "a", "cfg": {"1" * 5000}.5}}\n{{"text": "b", "cfg": 1e400}}\n'
        '{"text": "c", "cfg": [0.5, -1E-400]}\n{"text": "d", "cfg": 0.0e-999, "x": 1.5e308}\n'
    )
    with pytest.raises(PayloadError) as info:
        read_rows(path)
    large = "no field takes a number so large; a number in a rows file is at most about 1.8e308"
    small = "no field takes a number so small (it reads as 0); a number in a rows file is 0 or"
    assert messages(info) == [
        (("row 0",), f"line 1 of far.jsonl: 'cfg' holds a number of 5001 digits "
         f"(111111111111…): {large} in size"),
        (("row 1",), f"line 2 of far.jsonl: 'cfg' holds the number 1e400: {large} in size"),
        (("row 2",), f"line 3 of far.jsonl: 'cfg' holds the number -1E-400: {small} at "
         "least 5e-324 in size"),
    ]  # fmt: skip


def test_jsonl_infinity_is_refused_as_1e400_is_and_nan_in_a_list_too(tmp_path: Path) -> None:
    """Python's json reads ``Infinity`` as inf, which a number list passed on to the body
    encoder; it is refused at read time with its line and key, as ``1e400`` is. A NaN in
    a list is refused the same way; as a key's whole value it is an empty value."""
    path = tmp_path / "inf.jsonl"
    path.write_text(
        '{"text": "a", "points": [0, 10, Infinity]}\n{"text": "b", "cfg": -Infinity}\n'
        '{"text": "c", "mask": {"points": [0, NaN]}}\n{"text": "d", "o": {"x": -Infinity}}\n'
    )
    with pytest.raises(PayloadError) as info:
        read_rows(path)
    large = "no field takes a number so large; a number in a rows file is at most about 1.8e308"
    assert messages(info) == [
        (("row 0",), f"line 1 of inf.jsonl: 'points' holds the number Infinity: {large} in size"),
        (("row 1",), f"line 2 of inf.jsonl: 'cfg' holds the number -Infinity: {large} in size"),
        (("row 2",), "line 3 of inf.jsonl: 'points' holds NaN in a list: no field takes it "
         "there; write a number (NaN or null as a key's whole value leaves that field unset)"),
        (("row 3",), f"line 4 of inf.jsonl: 'x' holds the number -Infinity: {large} in size"),
    ]  # fmt: skip
    path.write_text('{"text": "a", "seed": NaN, "o": {"x": NaN, "y": 2}}\n')
    assert read_rows(path).rows == [{"text": "a", "o": {"x": None, "y": 2}}]


def test_a_jsonl_key_in_a_refusal_is_shown_short(tmp_path: Path) -> None:
    """A key of thousands of characters was printed whole in the number and twice-named
    refusals."""
    path = tmp_path / "keys.jsonl"
    key = "k" * 5000
    path.write_text(f'{{"{key}": 1e400}}\n{{"{key}": 1, "{key}": 2}}\n')
    with pytest.raises(PayloadError) as info:
        read_rows(path)
    said = messages(info)
    assert len(said) == 2 and all("(5000 characters)" in text for _, text in said)
    assert all(len(text) < 400 for _, text in said)

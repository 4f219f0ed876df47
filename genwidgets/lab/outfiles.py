"""Writing a batch's outputs into its folder: named, with their provenance, never over
another's file (``.part`` then ``os.link``; ``~2``, ``~3``... for a name held).
docs/decisions.md#batch-files.
"""

from __future__ import annotations

import contextlib
import filecmp
import glob
import os
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._files import create_beside
from .._formats import extension_for
from .manifest import read_manifest
from .naming import file_name
from .problems import problem
from .provenance import provenance, read_provenance, write_sidecar, write_with_provenance

if TYPE_CHECKING:
    from ..protocol.records import Output

__all__ = ["check_out", "write_outputs"]

#: the most ``~N`` suffixes tried before giving up on a name
MAX_SUFFIX = 1000


def check_out(out: Path, batch_id: str, *, known: bool = True, make: bool = True) -> None:
    """Make ``out`` and prove it writable, before anything is sent; a folder holding
    another batch's manifest is refused (its names would clash), and so is one holding
    rows of this batch already sent when the store does not ``know`` the batch: another
    ledger (``GENWIDGETS_HOME``) sent them, and sending them again pays twice. With
    ``make`` false a missing folder is left missing (checked again once confirmed). A
    stored batch (``known``) that cannot write there is told to make it writable: it
    writes into no other folder, and another id would create every row again."""
    if not make and not out.exists():
        return  # no manifest there to refuse; made and proved writable once confirmed
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / f".genwidgets-probe-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        if known:  # its files go there only: another folder is refused as not its own
            raise problem(
                "out",
                f"batch {batch_id!r} writes its files into {out}, which cannot be written "
                f"now ({exc.strerror or exc}): make it writable (or free space there) and "
                "run the batch again; nothing was sent",
            ) from None
        raise problem(
            "out",
            f"cannot write into {out}: {exc.strerror or exc}; give out= a folder you can write",
        ) from None
    said = read_manifest(out).values()
    sent = [r["request_id"] for r in said if r.get("batch") == batch_id and r.get("request_id")]
    if sent and not known:
        raise problem(
            "out",
            f"{out} holds {len(sent)} row(s) of batch {batch_id!r} already sent (request "
            f"{sent[0]}, ...) by another ledger than this one: sending them again would pay "
            "twice. Run the batch with the GENWIDGETS_HOME and gateway that sent them (the "
            "same command there resumes it, with no new create), or give out= another folder",
        )
    others = {record.get("batch") for record in said} - {None, batch_id}
    if others:
        owner = others.pop()
        raise problem(
            "out",
            f"{out} holds the files of batch {owner!r}; give out= another "
            f"folder, or id={owner!r} to resume that batch",
        )


def _ours(path: Path, partial: Path, own: Collection[str], made: Mapping[str, Any]) -> bool:
    """Whether ``path`` is this row's own earlier file: recorded as such, saying so
    inside (a process killed after writing it, before recording it: the same batch, row
    and task, never another task's paid output), or the very bytes of ``partial``
    (killed before its provenance sidecar: replacing it loses nothing)."""
    if path.name in own:
        return True
    found = read_provenance(path)
    if found is not None:
        return all(found.get(name) == made[name] for name in ("batch", "row", "request_id"))
    try:
        return filecmp.cmp(path, partial, shallow=False)
    except OSError:
        return False


def _claim(partial: Path, target: Path, own: Collection[str], made: Mapping[str, Any]) -> Path:
    """Move ``partial`` to ``target``, or to ``target~N`` when another file holds the name."""
    candidate = target
    for n in range(2, MAX_SUFFIX + 2):
        try:
            os.link(partial, candidate)
        except FileExistsError:
            held = not _ours(candidate, partial, own, made)
        except OSError:  # no hard links here (some network or FAT file systems)
            held = candidate.exists() and not _ours(candidate, partial, own, made)
        else:
            partial.unlink(missing_ok=True)
            return candidate
        if not held:  # free, or this row's own earlier file: replaced
            os.replace(partial, candidate)
            return candidate
        candidate = target.with_name(f"{target.stem}~{n}{target.suffix}")
    raise OSError(f"no free name for {target.name} after {MAX_SUFFIX} tries")


def write_outputs(
    out: Path,
    stem: str,
    outputs: list[Output],
    *,
    own: Collection[str],
    batch: str,
    row: int,
    endpoint: str,
    request_id: str | None,
    payload: Mapping[str, Any],
) -> list[Path]:
    """Write every output of one row into ``out``; returns the paths written."""
    made = {"batch": batch, "row": row, "request_id": request_id}
    text = provenance(
        batch=batch, row=row, endpoint=endpoint, request_id=request_id, payload=payload
    )
    written: list[Path] = []
    for k, output in enumerate(outputs):
        name = file_name(stem, extension_for(output.content_type), k, len(outputs))
        target = out / name
        again = target.exists()  # written before: a killed writer may have left pieces
        partial = create_beside(target)
        try:
            kept = output.path  # the ledger's copy, else its bytes
            source = kept if kept is not None and kept.exists() else output.read()
            inside = write_with_provenance(source, partial, output.content_type, text)
            path = _claim(partial, target, own, made)
        finally:
            with contextlib.suppress(OSError):
                partial.unlink(missing_ok=True)
        if not inside:
            write_sidecar(path, text)
        for leftover in out.glob(f".{glob.escape(path.name)}.*.part") if again else ():
            leftover.unlink(missing_ok=True)
        written.append(path)
    return written

"""The things referenced operations create (assets, face sessions, audio previews,
elements, subjects), and the dependency checks on them; each endpoint's check and
answer are one row of :data:`OPERATIONS_BY_ENDPOINT` (or of its family).

A broken dependency is answered 422 with the field named when the task is created,
before it is billed. Every operation and check: docs/decisions.md#sim-world.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import partial
from typing import TYPE_CHECKING, Any

from .outputs import image_number_field, imgm_version
from .registry import family_of, rule_for
from .synth import MediaFile

if TYPE_CHECKING:
    from .tasks import Task

Errors = list[dict[str, Any]]
JsonAnswer = tuple[str, Mapping[str, Any]]  # an answer's JSON output: its file name, its value
ASSET_ACTIVATION_SECONDS = 1.0
DEMO_ASSET_ID = "asset-demo"
DEMO_GROUP_ID = "group-demo"


def _iso(stamp: float) -> str:
    return datetime.fromtimestamp(stamp, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _new_id(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(6)}"


@dataclass
class Asset:
    """An asset: its id, the asset-create fields it was made with, when it was made and
    when it turns Active."""

    id: str
    fields: Mapping[str, Any]
    created: float
    active_at: float

    def record(self, base_url: str, now: float) -> dict[str, Any]:
        active = now >= self.active_at
        p, url = self.fields, str(self.fields.get("URL"))
        return {
            "Id": self.id,
            "Name": str(p.get("Name") or "asset"),
            "URL": base_url + url if url.startswith("/") else url,
            "AssetType": str(p.get("AssetType") or "Image"),
            "GroupId": str(p.get("GroupId")),
            "Status": "Active" if active else "Processing",
            "CreateTime": _iso(self.created),
            "UpdateTime": _iso(self.active_at if active else self.created),
            "ProjectName": str(p.get("ProjectName") or "default"),
        }


@dataclass
class Checking:
    """One request under its dependency check: what it asks, and what the check finds
    (problems, each with the field it names; facts for the media step)."""

    endpoint: str
    payload: Mapping[str, Any]
    key: str
    errors: Errors = field(default_factory=list)
    context: dict[str, Any] = field(default_factory=dict)

    def fail(self, loc: tuple[Any, ...], msg: str) -> None:
        self.errors.append({"loc": loc, "msg": msg})


class World:
    """Assets, face sessions, audio previews and elements; checks and JSON results."""

    def __init__(self, lookup: Callable[[str], Task | None], demo_image_path: str) -> None:
        self._lookup = lookup
        now = time.time()
        self.groups: dict[str, dict[str, str]] = {
            DEMO_GROUP_ID: {"Name": "Demo group", "ProjectName": "default"}
        }
        demo = {"Name": "Demo image", "URL": demo_image_path, "GroupId": DEMO_GROUP_ID}
        self.assets: dict[str, Asset] = {DEMO_ASSET_ID: Asset(DEMO_ASSET_ID, demo, now, now)}
        self.sessions: dict[str, set[str]] = {}
        self.audio_ms: dict[str, int] = {}
        self.audio_texts: dict[str, str] = {}  # audio_id -> the previewed text (its voice)
        self.session_videos: dict[str, Any] = {}  # session_id -> the identified video_url
        self.elements: set[int] = set()  # numbered from 1001 on

    # ------------------------------------------------------------------ checks

    def check(
        self, endpoint: str, payload: Mapping[str, Any], key: str
    ) -> tuple[Errors, dict[str, Any]]:
        """Dependency problems of a valid payload, and facts the media step needs."""
        checking = Checking(endpoint, payload, key)
        check = operation_of(endpoint).check
        if check is not None:
            check(self, checking)
        return checking.errors, checking.context

    def check_imgm_edit(self, c: Checking, *, takes_v8: bool = True) -> None:
        """An imgM edit: its upstream task and image number (``takes_v8``: whether it
        edits a task of a V8-series ``imgM_diffusion``)."""
        number_field = image_number_field(c.endpoint)
        number = c.payload.get(number_field, 0)
        if isinstance(number, bool) or not isinstance(number, int) or not 0 <= number <= 3:
            c.fail((number_field,), f"must be 0, 1, 2 or 3, got {number!r}")
        job_id = c.payload.get("jobId")
        upstream = self._lookup(job_id) if isinstance(job_id, str) else None
        v8 = bool(upstream and upstream.context.get("v8_diffusion"))
        if upstream is None or upstream.key != c.key:
            problem = (
                f"no imgM task {job_id!r} found; "
                "use the request_id of a completed imgM-v8.1-t2i or imgM_diffusion task"
            )
        elif family_of(upstream.endpoint) != "imgM":
            problem = f"task {job_id!r} is a {upstream.endpoint} task, not an imgM image task"
        elif upstream.status != "COMPLETED":
            problem = f"task {job_id!r} is {upstream.status}; wait until it is COMPLETED"
        elif upstream.error:
            problem = f"task {job_id!r} failed ({upstream.error_type}) and has no images"
        elif v8 and not takes_v8:
            problem = (
                f"task {job_id!r} comes from imgM_diffusion with a V8-series version, which "
                "does not support inpaint, pan or outpaint; use a --v 7 task"
            )
        else:
            problem = ""
        if problem or upstream is None:
            c.fail(("jobId",), problem)
            return
        named = [] if c.errors else upstream.outputs[number : number + 1]  # a number 0-3
        c.context.update(
            v8_diffusion=v8,
            upstream_size=upstream.facts.get("image_size", (1024, 1024)),
            upstream_seed=upstream.facts.get("seed", 0),
            upstream_image=named[0].body(upstream.base_url).get("url") if named else None,
        )

    def note_diffusion_version(self, c: Checking) -> None:
        """Whether an imgM_diffusion task draws with a V8-series version (its edits ask)."""
        prompt = str(c.payload.get("prompt", ""))
        c.context["v8_diffusion"] = imgm_version(prompt).startswith("8")

    def check_group(self, c: Checking) -> None:
        group = c.payload.get("GroupId")
        if str(group) not in self.groups:
            c.fail(
                ("GroupId",),
                f"asset group {group!r} not found; create one with asset-group-create",
            )

    def check_asset(self, c: Checking) -> None:
        asset = c.payload.get("Id")
        if str(asset) not in self.assets:
            c.fail(("Id",), f"asset {asset!r} not found; create one with asset-create")

    def _asset_problem(self, ref: str) -> str | None:
        asset = self.assets.get(ref.removeprefix("asset://"))
        if asset is None:
            return f"asset {ref!r} not found; create it with asset-create first"
        if time.time() < asset.active_at:
            return f"asset {ref!r} is still Processing; wait until asset-get shows Status Active"
        return None

    def check_vida_assets(self, c: Checking) -> None:
        content = c.payload.get("content")
        for i, item in enumerate(content if isinstance(content, list) else []):
            if not isinstance(item, dict):
                continue
            for kind in ("image_url", "video_url", "audio_url"):
                inner = item.get(kind)
                url = inner.get("url") if isinstance(inner, dict) else None
                if isinstance(url, str) and url.startswith("asset://"):
                    problem = self._asset_problem(url)
                    if problem:
                        c.fail(("content", i, kind, "url"), problem)

    def check_lip_sync(self, c: Checking) -> None:
        session = c.payload.get("session_id")
        faces = self.sessions.get(session) if isinstance(session, str) else None
        if faces is None:
            c.fail(
                ("session_id",),
                f"unknown session {session!r}; call "
                "vidK-face-identify first and use its session_id",
            )
        given = c.payload.get("face_choose")
        listed = given if isinstance(given, list) else []
        choices = [(i, choice) for i, choice in enumerate(listed) if isinstance(choice, dict)]
        for i, choice in choices:
            face = choice.get("face_id")
            if faces is not None and (not isinstance(face, str) or face not in faces):
                c.fail(
                    ("face_choose", i, "face_id"),
                    f"face {choice.get('face_id')!r} is not in session {session!r}",
                )
            audio_id = choice.get("audio_id")
            if audio_id is not None and (
                not isinstance(audio_id, str) or audio_id not in self.audio_ms
            ):
                c.fail(
                    ("face_choose", i, "audio_id"),
                    f"unknown audio {audio_id!r}; create one with vidK-audio-preview",
                )
            milliseconds = self.audio_ms.get(str(audio_id), 5000)
            start, end = choice.get("sound_start_time"), choice.get("sound_end_time")
            if isinstance(start, int) and isinstance(end, int) and end > start:
                milliseconds = end - start
            c.context["audio_seconds"] = max(2.0, min(60.0, milliseconds / 1000))
        # what vidK-lip-sync's media starts from: the identified video and the previews' voices
        c.context["source_video"] = self.session_videos.get(str(session))
        chosen = [choice.get("audio_id") for _, choice in choices]
        c.context["audio_texts"] = {a: self.audio_texts[a] for a in chosen if a in self.audio_texts}

    def check_elements(self, c: Checking) -> None:
        items = c.payload.get("element_list")
        for i, item in enumerate(items if isinstance(items, list) else []):
            element = item.get("element_id") if isinstance(item, dict) else None
            if not isinstance(element, int) or element not in self.elements:
                c.fail(
                    ("element_list", i, "element_id"),
                    f"unknown element {element!r}; create one with vidK-custom-element",
                )

    # ------------------------------------------------------------------ results

    def finish(self, task: Task, speed: float) -> list[MediaFile]:
        """Register what a successful task created; its JSON outputs."""
        answer = operation_of(task.endpoint).answer
        if answer is None:
            return []
        name, value = answer(self, task, speed)
        text = json.dumps(value)
        return [MediaFile(name, "application/json", text.encode(), inline=text)]

    def create_group(self, task: Task, speed: float) -> JsonAnswer:
        p, group = task.payload, _new_id("group")
        self.groups[group] = {
            "Name": str(p.get("Name")),
            "ProjectName": str(p.get("ProjectName", "default")),
        }
        return "group.json", {"GroupId": group}

    def create_asset(self, task: Task, speed: float) -> JsonAnswer:
        now = time.time()
        asset = Asset(_new_id("asset"), task.payload, now, now + ASSET_ACTIVATION_SECONDS / speed)
        self.assets[asset.id] = asset
        return "asset.json", asset.record(task.base_url, now)

    def get_asset(self, task: Task, speed: float) -> JsonAnswer:
        asset = self.assets[str(task.payload.get("Id"))]
        return "asset.json", asset.record(task.base_url, time.time())

    def identify_faces(self, task: Task, speed: float) -> JsonAnswer:
        session, face = _new_id("session"), _new_id("face")
        self.sessions[session] = {face}
        self.session_videos[session] = task.payload.get("video_url")
        faces = [{"face_id": face, "start_time": 0, "end_time": 5000}]
        return "faces.json", {"session_id": session, "face_data": faces}

    def preview_audio(self, task: Task, speed: float) -> JsonAnswer:
        audio = _new_id("audio")
        self.audio_ms[audio] = int(task.facts.get("duration_ms", 5000))
        self.audio_texts[audio] = str(task.payload.get("text", ""))
        return "audio.json", {"audio_id": audio, "duration_ms": self.audio_ms[audio]}

    def create_element(self, task: Task, speed: float) -> JsonAnswer:
        element = 1001 + len(self.elements)
        self.elements.add(element)
        return "element.json", {"element_id": element}

    def create_subject(self, task: Task, speed: float) -> JsonAnswer:
        name = str(task.payload.get("name"))
        return "subject.json", {"subject_id": _new_id("subject"), "name": name}


Check = Callable[[World, Checking], None]
Answer = Callable[[World, "Task", float], JsonAnswer]


@dataclass(frozen=True)
class Operation:
    """What the world does for one endpoint: the check before its task is created
    (appending problems and facts for the media step), and the answer it records
    when the task completes (its JSON outputs). None: nothing to check or record."""

    check: Check | None = None
    answer: Answer | None = None


#: The operations of the endpoints that reference or create things, by endpoint or
#: by family (looked up by :func:`operation_of`); any other endpoint has none.
OPERATIONS_BY_ENDPOINT: dict[str, Operation] = {
    "imgM-v8.1-i2i": Operation(check=World.check_imgm_edit),
    "imgM-inpaint": Operation(check=partial(World.check_imgm_edit, takes_v8=False)),
    "imgM_pan": Operation(check=partial(World.check_imgm_edit, takes_v8=False)),
    "imgM_diffusion": Operation(check=World.note_diffusion_version),
    "vidK-lip-sync": Operation(check=World.check_lip_sync),
    "vidK-v3-turbo-t2v": Operation(check=World.check_elements),
    "vidK-v3-motion-control": Operation(check=World.check_elements),
    "asset-group-create": Operation(answer=World.create_group),
    "asset-create": Operation(check=World.check_group, answer=World.create_asset),
    "asset-get": Operation(check=World.check_asset, answer=World.get_asset),
    "vidK-face-identify": Operation(answer=World.identify_faces),
    "vidK-audio-preview": Operation(answer=World.preview_audio),
    "vidK-custom-element": Operation(answer=World.create_element),
    "vidV-create-subjects": Operation(answer=World.create_subject),
}
OPERATIONS_BY_FAMILY: dict[str, Operation] = {
    "vidA": Operation(check=World.check_vida_assets),
}


def operation_of(endpoint: str) -> Operation:
    """The endpoint's row, else its family's, else nothing to do."""
    return rule_for(endpoint, OPERATIONS_BY_ENDPOINT, OPERATIONS_BY_FAMILY, Operation())

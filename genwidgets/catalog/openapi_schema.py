"""The queue protocol as an OpenAPI 3.1 document, built from the catalog.

Other tools read OpenAPI, not our Python models: an API fuzzer (CI runs schemathesis
against the simulator from this document), a code generator, a gateway's conformance
tests. One create operation per endpoint with the model's JSON Schema as its body, one
status/result/cancel operation each, bearer auth; what it leaves out and why:
docs/decisions.md#gateways-and-their-dialects.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .registry import endpoints

if TYPE_CHECKING:
    from .registry import EndpointSpec

__all__ = ["openapi"]

OPENAPI_VERSION = "3.1.0"
_REF = "#/components/schemas/"


def _object(description: str | None, required: tuple[str, ...], **properties: Any) -> Any:
    """A JSON Schema object of ``properties``, ``required`` of them required."""
    described = {"description": description} if description else {}
    return {"type": "object", **described, "properties": properties, "required": list(required)}


_TEXT = {"type": "string"}
_URI = {"type": "string", "format": "uri"}
_NULLABLE_TEXT = {"type": ["string", "null"]}
_DETAIL = _object("An error of the service: what is wrong, as text.", ("detail",), detail=_TEXT)
_GATEWAY_ERROR = _object(
    "An error of the gateway (auth, rate limit, transient).",
    ("error",),
    error=_object(None, ("code", "message"), code=_TEXT, message=_TEXT),
    request_id=_TEXT,
)
_HANDLE = _object(
    "The task handle (spec 2.1).",
    ("request_id", "status_url", "response_url", "cancel_url"),
    request_id=_TEXT,
    status_url=_URI,
    response_url=_URI,
    cancel_url=_URI,
    queue_position={"type": "integer", "minimum": 0},
)
_STATUS = _object(
    "A status answer (spec 2.2): IN_QUEUE, IN_PROGRESS or COMPLETED.",
    ("request_id", "status"),
    request_id=_TEXT,
    status={"type": "string", "enum": ["IN_QUEUE", "IN_PROGRESS", "COMPLETED"]},
    queue_position={"type": "integer", "minimum": 1},
    error=_NULLABLE_TEXT,
    error_type=_NULLABLE_TEXT,
)
_OUTPUT = _object(
    "One produced file: a URL, inline content, or both.",
    ("content_type",),
    content_type=_TEXT,
    file_name=_TEXT,
    file_size={"type": "integer", "minimum": 0},
    url=_URI,
    content=_TEXT,
    encoding={"type": "string", "enum": ["hex", "base64"]},
)
_RESULT = _object(
    "The result of a finished task (spec 2.2).",
    ("request_id", "status", "outputs"),
    request_id=_TEXT,
    status={"type": "string", "const": "COMPLETED"},
    error=_NULLABLE_TEXT,
    error_type=_NULLABLE_TEXT,
    outputs={"type": "array", "items": {"$ref": f"{_REF}Output"}},
)
_CANCELLED = _object(
    None,
    ("status",),
    request_id=_TEXT,
    status={"type": "string", "const": "CANCELLATION_REQUESTED"},
)

#: the answers every API operation may give, then each operation's own (code -> text, schema)
_COMMON = {
    "401": ("Missing or unknown API key.", "GatewayError"),
    "405": ("Method not allowed.", "Detail"),
    "429": ("Rate limit exceeded; wait Retry-After seconds.", "GatewayError"),
}
_CREATE = {
    "200": ("The task handle.", "Handle"),
    "400": ("Body empty, not JSON, not an object, or asking for a webhook.", "Detail"),
    "403": ("Model not allowed for this user.", "Detail"),
    "404": ("App not found.", "Detail"),
    "413": ("Body too large (64 MB payloads).", "Detail"),
    "422": ("Invalid payload: each problem with its location.", "Detail"),
}
_FOLLOW_UP = {"404": ("Request not found.", "Detail")}
_STATUS_ANSWERS = {"200": ("The task's status.", "Status"), **_FOLLOW_UP}
_RESULT_ANSWERS = {
    "200": ("The result.", "Result"),
    "202": ("Not finished yet: the status.", "Status"),
    **_FOLLOW_UP,
}
_CANCEL_ANSWERS = {
    "200": ("Cancellation requested; the task ends at once.", "Cancelled"),
    "400": ("Task already completed.", "Detail"),
    **_FOLLOW_UP,
}


def _responses(own: dict[str, tuple[str, str]]) -> dict[str, Any]:
    answers: dict[str, Any] = {}
    for code, (text, schema) in sorted({**_COMMON, **own}.items()):
        answer: dict[str, Any] = {
            "description": text,
            "content": {"application/json": {"schema": {"$ref": f"{_REF}{schema}"}}},
        }
        if code == "429":
            answer["headers"] = {
                "Retry-After": {
                    "description": "Seconds to wait before the next request.",
                    "schema": {"type": "string"},
                }
            }
        answers[code] = answer
    return answers


def _payload_schema(spec: EndpointSpec, components: dict[str, Any]) -> dict[str, Any]:
    """The endpoint model's JSON Schema, its ``$defs`` moved into the components."""
    prefix = f"{spec.id}."
    schema = spec.model.model_json_schema(ref_template=f"{_REF}{prefix}{{model}}")
    for name, part in schema.pop("$defs", {}).items():
        components[f"{prefix}{name}"] = part
    return dict(schema)


def _path_parameter(name: str, description: str, **schema: Any) -> dict[str, Any]:
    return {
        "name": name,
        "in": "path",
        "required": True,
        "schema": {"type": "string", **schema},
        "description": description,
    }


def openapi(base_url: str | None = None, *, documented_only: bool = False) -> dict[str, Any]:
    """The OpenAPI 3.1 document of the queue protocol over every catalog endpoint.

    ``base_url`` becomes the document's server; ``documented_only`` leaves out the
    operations the spec only references (their payloads are our choice).
    """
    components: dict[str, Any] = {
        "Detail": _DETAIL,
        "GatewayError": _GATEWAY_ERROR,
        "Handle": _HANDLE,
        "Status": _STATUS,
        "Output": _OUTPUT,
        "Result": _RESULT,
        "Cancelled": _CANCELLED,
    }
    paths: dict[str, Any] = {}
    for spec in endpoints(documented_only=documented_only):
        schema_name = spec.id
        components[schema_name] = _payload_schema(spec, components)
        paths[f"/v1/queue/{spec.id}"] = {
            "post": {
                "operationId": f"create:{spec.id}",
                "summary": spec.title,
                "description": spec.description or spec.title,
                "tags": [spec.family],
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": {"$ref": f"{_REF}{schema_name}"}}},
                },
                "responses": _responses(_CREATE),
            }
        }
    task = "/v1/queue/{endpoint}/requests/{request_id}"
    parameters = [
        _path_parameter(
            "endpoint",
            "The endpoint the task was created on.",
            enum=sorted(spec.id for spec in endpoints(documented_only=False)),
        ),
        _path_parameter("request_id", "The task's request_id from its handle.", minLength=1),
    ]
    for suffix, method, answers, summary in (
        ("status", "get", _STATUS_ANSWERS, "The status of a task."),
        ("response", "get", _RESULT_ANSWERS, "The result of a task (202 until it ends)."),
        ("cancel", "put", _CANCEL_ANSWERS, "Ask the gateway to cancel a task."),
    ):
        paths[f"{task}/{suffix}"] = {
            "parameters": parameters,
            method: {
                "operationId": suffix,
                "summary": summary,
                "responses": _responses(answers),
            },
        }
    document: dict[str, Any] = {
        "openapi": OPENAPI_VERSION,
        "info": {
            "title": "Generation gateway: queue protocol",
            "version": "1",
            "description": "Create a task, poll its status, fetch its result, cancel it. "
            "Built by genwidgets from its endpoint catalog.",
        },
        "paths": paths,
        "components": {
            "schemas": components,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"bearer": []}],
    }
    if base_url:
        document["servers"] = [{"url": base_url.rstrip("/")}]
    return document

"""The endpoint catalog: one pydantic model per endpoint, from the spec's tables.

``introspect`` walks annotations, ``markers`` holds the field markers, ``checks`` a media
field's spec and its check, ``model`` the base
models, ``registry`` the one way to add an endpoint, ``validation`` :func:`validate`,
``openapi_schema`` the OpenAPI document; one module per family registers its endpoints.
Adding an endpoint is one class::

    @register("my-endpoint", kind="image", title="My endpoint")
    class MyEndpoint(Endpoint):
        prompt: str = Field(description="What to draw.")

The catalog does no I/O.
"""

# Importing the family modules registers their endpoints (the registry imports none).
from . import asset, genw, imgg, imgm, imgq, speech, vida, vidh, vidk, vidp, vidv  # noqa: F401 - importing registers them
from .checks import MediaSpec, media_spec, media_specs, sent_from_elsewhere
from .fields import WireField, field_named, fields_of, known_names
from .findings import (
    DeprecatedFieldWarning,
    IneffectiveFieldWarning,
    UnknownFieldWarning,
    collect_warnings,
)
from .markers import (
    BILLED,
    GENERATIONS,
    NO_DEFAULT,
    PROMPT_STRING,
    Number,
    PromptString,
    ServiceDefault,
    is_billed,
    is_generations,
    is_prompt_string,
    service_default,
)
from .model import Endpoint, EndpointModel, Part
from .openapi_schema import openapi
from .paths import field_info_at, fields_along, media_fields_of, media_spec_at
from .registry import KINDS, EndpointSpec, endpoint, endpoints, register, unregister
from .validation import payload_of, unsendable, validate, webhook_fields, webhook_problems

__all__ = [
    "BILLED",
    "GENERATIONS",
    "KINDS",
    "NO_DEFAULT",
    "PROMPT_STRING",
    "DeprecatedFieldWarning",
    "Endpoint",
    "EndpointModel",
    "EndpointSpec",
    "IneffectiveFieldWarning",
    "MediaSpec",
    "Number",
    "Part",
    "PromptString",
    "ServiceDefault",
    "UnknownFieldWarning",
    "WireField",
    "collect_warnings",
    "endpoint",
    "endpoints",
    "field_info_at",
    "field_named",
    "fields_along",
    "fields_of",
    "is_billed",
    "is_generations",
    "is_prompt_string",
    "known_names",
    "media_fields_of",
    "media_spec",
    "media_spec_at",
    "media_specs",
    "openapi",
    "payload_of",
    "register",
    "sent_from_elsewhere",
    "service_default",
    "unregister",
    "unsendable",
    "validate",
    "webhook_fields",
    "webhook_problems",
]

"""The endpoint catalog: one pydantic model per endpoint, from the spec's tables."""

from ._base import (
    BILLED,
    PROMPT_STRING,
    EndpointModel,
    EndpointSpec,
    MediaSpec,
    PromptString,
    UnknownFieldWarning,
    endpoint,
    endpoints,
    is_billed,
    is_prompt_string,
    media_spec,
    payload_of,
    register,
    validate,
    webhook_fields,
)

__all__ = [
    "BILLED",
    "PROMPT_STRING",
    "EndpointModel",
    "EndpointSpec",
    "MediaSpec",
    "PromptString",
    "UnknownFieldWarning",
    "endpoint",
    "endpoints",
    "is_billed",
    "is_prompt_string",
    "media_spec",
    "payload_of",
    "register",
    "validate",
    "webhook_fields",
]

"""Media inputs: a local file, bytes, a PIL image or a URL → what an endpoint field wants.

Each media field carries a :class:`~genwidgets.catalog.MediaSpec` (encoding and limits);
this module finds it in the endpoint's model, checks the media against it *before*
anything is sent (money is spent when a task is created) and encodes it::

    gw.media.encode("cat.png", "vidA-2-0", "content.image_url.url")   # a data URL

URLs are never fetched here. Encodings and the choices where the spec is silent:
docs/decisions.md#media-inputs.
"""

from __future__ import annotations

from .checks import check
from .encoding import (
    BASE64_WARN_BYTES,
    encode,
    encode_file,
    encode_paths,
    encode_with,
    media_fields,
    spec_for,
)
from .encoding import validate as validate  # gw.validate: Path values are local files
from .files import MediaInfo, inspect

__all__ = [
    "BASE64_WARN_BYTES",
    "MediaInfo",
    "check",
    "encode",
    "encode_file",
    "encode_paths",
    "encode_with",
    "inspect",
    "media_fields",
    "spec_for",
]

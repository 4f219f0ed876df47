"""Asset management: ``asset-get`` (documented) and the referenced operations
that create asset groups and assets (payloads not shown in the spec: ours).

vidA takes an image as ``asset://<ASSET_ID>`` once an asset group exists and an
image asset was created in it; ``asset-get`` tells when its ``Status`` is
``Active``. Field names keep the service's PascalCase.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from .markers import ServiceDefault
from .model import Endpoint
from .registry import register

_ProjectName = Annotated[
    str | None, ServiceDefault("default"), Field(min_length=1, description="Project name.")
]


@register("asset-get", kind="asset", title="Asset details")
class AssetGet(Endpoint):
    """Retrieve an asset record (Id, Name, URL, AssetType, GroupId, Status)."""

    Id: str = Field(min_length=1, description="Asset ID, as returned by asset creation.")
    ProjectName: _ProjectName = None


@register("asset-group-create", kind="asset", title="Create an asset group", documented=False)
class AssetGroupCreate(Endpoint):
    """Create an asset group (referenced; payload is our choice). Returns ``{"GroupId"}``."""

    Name: str = Field(min_length=1, description="Group name.")
    ProjectName: _ProjectName = None


@register("asset-create", kind="asset", title="Create an asset", documented=False)
class AssetCreate(Endpoint):
    """Create an asset in a group from a URL (referenced; payload is our choice).
    Returns the asset record; its Status goes from Processing to Active."""

    GroupId: str = Field(min_length=1, description="Asset group ID from asset group creation.")
    URL: str = Field(min_length=1, description="Public URL of the file to store as an asset.")
    Name: str | None = Field(None, description="Asset name.")
    AssetType: Annotated[str | None, ServiceDefault("Image")] = Field(
        None, min_length=1, description="Asset type."
    )
    ProjectName: _ProjectName = None

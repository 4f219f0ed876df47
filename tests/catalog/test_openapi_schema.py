"""``gw.openapi()``: the OpenAPI 3.1 document built from the catalog (issue 21, point 8)."""

from __future__ import annotations

import json
from typing import Any

import httpx

import genwidgets as gw
from genwidgets.catalog import endpoints
from genwidgets.catalog.openapi_schema import openapi
from genwidgets.simulator import SimulatorServer


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        found = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return found + [r for value in node.values() for r in _refs(value)]
    if isinstance(node, list):
        return [r for value in node for r in _refs(value)]
    return []


def test_every_endpoint_has_a_create_operation_with_its_model() -> None:
    doc = openapi()
    assert doc["openapi"].startswith("3.1")
    schemas = doc["components"]["schemas"]
    for spec in endpoints(documented_only=False):
        operation = doc["paths"][f"/v1/queue/{spec.id}"]["post"]
        ref = operation["requestBody"]["content"]["application/json"]["schema"]["$ref"]
        body = schemas[ref.rsplit("/", 1)[-1]]
        assert body["type"] == "object" and body["properties"], spec.id
        assert set(operation["responses"]) >= {"200", "401", "422", "429"}
    speech = schemas["speechM-02-turbo"]["properties"]["text"]
    assert speech["description"] and speech.get("maxLength")  # limits and descriptions kept


def test_the_follow_up_operations_are_there_and_every_ref_resolves() -> None:
    doc = openapi("http://gateway.test/")
    assert doc["servers"] == [{"url": "http://gateway.test"}]
    task = "/v1/queue/{endpoint}/requests/{request_id}"
    assert set(doc["paths"][f"{task}/status"]) == {"parameters", "get"}
    assert set(doc["paths"][f"{task}/response"]["get"]["responses"]) >= {"200", "202", "404"}
    assert "put" in doc["paths"][f"{task}/cancel"]
    schemas = doc["components"]["schemas"]
    missing = {r for r in _refs(doc) if r.rsplit("/", 1)[-1] not in schemas}
    assert not missing and all(r.startswith("#/components/schemas/") for r in _refs(doc))
    json.dumps(doc)  # plain JSON, nothing Python-only


def test_documented_only_leaves_out_referenced_operations() -> None:
    referenced = {s.id for s in endpoints(documented_only=False) if not s.documented}
    assert referenced
    paths = openapi(documented_only=True)["paths"]
    assert not any(f"/v1/queue/{name}" in paths for name in referenced)


def test_the_facade_and_the_simulator_serve_the_same_document(
    simulator: SimulatorServer,
) -> None:
    served = httpx.get(f"{simulator.base_url}/openapi.json", timeout=30)
    assert served.status_code == 200 and served.headers["content-type"] == "application/json"
    assert served.json() == gw.openapi(simulator.base_url)

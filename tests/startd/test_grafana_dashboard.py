"""The shipped Grafana dashboard against Grafana's own dashboard schema (vendored under
grafana_schema/, see its README: no Grafana server can be had here to load it into),
and the structure an import relies on: one data source variable that every panel and
query uses, no unresolved inputs or variables, a grid that fits, one kind of figure
per panel."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "packaging" / "grafana" / "condorpy-dashboard.json"
SCHEMAS = Path(__file__).parent / "grafana_schema"
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
# Grafana's global variables a query may use.
GLOBALS = {"__rate_interval", "__interval", "__range", "__all"}


# --- a draft-07 validator for the keywords Grafana's schemas use ---------------------
_TYPES: dict[str, Any] = {"object": dict, "array": list, "string": str,
                          "boolean": bool, "null": type(None)}


def _is_type(value: Any, name: str) -> bool:
    if name == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, _TYPES[name])


def validate(value: Any, schema: Any, root: dict[str, Any], path: str = "$") -> list[str]:
    """Every violation of ``schema`` by ``value``, as 'path: what' lines."""
    if schema is True or schema == {}:
        return []
    if schema is False:
        return [f"{path}: not allowed"]
    errors: list[str] = []
    if "$ref" in schema:
        target: Any = root
        for part in schema["$ref"].lstrip("#/").split("/"):
            target = target[part]
        errors += validate(value, target, root, path)
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_is_type(value, t) for t in types):
            return errors + [f"{path}: {value!r} is not of type {schema['type']}"]
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{path}: {value!r} is not one of {schema['enum']}")
    if "const" in schema and value != schema["const"]:
        errors.append(f"{path}: {value!r} is not {schema['const']!r}")
    for key, test in (("minimum", lambda v, b: v >= b), ("maximum", lambda v, b: v <= b),
                      ("exclusiveMinimum", lambda v, b: v > b),
                      ("exclusiveMaximum", lambda v, b: v < b)):
        if key in schema and _is_type(value, "number") and not test(value, schema[key]):
            errors.append(f"{path}: {value} fails {key} {schema[key]}")
    if "minLength" in schema and isinstance(value, str) and len(value) < schema["minLength"]:
        errors.append(f"{path}: shorter than {schema['minLength']}")
    for sub in schema.get("allOf", []):
        errors += validate(value, sub, root, path)
    if "anyOf" in schema and all(validate(value, s, root, path) for s in schema["anyOf"]):
        errors.append(f"{path}: matches none of anyOf")
    if "oneOf" in schema and \
            sum(not validate(value, s, root, path) for s in schema["oneOf"]) != 1:
        errors.append(f"{path}: does not match exactly one of oneOf")
    if isinstance(value, dict):
        props = schema.get("properties", {})
        for name in schema.get("required", []):
            if name not in value:
                errors.append(f"{path}: {name!r} is required")
        extra = schema.get("additionalProperties", True)
        for name, item in value.items():
            if name in props:
                errors += validate(item, props[name], root, f"{path}.{name}")
            else:
                errors += validate(item, extra, root, f"{path}.{name}")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            errors += validate(item, schema["items"], root, f"{path}[{i}]")
    return errors


def _schema(name: str) -> dict[str, Any]:
    return json.loads((SCHEMAS / f"{name}.jsonschema.json").read_text())  # type: ignore[no-any-return]


def _dashboard() -> dict[str, Any]:
    return json.loads(DASHBOARD.read_text())  # type: ignore[no-any-return]


def _panels() -> list[dict[str, Any]]:
    return [p for p in _dashboard()["panels"] if p["type"] != "row"]


# --- the tests ---------------------------------------------------------------------

def test_the_validator_finds_what_grafana_would_refuse() -> None:
    schema = _schema("dashboard")
    dash = _dashboard()
    assert validate(dash, schema, schema) == []
    bad = dict(dash, __inputs=[{"name": "DS_PROMETHEUS", "type": "datasource"}])
    assert any("__inputs" in e for e in validate(bad, schema, schema))
    bad = dict(dash, schemaVersion="38")
    assert any("schemaVersion" in e for e in validate(bad, schema, schema))
    panel = dict(dash["panels"][0], gridPos={"x": 0, "y": 0, "w": 12})
    bad = dict(dash, panels=[panel])
    assert validate(bad, schema, schema) != []


def test_dashboard_matches_grafanas_dashboard_schema() -> None:
    schema = _schema("dashboard")
    assert validate(_dashboard(), schema, schema) == []


@pytest.mark.parametrize("panel", _panels(), ids=lambda p: p["title"])
def test_time_series_panels_match_the_panel_schema(panel: dict[str, Any]) -> None:
    assert panel["type"] == "timeseries"
    ts = _schema("timeseries")
    options = {"$ref": "#/definitions/Options"}
    custom = {"$ref": "#/definitions/FieldConfig"}
    assert validate(panel["options"], options, ts) == []
    assert validate(panel["fieldConfig"]["defaults"].get("custom", {}), custom, ts) == []


def test_one_data_source_variable_used_everywhere() -> None:
    dash = _dashboard()
    text = DASHBOARD.read_text()
    assert "__inputs" not in dash and "DS_PROMETHEUS" not in text
    variables = {v["name"]: v for v in dash["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    for var in variables.values():
        if var["type"] == "query":
            assert var["datasource"] == DATASOURCE
    for panel in _panels():
        assert panel["datasource"] == DATASOURCE, panel["title"]
        assert panel["targets"], panel["title"]
        for t in panel["targets"]:
            assert t["datasource"] == DATASOURCE, (panel["title"], t["refId"])
    # every $variable a query or title uses exists
    used = set(re.findall(r"\$\{?(\w+)", text))
    assert used <= set(variables) | GLOBALS, used - set(variables) - GLOBALS


def test_ids_refids_and_the_grid() -> None:
    panels = _dashboard()["panels"]
    ids = [p["id"] for p in panels]
    assert len(ids) == len(set(ids))
    cells: set[tuple[int, int]] = set()
    for p in panels:
        g = p["gridPos"]
        assert 0 <= g["x"] and g["x"] + g["w"] <= 24 and g["h"] > 0, p["title"]
        mine = {(x, y) for x in range(g["x"], g["x"] + g["w"])
                for y in range(g["y"], g["y"] + g["h"])}
        assert not cells & mine, f"{p['title']} overlaps another panel"
        cells |= mine
        refs = [t["refId"] for t in p.get("targets", [])]
        assert len(refs) == len(set(refs)), p["title"]


def test_each_panel_shows_one_kind_of_figure() -> None:
    """A ratio panel holds only ratios, a count panel no ratio: the GPU count and the
    disk share once shared a panel and an axis."""
    for p in _panels():
        unit = p["fieldConfig"]["defaults"]["unit"]
        for t in p["targets"]:
            ratio = " / " in t["expr"]
            if unit == "percentunit":
                assert ratio, (p["title"], t["expr"])
            elif unit in ("short", "bytes"):
                assert not ratio, (p["title"], t["expr"])

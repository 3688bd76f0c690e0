"""SCHEMA.md: read the human-written LLM-Wiki sections leniently; a YAML frontmatter block wins.

Sections understood (any heading level, case-insensitive):
``## Domain`` (free text), ``## Taxonomy Tags`` (``- #tag`` lines, optional ``: description``),
``## Page Thresholds`` (``- key: value``), ``## Naming Convention`` (free text),
``## Page Types`` (``- type: description``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from . import frontmatter as fm

_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")
_ITEM = re.compile(r"^\s*[-*+]\s+(.*)$")


@dataclass(frozen=True)
class VaultSchema:
    domain: str = ""
    tags: dict[str, str] = field(default_factory=dict)  # tag -> description
    thresholds: dict[str, Any] = field(default_factory=dict)
    naming: str = ""
    page_types: dict[str, str] = field(default_factory=dict)
    errors: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"domain": self.domain, "tags": dict(self.tags), "thresholds": dict(self.thresholds),
                "naming": self.naming, "page_types": dict(self.page_types)}


def _value(text: str) -> Any:
    text = text.strip()
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    if re.fullmatch(r"-?\d+\.\d+", text):
        return float(text)
    if text.lower() in ("true", "yes"):
        return True
    if text.lower() in ("false", "no"):
        return False
    return text


def _section_key(title: str) -> str | None:
    t = title.lower()
    for key, words in (("domain", ("domain",)), ("tags", ("taxonomy", "tags")),
                       ("thresholds", ("threshold",)), ("naming", ("naming",)),
                       ("page_types", ("page type", "types"))):
        if any(w in t for w in words):
            return key
    return None


def parse_schema(text: str) -> VaultSchema:
    text = text.replace("\r\n", "\n")
    front, body = fm.parse(text)
    sections: dict[str, list[str]] = {}
    current: str | None = None
    in_fence = False
    for line in body.split("\n"):
        if line.lstrip().startswith(("```", "~~~")):
            in_fence = not in_fence
        m = None if in_fence else _HEADING.match(line)
        if m:
            current = _section_key(m.group(1))
            if current:
                sections.setdefault(current, [])
            continue
        if current:
            sections[current].append(line)

    tags: dict[str, str] = {}
    for line in sections.get("tags", []):
        for m in re.finditer(r"#([\w/\-]+)", line.split(":", 1)[0] if ":" in line else line):
            desc = line.split(":", 1)[1].strip() if ":" in line else ""
            tags[m.group(1).lower()] = desc
    thresholds: dict[str, Any] = {}
    for line in sections.get("thresholds", []):
        m = _ITEM.match(line)
        if m and ":" in m.group(1):
            key, val = m.group(1).split(":", 1)
            thresholds[key.strip().strip("*`").lower().replace(" ", "_")] = _value(val)
    page_types: dict[str, str] = {}
    for line in sections.get("page_types", []):
        m = _ITEM.match(line)
        if m:
            key, _, desc = m.group(1).partition(":")
            page_types[key.strip().strip("*`").lower()] = desc.strip()

    schema = VaultSchema(
        domain="\n".join(sections.get("domain", [])).strip(),
        tags=tags,
        thresholds=thresholds,
        naming="\n".join(sections.get("naming", [])).strip(),
        page_types=page_types,
        errors=(front.error,) if front.error else (),
    )
    data = front.data
    if data:  # the YAML block wins, key by key
        yaml_tags = data.get("tags", data.get("taxonomy"))
        if isinstance(yaml_tags, list):
            yaml_tags = {str(t).lstrip("#").lower(): "" for t in yaml_tags}
        elif isinstance(yaml_tags, dict):
            yaml_tags = {str(k).lstrip("#").lower(): str(v or "") for k, v in yaml_tags.items()}
        schema = VaultSchema(
            domain=str(data.get("domain", schema.domain)),
            tags=yaml_tags if isinstance(yaml_tags, dict) else schema.tags,
            thresholds=dict(data["thresholds"]) if isinstance(data.get("thresholds"), dict) else schema.thresholds,
            naming=str(data.get("naming", schema.naming)),
            page_types=dict(data["page_types"]) if isinstance(data.get("page_types"), dict) else schema.page_types,
            errors=schema.errors,
        )
    return schema

"""SCHEMA.md reading, the JSON Schemas, and `init`."""
import json
from pathlib import Path

import jsonschema
import pytest
from referencing import Registry, Resource

from wikimem.api import VAULT_FOLDERS, init_vault, open_vault
from wikimem.parse import parse_schema

from conftest import EXAMPLES

SCHEMAS = Path(__file__).parent.parent / "schema"


def _validator(name):
    resources = [(p.name, Resource.from_contents(json.loads(p.read_text()))) for p in SCHEMAS.glob("*.json")]
    registry = Registry().with_resources(resources)
    schema = json.loads((SCHEMAS / name).read_text())
    return jsonschema.Draft202012Validator(schema, registry=registry)


def test_llm_wiki_sections_parse_leniently():
    schema = parse_schema("""# Schema
## Domain
Cooking.
### Taxonomy tags
- #Recipe: a dish
* #technique
## Page thresholds
- Min Words: 40
- ratio: 0.5
- strict: yes
## Naming Convention
Title Case.
```
## Domain
not a heading inside a fence
```
""")
    assert schema.domain == "Cooking."
    assert schema.tags == {"recipe": "a dish", "technique": ""}
    assert schema.thresholds == {"min_words": 40, "ratio": 0.5, "strict": True}
    assert schema.naming.startswith("Title Case.")
    _validator("schema-md.json").validate(schema.to_dict())


def test_yaml_frontmatter_in_schema_wins():
    schema = parse_schema("---\ndomain: Birds\ntags: [owl, '#Hawk']\n---\n## Domain\nFish\n## Taxonomy Tags\n- #trout\n")
    assert schema.domain == "Birds" and schema.tags == {"owl": "", "hawk": ""}


def test_example_vault_schema_and_frontmatter_validate():
    vault = open_vault(EXAMPLES)
    _validator("schema-md.json").validate(vault.schema().to_dict())
    for path, page in vault.load().pages.items():
        _validator(f"page-{page.type}.json").validate(dict(page.frontmatter.data))


def test_schema_rejects_bad_frontmatter():
    with pytest.raises(jsonschema.ValidationError):
        _validator("page-concept.json").validate({"status": "retired"})
    with pytest.raises(jsonschema.ValidationError):
        _validator("page-concept.json").validate({"supersedes": "Old page without brackets"})


def test_init_creates_and_never_overwrites(tmp_path):
    target = tmp_path / "v"
    report = init_vault(target)
    assert set(report.created) == {"SCHEMA.md", "index.md", "log.md", "AGENTS.md", "sources/",
                                   *(f + "/" for f in VAULT_FOLDERS)}
    (target / "SCHEMA.md").write_text("mine")
    again = init_vault(target)
    assert again.created == () and "SCHEMA.md" in again.existing
    assert (target / "SCHEMA.md").read_text() == "mine"
    _validator("schema-md.json").validate(parse_schema((Path(__file__).parent.parent / "vault_template" / "SCHEMA.md").read_text()).to_dict())


def test_agents_md_holds_every_workflow_the_mcp_prompts_offer(tmp_path):
    """Issue 28 item 9: AGENTS.md (written by init) and the MCP prompts are one text."""
    from wikimem.agent.workflows import WORKFLOWS, sections, workflow
    from wikimem.api import open_vault
    root = tmp_path / "v"
    init_vault(root)
    text = (root / "AGENTS.md").read_text()
    assert set(WORKFLOWS.values()) <= set(sections(text))
    v = open_vault(root, embedder="none")
    assert "## Ingest a source" in workflow(v, "ingest_source")
    (root / "AGENTS.md").write_text(text.replace("Never edit `raw/`", "Our team rule: never edit `raw/`"))
    assert "Our team rule" in workflow(v, "lint_and_fix")  # the vault's own AGENTS.md wins

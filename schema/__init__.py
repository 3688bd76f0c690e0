"""JSON Schemas of page frontmatter by type (shipped inside the package; read by wikimem.lint.fields)."""

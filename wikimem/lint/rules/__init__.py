"""Rule families; importing this package registers every rule."""
from . import compiled, content, frontmatter, graph, links, versions  # noqa: F401

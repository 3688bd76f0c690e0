"""Rule families; importing this package registers every rule."""
from . import content, frontmatter, graph, links, versions  # noqa: F401

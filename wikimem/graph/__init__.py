"""The knowledge graph for people and agents: Leiden communities (``communities``), walks
(``neighbors``: neighbours, shortest paths), vault statistics (``stats``) and the install/vault
check-up (``doctor``). Everything reads the cache the build wrote; see ``pagegraph`` for which
nodes and edges count.
"""
from __future__ import annotations

from .communities import CommunityReport, community_members, detect
from .neighbors import NeighborReport, PathReport, neighbors, path

__all__ = ["CommunityReport", "NeighborReport", "PathReport", "community_members", "detect", "neighbors", "path"]

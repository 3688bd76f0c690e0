"""Where the shared datasets are: ``WIKIMEM_DATASETS`` when set, else the first ``shared/datasets``
beside a folder above this checkout (the workplace keeps it at ../shared from the main checkout; a git
worktree sits deeper, so a fixed ``parents[2]`` named a folder that does not exist there)."""
from __future__ import annotations

import os
from pathlib import Path


def shared_dataset(*parts: str) -> Path:
    """The path of ``parts`` under the datasets folder (which may not exist: the caller says so)."""
    given = os.environ.get("WIKIMEM_DATASETS")
    if given:
        return Path(given).joinpath(*parts)
    here = Path(__file__).resolve().parent
    for folder in here.parents:
        if (folder / "shared" / "datasets").is_dir():
            return folder.joinpath("shared", "datasets", *parts)
    return here.parents[1].joinpath("shared", "datasets", *parts)

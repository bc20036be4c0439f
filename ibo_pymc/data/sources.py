"""Where a study's files come from: one convention for every study (the hotspot logs, the grid studies' files).

In order:

1. what the user names: ``--data DIR`` on the command line, ``data=`` in the API (the study's folder, or a
   tidy table of the user's own data);
2. ``IBO_DATA_DIR``, the local copy of the studies: a folder holding one folder per study, named as the
   study's cache folder (``hotspot_raw/``, ``cognitivemaps/``; the project's shared data are laid out so), or
   one study's own folder;
3. the per-user cache (``IBO_CACHE_DIR``, else the platform cache folder), ``<cache>/<study>``, fetched on
   first use at the study's pinned commit, every file checked against its SHA-256. ``IBO_DATA_URL`` names a
   mirror to fetch from instead of the upstream repository: a URL holding one folder per study
   (``<url>/<study>/<file>``), checked against the same hashes.
"""

from __future__ import annotations

import os
from pathlib import Path

from ibo_pymc.errors import InputError

DIR_VARIABLE = "IBO_DATA_DIR"
URL_VARIABLE = "IBO_DATA_URL"


def local_copy(study: str) -> Path | None:
    """The study's folder in ``IBO_DATA_DIR`` (``<dir>/<study>``, else ``<dir>`` itself), or None when unset."""
    env = os.environ.get(DIR_VARIABLE)
    if not env:
        return None
    root = Path(env)
    if not root.is_dir():
        raise InputError(f"{DIR_VARIABLE} does not name an existing folder", path=root)
    return root / study if (root / study).is_dir() else root


def mirror_url(study: str) -> str | None:
    """The study's folder on the mirror ``IBO_DATA_URL`` (``<url>/<study>/``), or None when unset."""
    url = os.environ.get(URL_VARIABLE)
    return f"{url.rstrip('/')}/{study}/" if url else None

"""Which measurements of a template count: the build filter the selection chain and the transfer prior
both put on the database's rows (below both, so that neither imports the other for it)."""

from __future__ import annotations

from autosched.build import build_id

CURRENT = "current"       # the build a GPU here would measure: rows of an edited kernel rank nothing
ANY = "any"               # no build filter


def rows_build(build, template) -> str | None:
    """The build id the rows must carry for `build` (CURRENT: this version's kernel source and NVRTC;
    ANY: None, no filter; else the id given)."""
    if build == ANY:
        return None
    return build_id(template) if build == CURRENT else build

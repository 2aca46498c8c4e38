"""Which measurements of a template count: the build filter the selection chain and the transfer prior
both put on the database's rows (below both, so that neither imports the other for it)."""

from __future__ import annotations

from autosched.identity import current_builds

CURRENT = "current"       # the build the device asked about measures (its program, its NVRTC): rows of other code rank nothing
ANY = "any"               # no build filter


def rows_build(build, template, device_key: str = ""):
    """The builds the rows must carry for `build`: CURRENT, the ids of the program a GPU of
    `device_key` runs (identity.current_builds: this machine's build and its aliases, and the same
    program under the key's NVRTC); ANY, None (no filter); else the id given."""
    if build == ANY:
        return None
    return current_builds(template, device_key) if build == CURRENT else build

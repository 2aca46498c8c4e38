"""Build identity: which program a measurement is of, named by the binary NVRTC made, not the text.

    build_id(template)  ->  "bin-<12 hex>/nvrtc-13.5/sm_90a"

The 12 hex digits hash the code sections (`code_digest`: text, constants, shared-memory and launch
info; never the debug frame or the tool note) of the cubins of the template's probe configs: the
configs a sanitizer run picks on its family's sanitizer shapes (and the template's
`probe_shapes`), rendered for REFERENCE_GPU.  An edit
of a shared header that compiles to the same code leaves the id, and so every measurement of the
template, as it was; an edit that changes the code of any probe changes it.  (An edit that changes
only configs no probe reaches, or only another architecture's code, goes unseen: the probes are the
extreme configs for exactly that reason.)  NVRTC cubins are deterministic for the same source, so the
id is stable; the compiler is named in it, since another NVRTC makes other code.

Ids from before this (`<12 hex of the .cuh text>/nvrtc-x.y`, "source ids") stay in databases and
shipped recordings and are carried over, never dropped: the ledger (`autosched/data/build_ids.json`,
shipped, plus a copy in the build cache for what this machine computed) maps each source hash it has
seen to the digest its probes compiled to under an NVRTC.  A source id names the current build
(`BuildId.aliases`) when its NVRTC is this one and its source compiled to the current digest: the
current source always; an older one if the ledger saw it compile to the same code.  The database
queries, the tuner's resume and the recordings' check all take the aliases.

The ledger is keyed by the .cuh text (a lookup must not render and compile probes at every start), so
a change only in how Python renders a config of the same text is seen as before: not at all.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import struct
from pathlib import Path

from autosched import registry
from autosched.build import compile_spec, default_cache_dir
from autosched.device import DeviceInfo, nvrtc_version

# the probes are rendered for this GPU (the H100 of the shipped recordings, as its query read): the
# digest names the program; the GPU a measurement was taken on is the device key's to name
REFERENCE_GPU = DeviceInfo(name="NVIDIA H100 80GB HBM3", cc=(9, 0), sm_count=132, max_threads_per_block=1024,
                           max_threads_per_sm=2048, regs_per_block=65536, regs_per_sm=65536,
                           smem_per_block=49152, smem_per_block_optin=232448, smem_per_sm=233472,
                           l2_bytes=52428800, warp_size=32, driver_version="", cuda_version="")
MAX_PROBES = 12                 # per sanitizer shape: the picks come first, the random ones last
SHIPPED_LEDGER = Path(__file__).parent / "data" / "build_ids.json"
# .nv.info attributes (EIATTR_*) whose value starts with a symbol's index: PARAM_CBANK, FRAME_SIZE,
# MIN_STACK_SIZE, MAX_STACK_SIZE, REGCOUNT; EXTERNS is a list of them
_SYMBOL_FIRST = {0x0A, 0x11, 0x12, 0x23, 0x2F}
_EXTERNS = 0x0F
# the names NVRTC gives what has internal linkage carry a hash and a number that change from one
# compile of the same source to the next (_INTERNAL_<8 hex>_<n>_<file>_<8 hex>_<n>): read without them
_INTERNAL = re.compile(r"_INTERNAL_[0-9a-f]{8}_\d+_(\w+?)_[0-9a-f]{8}_\d+")


class BuildId(str):
    """A build id, with the source ids (of earlier builds, or from before binary ids) that compiled to
    the same code: a row or recording under any of them is a measurement of this build."""

    aliases: tuple[str, ...] = ()

    def __new__(cls, value: str, aliases=()):
        self = super().__new__(cls, value)
        self.aliases = tuple(a for a in dict.fromkeys(aliases) if a != value)
        return self

    @property
    def names(self) -> tuple[str, ...]:
        return (str(self), *self.aliases)


def names_of(build) -> tuple[str, ...]:
    """Every id a build answers to: a BuildId's own and its aliases, a plain id itself."""
    return build.names if isinstance(build, BuildId) else (build,)


def _elf(cubin: bytes) -> tuple[list, list[str]]:
    """(name, type, bytes) of each section of an ELF64 cubin, and its symbols' names by index."""
    if cubin[:4] != b"\x7fELF" or cubin[4] != 2:
        raise ValueError("not an ELF64 cubin")
    shoff, = struct.unpack_from("<Q", cubin, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", cubin, 0x3A)
    heads = [struct.unpack_from("<IIQQQQIIQQ", cubin, shoff + i * shentsize) for i in range(shnum)]

    def cstr(table: bytes, at: int) -> str:
        return table[at:table.index(b"\0", at)].decode()
    names = cubin[heads[shstrndx][4]:heads[shstrndx][4] + heads[shstrndx][5]]
    secs = [(cstr(names, h[0]), h[1], b"" if h[1] == 8 else cubin[h[4]:h[4] + h[5]], h[5]) for h in heads]
    by = {n: d for n, _, d, _ in secs}
    symtab, strtab = by.get(".symtab", b""), by.get(".strtab", b"")
    syms = []
    for at in range(0, len(symtab), 24):
        name, _, _, shndx, _, _ = struct.unpack_from("<IBBHQQ", symtab, at)
        name = cstr(strtab, name) or (secs[shndx][0] if shndx < len(secs) else "")
        syms.append(_INTERNAL.sub(r"_INTERNAL_\1", name))
    return secs, syms


def _info(data: bytes, syms: list[str]) -> bytes:
    """An .nv.info section's records with each symbol index replaced by the symbol's name."""
    out, at = [], 0
    while at + 4 <= len(data):
        fmt, attr, value = struct.unpack_from("<BBH", data, at)
        at += 4
        if fmt != 4:                                    # no value, a byte or a half-word: in the header
            out.append(data[at - 4:at])
            continue
        body = data[at:at + value]
        at += value
        if attr == _EXTERNS:
            body = b"".join(syms[i].encode() + b"\0" for i in struct.unpack(f"<{len(body) // 4}I", body))
        elif attr in _SYMBOL_FIRST and len(body) >= 4:
            body = syms[struct.unpack_from("<I", body)[0]].encode() + b"\0" + body[4:]
        out.append(bytes([fmt, attr]) + body)
    return b"\1".join(out)


def code_digest(cubin: bytes) -> str:
    """sha256 of what runs, read from an ELF64 cubin: each kernel's code and its relocations, its
    launch attributes (.nv.info, symbol indices read as names), its parameter bank's and shared
    memory's sizes, and constant data.  Left out: symbol and string tables, debug frames, the tool
    note, and the initial values of the static constexpr members NVRTC emits as globals for every
    class it instantiates (.nv.global.init, reached through bank 4), whose names and order follow
    how the source is organised and which the wgmma kernels never read (their code folds them)."""
    secs, syms = _elf(cubin)
    h = hashlib.sha256()
    for name, kind, data, size in secs:
        if name.startswith(".text."):
            part = data
        elif name.startswith(".rela.text."):           # (offset, symbol, type, addend) each
            part = b"".join(struct.pack("<QIq", off, info & 0xFFFFFFFF, add) + syms[info >> 32].encode()
                            for off, info, add in struct.iter_unpack("<QQq", data))
        elif name.startswith(".nv.info"):
            part = _info(data, syms)
        elif name.startswith((".nv.shared.", ".nv.constant0.")):
            part = struct.pack("<Q", size)              # sizes: what a launch reserves
        elif name.startswith(".nv.constant") and not name.startswith(".nv.constant4"):
            part = data
        else:
            continue
        h.update(name.encode() + b"\0" + struct.pack("<IQ", kind, len(part)) + part)
    return h.hexdigest()


def probe_specs(template) -> list:
    """The KernelSpecs whose binaries identify `template`'s program (see the module's doc): the
    sanitizer picks on each of its family's sanitizer shapes and its own probe shapes that it serves
    (a template the registry does not list, a DietCode micro-kernel, probes its default and two
    seeded samples of its space)."""
    fam, dev, specs = registry.family(template.workload_name), REFERENCE_GPU, []
    listed = any(t.family == template.family and type(t) is type(template) for t in fam.templates)
    for shape in fam.sanitize_shapes + template.probe_shapes:
        w = fam.parse(shape)
        if template.refuses(w) or template.space(w, dev).size() == 0:
            continue
        if listed and fam.sanitize_picks:
            picks = fam.sanitize_picks(template, w, dev)
        else:
            rng, space = random.Random(0), template.space(w, dev)
            picks = [template.default_config(w, dev)] + [space.sample(rng) for _ in range(2)]
        specs += [template.render(w, c, dev) for c in picks[:MAX_PROBES]]
    if not specs:
        raise ValueError(f"{template.family}: no sanitizer or probe shape of {fam.name} has a config to probe")
    return list({s.source_hash: s for s in specs}.values())


def source_id(template, nvrtc: str | None = None) -> str:
    """The id of the template's .cuh text (how builds were named before binary ids)."""
    return f"{template.source_hash()[:12]}/nvrtc-{nvrtc or nvrtc_version()}"


def _ledger_paths() -> list[Path]:
    return [SHIPPED_LEDGER, default_cache_dir().parent / "build_ids.json"]


def load_ledger() -> dict:
    """{family: {source hash (12 hex): {nvrtc: digest (12 hex)}}}, the shipped one and this machine's merged."""
    out: dict = {}
    for p in _ledger_paths():
        try:
            doc = json.loads(p.read_text())
        except (OSError, ValueError):
            continue
        for fam, srcs in doc.items():
            for src, by_nvrtc in srcs.items():
                out.setdefault(fam, {}).setdefault(src, {}).update(by_nvrtc)
    return out


def record(family: str, source: str, nvrtc: str, digest: str, path: Path | None = None) -> None:
    """Add one ledger entry (to this machine's ledger unless `path` names another)."""
    path = path or _ledger_paths()[1]
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        doc = {}
    doc.setdefault(family, {}).setdefault(source, {})[nvrtc] = digest
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, path)


# compiles of each probe whose most common code names it: ptxas now and then makes other code for the
# same input (an sgemm probe: 1 process in 10, 57,728 bytes of text against 57,856; 2026-11-28, NVRTC
# 13.5.37), which one compile would take for an edit of the program
PROBE_COMPILES = 3


def program_digest(template, nvrtc: str) -> str:
    """12 hex of the code of the template's probes, compiled here (the NVRTC must be `nvrtc`), each
    probe's code the one most of PROBE_COMPILES compiles make."""
    h = hashlib.sha256()
    for spec in probe_specs(template):
        digests = []
        for _ in range(PROBE_COMPILES):
            b = compile_spec(spec)
            if not b.ok:
                raise RuntimeError(f"{template.family}: a probe config does not compile: {b.error}")
            digests.append(code_digest(b.cubin))
        h.update(max(sorted(set(digests)), key=digests.count).encode())
    return h.hexdigest()[:12]


_memo: dict[tuple[str, str, str], BuildId] = {}


def build_id(template) -> BuildId:
    """The id of the binaries a GPU here builds for `template`, with the source ids it answers to
    (see the module's doc).  Compiles the probes once per source and NVRTC on a machine whose ledger
    does not know them (a second or so per config), then answers from the ledger."""
    nvrtc, src = nvrtc_version(), template.source_hash()[:12]
    key = (template.family, src, nvrtc)
    if key not in _memo:
        ledger = load_ledger().get(template.family, {})
        digest = ledger.get(src, {}).get(nvrtc)
        if digest is None:
            digest = program_digest(template, nvrtc)
            record(template.family, src, nvrtc, digest)
            ledger.setdefault(src, {})[nvrtc] = digest
        # an old source that compiled to the same code as this one under some NVRTC is the same
        # program; its id names this NVRTC (a source id of another NVRTC is of other code)
        same = [s for s, by in sorted(ledger.items()) if any(by.get(v) == d for v, d in ledger[src].items())]
        aliases = [f"{src}/nvrtc-{nvrtc}"] + [f"{s}/nvrtc-{nvrtc}" for s in same]
        _memo[key] = BuildId(f"bin-{digest}/nvrtc-{nvrtc}/{REFERENCE_GPU.arch}", aliases)
    return _memo[key]


def current_builds(template, device_key: str) -> BuildId:
    """The ids whose timings of `template` on the GPU of `device_key` (DeviceInfo.key, which ends in
    "cuda <the NVRTC that builds for it>") are current: the build a GPU here makes, with its aliases,
    and where the key names another NVRTC (a recording's GPU, seen from a machine without it) the ids
    of the same program under that NVRTC: the current source's and its aliases' source ids, and the
    binary id the ledger knows for it."""
    here = build_id(template)
    _, sep, nvrtc = device_key.rpartition("|cuda ")
    if not sep or nvrtc == nvrtc_version():
        return here
    sources = dict.fromkeys(a.split("/")[0] for a in here.aliases if not a.startswith("bin-"))
    extra = [f"{src}/nvrtc-{nvrtc}" for src in sources]
    digest = load_ledger().get(template.family, {}).get(template.source_hash()[:12], {}).get(nvrtc)
    if digest:
        extra.append(f"bin-{digest}/nvrtc-{nvrtc}/{REFERENCE_GPU.arch}")
    return BuildId(str(here), (*here.aliases, *extra))


def is_current(build: str, template) -> bool:
    """Whether a measurement labelled `build` (a build id or a source id) is of the build a GPU here runs."""
    return build in build_id(template).names


def same_program(build: str, template) -> bool:
    """Whether `build` (a build id or a source id, of any NVRTC) names the program the current
    source makes, as far as the ledger knows: for a record made on another machine, whose NVRTC
    this one may not have."""
    ids = build_id(template)
    if build in ids.names:
        return True
    program, _, rest = build.partition("/")
    nvrtc = rest.split("/")[0].removeprefix("nvrtc-")
    if program.startswith("bin-"):
        known = load_ledger().get(template.family, {}).get(template.source_hash()[:12], {})
        return known.get(nvrtc) == program.removeprefix("bin-")
    return program in {a.split("/")[0] for a in ids.aliases}


def ship() -> None:
    """Add the current sources of every template, compiled by this NVRTC, to the shipped ledger (run
    after a .cuh edit, so that a machine with this NVRTC never compiles probes, and so that ids of the
    sources before the edit stay aliases where the code did not change)."""
    for fam in registry.FAMILIES.values():
        for t in fam.templates:
            digest = build_id(t).split("/")[0].removeprefix("bin-")
            record(t.family, t.source_hash()[:12], nvrtc_version(), digest, SHIPPED_LEDGER)
            print(f"{t.family}: {t.source_hash()[:12]} -> {build_id(t)}")


if __name__ == "__main__":
    ship()

"""Re-measure the configs of shipped recordings with today's build of their template, on this GPU.

    python3 scripts/rerecord.py OUT_DIR PREFIX [PREFIX ...]     # e.g. hgemm_wgmma- hgemm_wgmma_splitk-

For each shipped recording whose file name starts with a PREFIX: the same configs (every one it
holds, failed ones too), rendered, built and measured afresh under the timing protocol, written to
OUT_DIR under the same file name with the build id measured.  What a kernel edit that changes no
config's meaning needs (the build id follows the .cuh text, so the old rows no longer count): the
recordings keep their coverage and their rows become measurements of the kernel that ships.  Prints,
per recording, the old and new fastest config and the median new/old time over the configs both
measured ok (the old rows come from another machine and day: a rough comparison, not an A/B).
"""
import datetime
import statistics
import sys
import time
from pathlib import Path


def main(out_dir, *prefixes) -> int:
    from autosched.build import Builder
    from autosched.measure.gpu import GpuRunner
    from autosched.measure.protocol import Protocol
    from autosched.measure.recording import Recording, load_shipped
    from autosched.registry import template_named
    from autosched.tuner import versions
    from autosched.workloads import workload_from_key
    if not prefixes:
        raise SystemExit("name at least one file-name prefix, e.g. hgemm_wgmma-")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    chosen = [(p, r) for p, r in load_shipped() if any(p.name.startswith(x) for x in prefixes)]
    if not chosen:
        raise SystemExit(f"no shipped recording starts with {', '.join(prefixes)}")
    today = datetime.date.today().isoformat()
    with GpuRunner(None) as runner, Builder() as builder:
        device = runner.device_info
        for path, rec in chosen:
            t0 = time.perf_counter()
            w, t = workload_from_key(rec.workload_key), template_named(rec.template)
            configs = [c for c, _ in rec.entries.values()]
            specs = [t.render(w, c, device) for c in configs]
            items = ((i, s, builder.submit(s)) for i, s in enumerate(specs))
            new = Recording(rec.workload_key, rec.template, device, list(rec.knobs), protocol=Protocol().to_json(),
                            versions=versions("gpu"), date=today, space_size=rec.space_size,
                            build=runner.build_id(t))
            for i, m in runner.measure_stream(items):
                new.add(configs[i], m)
            new.save(out / path.name)
            ratios = [m.median_us / old.median_us for c, m in new.entries.values()
                      if m.ok and (old := rec.lookup(c)) is not None and old.ok and old.median_us > 0]
            ob, nb = rec.best(), new.best()
            fmt = lambda b: f"{b[1].median_us:.2f} us {b[0]}" if b else "none ok"  # noqa: E731
            print(f"{path.name}: {len(new.entries)} configs ({sum(m.ok for _, m in new.entries.values())} ok) in "
                  f"{time.perf_counter() - t0:.0f} s; best was {fmt(ob)}, now {fmt(nb)}; median new/old "
                  f"{statistics.median(ratios) if ratios else float('nan'):.3f} over {len(ratios)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))

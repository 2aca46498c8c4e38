"""Device smoke run: build a sample of configs of every template, check and time them on the GPU."""
import json, os, random, sys, time
from collections import Counter
from autosched.build import Builder
from autosched.measure.gpu import GpuRunner
from autosched.templates import GemvQ4F16Template
from autosched.workloads import GemvQ4F16



def main():
    out_dir = os.environ.get("OUT", "/tmp")
    t = GemvQ4F16Template()
    rows = []
    with GpuRunner() as runner, Builder() as builder:
        dev = runner.device_info
        print(dev.key, dev.to_json())
        for (N, K), per_family in [((1024, 4128), 6), ((12288, 4096), 25), ((4096, 14336), 10)]:
            w = GemvQ4F16(N, K)
            sp = t.space(w, dev)
            cfgs = sp.enumerate()
            fam = {}
            for c in cfgs:
                fam.setdefault((c["tx"], c["load"], c["compute"], c["vec_c"]), []).append(c)
            rng = random.Random(1)
            pick = [t.default_config(w, dev)]
            for k, v in sorted(fam.items()):
                pick += rng.sample(v, min(per_family, len(v)))
            specs = [t.render(w, c, dev) for c in pick]
            t0 = time.time()
            futs = [builder.submit(s) for s in specs]
            res = {}
            for tag, m in runner.measure_stream((i, specs[i], futs[i]) for i in range(len(specs))):
                res[tag] = m
                if len(res) == 4 and not any(x.ok for x in res.values()):
                    sys.exit("first configs all failed: " + "; ".join(x.error[:300] for x in res.values()))
            el = time.time() - t0
            st = Counter(m.status.value for m in res.values())
            print(f"{N}x{K}: {len(specs)} configs in {el:.1f}s: {dict(st)}")
            for i, c in enumerate(pick):
                m = res[i]
                rows.append({"N": N, "K": K, "config": c, **m.to_json()})
                if not m.ok:
                    print("  FAIL", m.status.value, c, m.error[:300])
            okr = sorted((res[i].median_us, i) for i in res if res[i].ok)
            print("  default:", res[0].median_us, "best:", [(round(x, 2), pick[i]) for x, i in okr[:3]])
            byfam = {}
            for i, c in enumerate(pick):
                if res[i].ok:
                    k = (c["tx"], c["load"], c["compute"], c["vec_c"])
                    byfam[k] = min(byfam.get(k, 1e9), res[i].median_us)
            for k, v in sorted(byfam.items(), key=lambda kv: kv[1]):
                print("   ", k, round(v, 2))
    json.dump(rows, open(os.path.join(out_dir, "smoke.json"), "w"))


if __name__ == '__main__':
    main()

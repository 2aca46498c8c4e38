"""Where one dynamic tuning run's time goes: a quick-bench workload (0: Llama's 4096 x 4096, 1: BERT's 768 x 768) tuned
through the bench's harness (cold database and compile cache), the main process under cProfile and
the GPU worker too (AUTOSCHED_WORKER_PROFILE), then the top of each profile and the run's phases.

    python3 scripts/profile_dynamic.py [OUT_DIR [WORKLOAD_INDEX]]
"""
import os
import pstats
import sys
import tempfile


def main(out_dir, index=0):
    os.makedirs(out_dir, exist_ok=True)
    os.environ["AUTOSCHED_WORKER_PROFILE"] = out_dir      # read by the workers the harness spawns
    import cProfile

    from autosched.benchmarks import dynamic as bench
    h, closers = bench.gpu_harness(db_path=os.path.join(tempfile.mkdtemp(), "dynamic.db"), rounds=2, per_round=8)
    dw = bench.workloads(quick=True)[index]
    prof = cProfile.Profile()
    try:
        res = prof.runcall(h.tune_dynamic, dw)
    finally:
        for c in reversed(closers):
            c.close()
    main_path = os.path.join(out_dir, "main.prof")
    prof.dump_stats(main_path)
    print(f"{dw.shape_str}: {res.elapsed_s:.1f} s, {res.measurements} measurements; phases "
          + ", ".join(f"{k} {v:.1f} s" for k, v in res.phase_s.items()))
    for path in [main_path] + sorted(os.path.join(out_dir, f) for f in os.listdir(out_dir) if f.startswith("worker")):
        print(f"== {os.path.basename(path)}")
        st = pstats.Stats(path)
        st.sort_stats("tottime").print_stats(18)
        st.sort_stats("cumulative").print_callees(r"worker.py:\d+\((measure|_measure|state)\)|row_family.py:\d+\(_grow\)")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/tmp/profile-dynamic", int(sys.argv[2]) if len(sys.argv) > 2 else 0)

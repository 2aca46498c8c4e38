export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1
S=112x768x768_bt,192x3072x768_bt,112x768x3072_bt
run() { AUTOSCHED_HOME=/tmp/as$1 timeout 250 python3 -m autosched bench hgemm --shapes $S --time-per-shape 25 --split wgmma=1,wgmma_splitk=0,mma=0,wmma=0,stream=0 --out $OUT/$1 --db /tmp/$1.db 2>&1 | grep -v "━" | grep -E "^\||x768|best|wgmma" | tail -12; }
run a
sed -i 's/Knob("stages", (2, 3, 4, 5, 6, 7, 8), /Knob("stages", (2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16), /' autosched/templates/hgemm_wgmma.py
sed -i 's/static_assert(STAGES >= 2 \&\& STAGES <= 8, "a ring of 2 to 8 slots");/static_assert(STAGES >= 2 \&\& STAGES <= 16, "a ring of 2 to 16 slots");/' autosched/kernels/hgemm_wgmma.cuh
grep -c 'Knob("stages", (2, 3, 4, 5, 6, 7, 8, 10' autosched/templates/hgemm_wgmma.py; grep -c "STAGES <= 16" autosched/kernels/hgemm_wgmma.cuh
run b
python3 - <<'PY'
import json, glob, os
for v in "ab":
    for f in glob.glob(os.environ["OUT"] + f"/{v}/hgemm-*.json"):
        d = json.load(open(f))
        for r in d["rows"]:
            t = r["templates"].get("hgemm_wgmma", {})
            print(v, r["shape"], "wgmma", round(r["best_us"], 2), "cublas", round(r["cublas_us"], 2), round(r["best_pct_of_cublas"], 1), t.get("config") if isinstance(t, dict) else "")
PY
git checkout autosched/templates/hgemm_wgmma.py autosched/kernels/hgemm_wgmma.cuh 2>/dev/null

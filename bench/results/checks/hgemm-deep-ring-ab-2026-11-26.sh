export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1
S=128x4096x4096_bt
AUTOSCHED_HOME=/tmp/asA timeout 200 python3 -m autosched bench hgemm --shapes $S --time-per-shape 60 --split wgmma=1,wgmma_splitk=0,mma=0,wmma=0,stream=0 --out $OUT/a --db /tmp/a.db 2>&1 | grep -v "━" | tail -12
sed -i 's/Knob("stages", (2, 3, 4, 5, 6, 7, 8), /Knob("stages", (2, 3, 4, 5, 6, 7, 8, 10, 12, 13), /' autosched/templates/hgemm_wgmma.py
sed -i 's/static_assert(STAGES >= 2 \&\& STAGES <= 8, "a ring of 2 to 8 slots");/static_assert(STAGES >= 2 \&\& STAGES <= 16, "a ring of 2 to 16 slots");/' autosched/kernels/hgemm_wgmma.cuh
grep -n 'Knob("stages"' autosched/templates/hgemm_wgmma.py; grep -n "static_assert(STAGES" autosched/kernels/hgemm_wgmma.cuh
AUTOSCHED_HOME=/tmp/asB timeout 200 python3 -m autosched bench hgemm --shapes $S --time-per-shape 60 --split wgmma=1,wgmma_splitk=0,mma=0,wmma=0,stream=0 --out $OUT/b --db /tmp/b.db 2>&1 | grep -v "━" | tail -12
git checkout autosched/templates/hgemm_wgmma.py autosched/kernels/hgemm_wgmma.cuh 2>/dev/null

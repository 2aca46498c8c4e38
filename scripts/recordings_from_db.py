"""Turn the measurements of a tuning database into recordings for the replay runner.

    python scripts/recordings_from_db.py DB DEVICE_JSON OUT_DIR [DATE]

DEVICE_JSON is the DeviceInfo the GPU reported (autosched.device.query().to_json(), or a bench
results file, whose "device_info" it is); only rows with that device key are taken.  A recording already at the output path is merged into: its
configs stay, and the database's measurement wins where both have one (the newer run).
"""
import datetime
import json
import sys
from collections import Counter
from pathlib import Path

from autosched.identity import build_id, same_program
from autosched.database import Database
from autosched.device import DeviceInfo
from autosched.measure.protocol import Protocol
from autosched.measure.recording import Recording, recording_from_db
from autosched.registry import template_named
from autosched.workloads import workload_from_key


def main(db_path, device_json, out_dir, date=None):
    doc = json.loads(Path(device_json).read_text())
    device = DeviceInfo.from_json(doc.get("device_info", doc))
    date = date or datetime.date.today().isoformat()
    with Database(db_path) as db:
        for wkey, dkey, family, n in db.workloads(device.key):
            w = workload_from_key(wkey)
            t = template_named(family)      # a family of several templates records each on its own
            # the build the GPU measured: this program, compiled by the GPU machine's NVRTC (which may
            # differ from this machine's); none of this program: the rows timed other code, skipped
            builds = Counter(r.build for r in db.measured(wkey, dkey, family).values()
                             if r.build and same_program(r.build, t))
            if not builds:
                print(f"{wkey} {family}: no rows of this program ({build_id(t)}); skipped")
                continue
            rec = recording_from_db(db, w, t, device, Protocol().to_json(),
                                    {"runner": "gpu", "source": "the configs earlier GPU tuning runs measured: random, "
                                     "then model-guided search"}, date,
                                    build=builds.most_common(1)[0][0])
            out = Path(out_dir) / f"{family}-{w.shape_str}-{device.name.replace(' ', '_')}.json.gz"
            if out.exists():
                old = Recording.load(out)
                if old.device.key != device.key or old.protocol != rec.protocol:
                    raise SystemExit(f"{out} was measured on {old.device.key} under {old.protocol}: not merged")
                new = rec.entries
                rec.entries = dict(old.entries)
                rec.entries.update(new)
                rec.versions = {**rec.versions, "source": "several GPU tuning runs' measurements: random, then "
                                "model-guided search (newest measurement of a config kept)"}
            rec.save(out)
            ok = sum(m.ok for _, m in rec.entries.values())
            print(f"{out}: {len(rec.entries)} configs ({ok} ok) of {rec.space_size}")


if __name__ == "__main__":
    main(*sys.argv[1:])

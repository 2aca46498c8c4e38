"""The device checks: stages of bounded steps, read from scripts/gpu_checks.toml and run in the order given.

    python3 scripts/gpu_check.py [STAGE ...]        # default: tests;  --list: the stages and what they check

Run on a GPU machine from the repository root; nothing is downloaded (the package is installed with
--no-deps first).  Each step is a shell command run under `timeout` (its `seconds`, or the variable
`seconds_env` names), its output kept whole in $OUT/<log> and its last `tail` lines printed with its exit
code.  A step with `sanitize` runs under compute-sanitizer memcheck, then racecheck (logs memcheck-<log>,
racecheck-<log>; printed: the lines matching the pattern).  A stage's `env` holds for its steps (a
switch on for the stage); `parallel` runs its steps side by side; a step with `stop` ends the run if it
fails.  In the commands, $PY is this Python and $OUT the logs' folder (default /tmp/out).
"""
import os
import re
import subprocess
import sys
import time
import tomllib
from pathlib import Path

CHECKS = Path(__file__).with_name("gpu_checks.toml")
SANITIZE = ("compute-sanitizer --tool {tool} --print-limit 5 \"$PY\" ")


def run_step(step: dict, env: dict, out: Path) -> subprocess.Popen:
    """The step's command under its time limit, its output into its log (a Popen to wait on)."""
    seconds = int(os.environ.get(step.get("seconds_env", ""), step["seconds"]))
    log = open(out / step["log"], "w")
    return subprocess.Popen(["timeout", str(seconds), "bash", "-c", step["run"]], stdout=log,
                            stderr=subprocess.STDOUT, env=env)


def report(step: dict, rc: int, out: Path) -> None:
    lines = (out / step["log"]).read_text(errors="replace").splitlines()
    if "keep" in step:
        lines = [x for x in lines if re.search(step["keep"], x)]
    if "drop" in step:
        lines = [x for x in lines if not re.search(step["drop"], x)]
    print("\n".join(lines[-step.get("tail", 12):]))
    print(f"rc={rc}", flush=True)


def expand(step: dict) -> list[dict]:
    """A sanitize step as its memcheck and racecheck runs; any other step as itself."""
    if "sanitize" not in step:
        return [step]
    return [{**step, "name": f"{tool} {step['name']}", "log": f"{tool}-{step['log']}", "keep": step["sanitize"],
             "tail": 6, "run": SANITIZE.format(tool=tool) + step["run"]} for tool in ("memcheck", "racecheck")]


def run_stage(name: str, stage: dict, out: Path) -> bool:
    def env(step: dict) -> dict:
        return {**os.environ, **{k: str(v) for k, v in {**stage.get("env", {}), **step.get("env", {})}.items()}}
    steps = [s for step in stage["step"] for s in expand(step)]
    if stage.get("parallel"):
        print(f"== {name}: {', '.join(s['name'] for s in steps)} ({time.strftime('%T')})", flush=True)
        running = [(s, run_step(s, env(s), out)) for s in steps]
        for s, p in running:
            print(f"-- {s['name']}")
            report(s, p.wait(), out)
        return True
    for s in steps:
        print(f"== {s['name']} ({time.strftime('%T')})", flush=True)
        rc = run_step(s, env(s), out).wait()
        report(s, rc, out)
        if rc and s.get("stop"):
            return False
    return True


def main(argv: list[str]) -> int:
    stages = tomllib.loads(CHECKS.read_text())
    if argv == ["--list"]:
        print("\n".join(f"{n:16s} {s['about']}" for n, s in stages.items()))
        return 0
    unknown = [a for a in argv if a not in stages]
    if unknown:
        print(f"no stage {', '.join(unknown)}; python3 {sys.argv[0]} --list names them", file=sys.stderr)
        return 2
    out = Path(os.environ.get("OUT", "/tmp/out"))
    out.mkdir(parents=True, exist_ok=True)
    os.environ.update(PY=sys.executable, OUT=str(out), PYTHONPATH=os.getcwd(), PYTHONUNBUFFERED="1",
                      AUTOSCHED_HOME=os.environ.get("AUTOSCHED_HOME", "/tmp/as"))
    install = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                              "-e", "."], capture_output=True, text=True)
    (out / "install.log").write_text(install.stdout + install.stderr)
    if install.returncode:
        print((install.stdout + install.stderr)[-2000:])
        return 1
    subprocess.run(["nvidia-smi", "--query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu",
                    "--format=csv,noheader"])
    for name in argv or ["tests"]:
        if not run_stage(name, stages[name], out):
            return 1
    print(f"== done ({time.strftime('%T')})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

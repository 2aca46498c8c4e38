"""The tuner-overhead bench on the CPU: a short tune of the README's shape with the runner that
measures nothing runs every trial and reports its rates."""

import pytest

pytest.importorskip("sklearn")


def test_a_short_run_reports_its_rates():
    from autosched.benchmarks.tuner_overhead import run
    row = run(rate=None, trials=16)
    assert row["trials"] == 16 and row["space"] > 60000
    assert row["configs_per_s"] > 0 and 0 < row["first_result_s"] <= row["seconds"]


def test_with_builds_every_config_is_compiled_before_it_is_answered():
    from autosched.benchmarks.tuner_overhead import run
    row = run(rate=None, trials=4, build_workers=1)
    assert row["trials"] == 4 and row["built"] == 4 and row["build_wait_s"] > 0

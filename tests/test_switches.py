"""env_switch: the verified constant unless the variable is set; then off only for empty, 0, false, no."""

from autosched.switches import env_switch


def test_the_constant_holds_until_the_variable_is_set(monkeypatch):
    monkeypatch.delenv("AUTOSCHED_TEST_SWITCH", raising=False)
    assert env_switch("AUTOSCHED_TEST_SWITCH", True) is True
    assert env_switch("AUTOSCHED_TEST_SWITCH", False) is False
    for value, want in (("1", True), ("yes", True), (" on ", True), ("0", False), (" false", False),
                        ("no", False), ("", False), ("  ", False)):
        monkeypatch.setenv("AUTOSCHED_TEST_SWITCH", value)
        assert env_switch("AUTOSCHED_TEST_SWITCH", False) is want and env_switch("AUTOSCHED_TEST_SWITCH", True) is want

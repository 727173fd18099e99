"""The GPU scripts' one variant mechanism: tuning switches set by -D
(gpu/harness.py's parse_defines, switch_options), refused when the source has
no such switch."""
import pytest

SRC = """
#ifndef MASKC_SCHED_GROUP
#define MASKC_SCHED_GROUP 4
#endif
#if defined(MASKC_WS_WAIT_TRAP) && MASKC_WS_WAIT_TRAP
#endif
#define MASKC_NV_V_GROUP 4
"""


@pytest.fixture
def harness():
    import harness
    return harness


def test_parse_defines(harness):
    assert harness.parse_defines(["MASKC_A=1", "MASKC_B=0x10"]) == {"MASKC_A": "1", "MASKC_B": "0x10"}
    for bad in ["MASKC_A", "A=1", "MASKC_A-B=1", "=1"]:
        with pytest.raises(ValueError):
            harness.parse_defines([bad])


def test_switch_options(harness):
    assert harness.switch_options(SRC, None) == []
    assert harness.switch_options(SRC, {"MASKC_WS_WAIT_TRAP": 1, "MASKC_SCHED_GROUP": 16}) == [
        "-DMASKC_SCHED_GROUP=16", "-DMASKC_WS_WAIT_TRAP=1"]
    # unguarded (a -D would be overridden), misspelt, or a prefix of a switch
    for name in ["MASKC_NV_V_GROUP", "MASKC_SCHED_GRUOP", "MASKC_SCHED"]:
        with pytest.raises(ValueError, match=name):
            harness.switch_options(SRC, {name: 1})

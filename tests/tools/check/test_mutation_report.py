"""Tests for tools/check/mutation_report.py (make mutate's per-module table)."""

from tools.check.mutation_report import summarise, table

RESULTS = """\
    helpers.train.x_fit__mutmut_1: killed
    helpers.train.x_fit__mutmut_2: survived
    helpers.train.x_evaluate__mutmut_1: timeout
    helpers.train.x_fit__mutmut_3: not checked
    helpers.checkpoint.x_save_checkpoint__mutmut_1: killed
    helpers.checkpoint.xǁHistoryǁas_dict__mutmut_1: no tests
"""


def test_counts_and_survivors_per_module():
    counts, survivors = summarise(RESULTS)
    assert counts["train"] == {"killed": 1, "survived": 1, "timeout": 1, "not checked": 1}
    assert survivors == {"train": ["helpers.train.x_fit__mutmut_2"]}
    text = table(counts)
    assert "| train | 4 | 1 | 1 | 1 | 1 | 67% |" in text
    assert "| checkpoint | 2 | 1 | 0 | 0 | 1 | 100% |" in text  # "no tests": not checked

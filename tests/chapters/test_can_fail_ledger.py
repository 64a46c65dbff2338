"""Every claim is shown to fail where it is false (book/README.md, "Claims"): its claim cell
hands the evidence to a verdict function the chapter defines, and the ledger names the tests
that feed that very function evidence from a world without the effect."""

import ast
import functools
import re

import pytest

from tests.chapters.chapter_code import chapter_definitions
from tools.build.chapter_format import ROOT, chapters, code_cells
from tools.check.shift_seeds import MAGIC_RE
from tools.pages import claims_appendix as appendix

LEDGER = appendix.load_ledger()
TEST_NAME_RE = re.compile(r"tests/chapters/test_can_fail_\d\d\.py::(test_c\d{2,3}_\w+)")


@functools.cache  # ast.get_source_segment reads the file from the top for each function
def defined_tests(path, counterfactual_only: bool = False) -> frozenset[str]:
    """The test functions of a file; with ``counterfactual_only``, those that expect a
    verdict's ``AssertionError`` (a positive control or a helper's unit test does not)."""
    source = path.read_text(encoding="utf-8")
    return frozenset({n.name for n in ast.parse(source).body if isinstance(n, ast.FunctionDef)
            and n.name.startswith("test_") and (not counterfactual_only or re.search(
                r"raises\(\s*AssertionError", ast.get_source_segment(source, n) or ""))})


@pytest.mark.parametrize("claim_id", sorted(LEDGER))
def test_the_ledger_names_can_fail_tests_that_exist(claim_id):
    tests = LEDGER[claim_id].get("can_fail") or []
    assert tests, f"{claim_id}: add `can_fail: [tests/chapters/test_can_fail_NN.py::test_...]`"
    for test in tests:
        match = TEST_NAME_RE.fullmatch(test)
        assert match, \
            f"{claim_id}: {test!r} is not tests/chapters/test_can_fail_NN.py::test_cNN_..."
        assert match[1].startswith(f"test_{claim_id.lower()}_"), (claim_id, test)
        path = ROOT / test.split("::")[0]
        assert path.exists() and match[1] in defined_tests(path), f"{test} does not exist"
        assert match[1] in defined_tests(path, counterfactual_only=True), \
            f"{test} never expects the verdict to fail (pytest.raises(AssertionError))"


def test_every_can_fail_test_is_in_the_ledger():
    listed = {t for entry in LEDGER.values() for t in entry.get("can_fail") or []}
    for path in sorted((ROOT / "tests" / "chapters").glob("test_can_fail_[0-9][0-9].py")):
        for name in sorted(defined_tests(path, counterfactual_only=True)):
            if re.match(r"test_c\d\d_", name):
                test = f"tests/chapters/{path.name}::{name}"
                assert test in listed, f"{test} is not named in claims/ledger.yml"


def claim_blocks(source: str):
    """(claim id, names called in the block) of every `with claim("Cxx", ...)` of a cell."""
    for node in ast.walk(ast.parse(MAGIC_RE.sub(lambda m: m[1] + "pass", source))):
        if isinstance(node, ast.With):
            for item in node.items:
                call = item.context_expr
                if (isinstance(call, ast.Call) and getattr(call.func, "id", "") == "claim"
                        and call.args and isinstance(call.args[0], ast.Constant)):
                    called = {n.func.id for stmt in node.body for n in ast.walk(stmt)
                              if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
                    yield call.args[0].value, called


@pytest.mark.parametrize("chapter", chapters(), ids=lambda p: p.stem)
def test_every_claim_block_hands_its_evidence_to_the_chapters_verdict(chapter):
    defined = chapter_definitions(chapter.stem)
    found = 0
    for cell in code_cells(chapter.read_text(encoding="utf-8")):
        source = "\n".join(line for line in cell.split("\n")[1:-1] if not line.startswith(":"))
        for claim_id, called in claim_blocks(source):
            found += 1
            verdicts = {name for name in called if name.startswith(f"verdict_{claim_id.lower()}")}
            assert verdicts, f"{chapter.stem}: the {claim_id} block calls no verdict_" \
                             f"{claim_id.lower()}(...) function"
            for name in verdicts:
                assert len(defined.get(name, [])) == 1, \
                    f"{chapter.stem}: {name} must be defined once, at a cell's top level"
    assert found, f"{chapter.stem} checks no claim"

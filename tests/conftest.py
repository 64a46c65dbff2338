import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# tools/ and book/_ext/ are scripts, not packages: make them importable for their tests
for folder in (ROOT / "tools", ROOT / "book" / "_ext"):
    sys.path.insert(0, str(folder))


@pytest.fixture(scope="session")
def student_dir(tmp_path_factory):
    """The student edition of every chapter, written once per test session."""
    import student_edition

    out = tmp_path_factory.mktemp("student")
    student_edition.write_student_edition(out)
    return out

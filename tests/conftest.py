import pytest


@pytest.fixture(scope="session")
def student_dir(tmp_path_factory):
    """The student edition of every chapter, written once per test session."""
    from tools.teach import student_edition

    out = tmp_path_factory.mktemp("student")
    student_edition.write_student_edition(out)
    return out

"""The helpers package imports its names lazily (src/helpers/__init__.py): every exported name
resolves to the object its module defines, and importing a torch-free module (the exercise
label rule the book's tools use) does not import torch."""

import subprocess
import sys

import pytest

import helpers


def run_python(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.strip()


@pytest.mark.parametrize("name", helpers.__all__)
def test_every_exported_name_is_its_modules_object(name):
    module = __import__(f"helpers.{helpers._EXPORTS[name]}", fromlist=[name])
    assert getattr(helpers, name) is getattr(module, name)


def test_the_label_rule_imports_no_torch():
    assert run_python("import sys; from helpers.exercises import LABEL_PATTERN; "
                      "import tools.build.chapter_format; print('torch' in sys.modules)") == "False"


def test_a_name_used_imports_its_module():
    assert run_python("import sys, helpers; helpers.fit; print('torch' in sys.modules)") == "True"


@pytest.mark.parametrize("first", ["import helpers.glue", "import helpers"])
def test_glue_is_the_function_whichever_import_comes_first(first):
    assert run_python(f"{first}\nfrom helpers import glue\nprint(callable(glue))") == "True"


def test_submodules_and_unknown_names():
    assert helpers.env.__name__ == "helpers.env"
    with pytest.raises(AttributeError, match="has no attribute 'no_such_helper'"):
        helpers.no_such_helper  # noqa: B018
    assert "fit" in dir(helpers)

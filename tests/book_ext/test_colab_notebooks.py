import pytest
from colab_notebooks import colab_url_for

THEME_URL = "https://colab.research.google.com/github/org/repo/blob/main/book/03_training.md"


def test_points_at_the_generated_notebook():
    assert colab_url_for(THEME_URL, "book/03_training") == (
        "https://colab.research.google.com/github/org/repo/blob/main/notebooks/03_training.ipynb"
    )


def test_unexpected_url_is_refused():
    with pytest.raises(ValueError, match="unexpected Colab URL"):
        colab_url_for("https://colab.research.google.com/", "book/03_training")

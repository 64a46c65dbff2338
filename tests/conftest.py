import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# tools/ and book/_ext/ are scripts, not packages: make them importable for their tests
for folder in (ROOT / "tools", ROOT / "book" / "_ext"):
    sys.path.insert(0, str(folder))

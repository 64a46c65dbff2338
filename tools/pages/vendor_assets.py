"""Bring the JavaScript the built site needs into ``_vendor/`` (``make assets``).

The rendered book must work with no network (readers on a train, behind a filtered network,
where jsDelivr is blocked): MathJax, require.js and the Jupyter widget manager are served
from the site itself. Sphinx copies ``_vendor/`` into ``_build/html/_static/``;
``_config.yml`` points ``mathjax_path`` and ``nb_ipywidgets_js`` at the files below.

Each package is a pinned tarball from the npm registry, checked against its registry
integrity hash (sha512) before anything is extracted; a failed download or a wrong hash
stops the install with a message, never a site that silently falls back to a CDN.
Only the files the pages load are kept, with each package's licence, and
``_vendor/THIRD-PARTY.md`` lists what is there, at which version, under which licence.
"""

from __future__ import annotations

import argparse
import base64
import fnmatch
import hashlib
import io
import json
import shutil
import sys
import tarfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
VENDOR = ROOT / "_vendor"
STAMP = "ASSETS.json"
REGISTRY = "https://registry.npmjs.org"


@dataclass(frozen=True)
class Asset:
    """One npm package, pinned, and the part of it the site serves."""

    folder: str  # under _vendor/, and so under _static/ in the built site
    package: str
    version: str
    integrity: str  # the registry's "dist.integrity" for this version
    licence: str
    keep: tuple[str, ...]  # fnmatch patterns of paths inside the package ("*" spans folders)

    @property
    def url(self) -> str:
        base = self.package.rsplit("/", 1)[-1]
        return f"{REGISTRY}/{self.package}/-/{base}-{self.version}.tgz"


ASSETS = (
    Asset("mathjax", "mathjax", "3.2.2",
          "sha512-Bt+SSVU8eBG27zChVewOicYs7Xsdt40qm4+UpHyX7k0/O9NliPc+x77k1/FEsPsjKPZGJvtRZM1vO"
          "+geW0OhGw==",
          "Apache-2.0",
          # the component the pages load, the TeX extensions it loads on demand, its fonts,
          # and the menu's accessibility parts (speech, explorer) it loads when asked
          ("LICENSE", "es5/tex-mml-chtml.js", "es5/input/*", "es5/output/chtml.js",
           "es5/output/chtml/*", "es5/ui/*", "es5/a11y/*", "es5/sre/*", "es5/adaptors/*")),
    Asset("requirejs", "requirejs", "2.3.7",
          "sha512-DouTG8T1WanGok6Qjg2SXuCMzszOo0eHeH9hDZ5Y4x8Je+9JB38HdTLT4/VA8OaUhBa0JPVHJ0pyBk"
          "M1z+pDsw==",
          "MIT (notice in the header of require.js)",
          ("require.js",)),
    Asset("html-manager", "@jupyter-widgets/html-manager", "1.0.6",
          "sha512-+Mn+Ra8wyIHrYaUpfmf9A3dsLkt/NuwzPQN8sthdxBD35VV5cOJbpmgMhNR27n/rmP3mKyEe0PWCJrtZ"
          "rXTXDQ==",
          "BSD-3-Clause (bundled libraries: dist/embed.js.LICENSE.txt)",
          # embed-amd.js and the icon fonts it loads from beside itself
          ("LICENSE", "dist/embed.js.LICENSE.txt", "dist/embed-amd.js",
           *(f"dist/*.{ext}" for ext in ("eot", "svg", "ttf", "woff", "woff2")))),
)

# Used by the tests only, never served by the site: _vendor-test/ (not copied into _static/).
TEST_VENDOR = ROOT / "_vendor-test"
TEST_ASSETS = (
    # the accessibility audit of every page in the browser test (tests/book/test_site_offline.py)
    Asset("axe-core", "axe-core", "4.14.1",
          "sha512-FHfa+lmNjQZfJz1q8wKqIDwC6DExcHt/pkjNQb09a3NPjCKg2rhu5qb2S4r76ASyFNNtuFooJpZe37"
          "OgudVGtQ==",
          "MPL-2.0",
          ("LICENSE", "axe.min.js")),
)


def check_integrity(data: bytes, integrity: str) -> None:
    """Raise if ``data`` does not have the registry's sha512 ``integrity`` (``sha512-<b64>``)."""
    algorithm, _, expected = integrity.partition("-")
    if algorithm != "sha512":
        raise ValueError(f"integrity must be sha512-<base64>, got {integrity!r}")
    actual = base64.b64encode(hashlib.sha512(data).digest()).decode()
    if actual != expected:
        raise ValueError(f"sha512 mismatch: expected {expected}, got {actual}")


def kept(member: str, keep: tuple[str, ...]) -> bool:
    """Whether a package path is one the site serves (source maps never are)."""
    return not member.endswith(".map") and any(fnmatch.fnmatchcase(member, k) for k in keep)


def extract(asset: Asset, data: bytes, into: Path) -> int:
    """Write the kept files of the tarball ``data`` under ``into``; return how many."""
    count = 0
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        for info in tar.getmembers():
            name = info.name.split("/", 1)[-1]  # npm tarballs hold one top folder, "package/"
            if not info.isfile() or not kept(name, asset.keep):
                continue
            target = into / name
            if into.resolve() not in target.resolve().parents:
                raise ValueError(f"{asset.package}: refusing path {info.name!r} outside the folder")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(tar.extractfile(info).read())
            count += 1
    missing = [k for k in asset.keep if not any(into.glob(k.replace("/*", "/**/*")))]
    if missing:
        raise ValueError(f"{asset.package} {asset.version} has no {missing}")
    return count


def fetch(url: str) -> bytes:
    """Download ``url``, or stop with a message that says what could not be reached."""
    try:
        with urllib.request.urlopen(url, timeout=120) as response:
            return response.read()
    except OSError as error:
        sys.exit(f"make assets: could not download {url}: {error}\n"
                 "The built site serves MathJax and the widget manager itself; they come from "
                 "the npm registry once, at set-up.")


def missing_static(config: Path) -> list[str]:
    """The files ``_config.yml`` tells the pages to load that no static folder holds."""
    sphinx = yaml.safe_load(config.read_text(encoding="utf-8"))["sphinx"]["config"]
    folders = [config.parent / folder for folder in sphinx["html_static_path"]]
    return [path for path in (sphinx["mathjax_path"], *sphinx["nb_ipywidgets_js"])
            if not any((folder / path).is_file() for folder in folders)]


def notices(assets: tuple[Asset, ...]) -> str:
    """The THIRD-PARTY.md text: what is vendored, from where, under which licence."""
    lines = ["# Third-party files served by this site", "",
             "| folder | package | version | licence | source |", "|---|---|---|---|---|"]
    lines += [f"| `{a.folder}/` | {a.package} | {a.version} | {a.licence} | {a.url} |"
              for a in assets]
    return "\n".join(lines) + "\n"


def vendor(into: Path = VENDOR, assets: tuple[Asset, ...] = ASSETS,
           config: Path | None = ROOT / "_config.yml") -> None:
    """Fill ``into`` with ``assets`` (skipped when its stamp already records them); with a
    ``config``, check that every file it tells the pages to load is there."""
    record = [[a.package, a.version, a.integrity, list(a.keep)] for a in assets]
    stamp = into / STAMP
    if not (stamp.exists() and json.loads(stamp.read_text()) == record):
        shutil.rmtree(into, ignore_errors=True)
        for asset in assets:
            data = fetch(asset.url)
            try:
                check_integrity(data, asset.integrity)
            except ValueError as error:
                sys.exit(f"make assets: {asset.url}: {error}")
            count = extract(asset, data, into / asset.folder)
            print(f"{asset.package} {asset.version}: {count} files -> {into / asset.folder}")
        (into / "THIRD-PARTY.md").write_text(notices(assets), encoding="utf-8")
        stamp.write_text(json.dumps(record))
    missing = missing_static(config) if config is not None else []
    if missing:
        sys.exit(f"make assets: _config.yml loads {missing}, which no static folder holds")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.parse_args()
    vendor()
    vendor(TEST_VENDOR, TEST_ASSETS, config=None)


if __name__ == "__main__":
    main()

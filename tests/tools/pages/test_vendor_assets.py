"""Tests for tools/pages/vendor_assets.py: pinned, hash-checked site assets (make assets)."""

import base64
import gzip
import hashlib
import io
import tarfile
from pathlib import Path

import pytest
import yaml

from tools.pages import vendor_assets as va

ROOT = Path(__file__).resolve().parents[3]


def tarball(files: dict[str, bytes]) -> bytes:
    """A .tgz of ``files``, the same bytes on every call (gzip's timestamp fixed at 0)."""
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0) as gz, \
            tarfile.open(fileobj=gz, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def integrity(data: bytes) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


FILES = {"package/LICENSE": b"licence", "package/dist/embed-amd.js": b"js",
         "package/dist/embed-amd.js.map": b"map", "package/dist/a.woff2": b"font",
         "package/src/big.ts": b"source"}
ASSET = va.Asset("pkg", "pkg", "1.0.0", integrity(tarball(FILES)), "MIT",
                 ("LICENSE", "dist/embed-amd.js", "dist/*.woff2"))


def test_integrity_accepts_the_registry_hash_and_rejects_one_flipped_byte():
    data = tarball(FILES)
    va.check_integrity(data, integrity(data))
    with pytest.raises(ValueError, match="sha512 mismatch"):
        va.check_integrity(data[:-1] + bytes([data[-1] ^ 1]), integrity(data))
    with pytest.raises(ValueError, match="sha512-<base64>"):
        va.check_integrity(data, "sha1-abc")


def test_extract_keeps_only_what_the_site_serves(tmp_path):
    count = va.extract(ASSET, tarball(FILES), tmp_path)
    kept = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file())
    assert kept == ["LICENSE", "dist/a.woff2", "dist/embed-amd.js"] and count == 3


def test_extract_says_which_pinned_file_a_package_lacks(tmp_path):
    asset = va.Asset("pkg", "pkg", "1.0.0", "", "MIT", ("LICENSE", "dist/gone.js"))
    with pytest.raises(ValueError, match="gone.js"):
        va.extract(asset, tarball(FILES), tmp_path)


def test_extract_refuses_a_path_outside_its_folder(tmp_path):
    evil = tarball({"package/../../escape.js": b"x"})
    asset = va.Asset("pkg", "pkg", "1.0.0", "", "MIT", ("*",))
    with pytest.raises(ValueError, match="outside"):
        va.extract(asset, evil, tmp_path / "into")
    assert not (tmp_path / "escape.js").exists()


def test_vendor_stops_on_a_tampered_download(tmp_path, monkeypatch):
    monkeypatch.setattr(va, "fetch", lambda url: tarball({**FILES, "package/LICENSE": b"x"}))
    with pytest.raises(SystemExit, match="sha512 mismatch"):
        va.vendor(tmp_path / "v", (ASSET,), ROOT / "_config.yml")


def test_vendor_fills_the_folder_once_and_checks_the_config(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(va, "fetch", lambda url: calls.append(url) or tarball(FILES))
    config = tmp_path / "_config.yml"
    config.write_text(yaml.safe_dump({"sphinx": {"config": {
        "html_static_path": ["v"], "mathjax_path": "pkg/dist/embed-amd.js",
        "nb_ipywidgets_js": {"pkg/dist/a.woff2": {}}}}}))
    va.vendor(tmp_path / "v", (ASSET,), config)
    va.vendor(tmp_path / "v", (ASSET,), config)  # the stamp matches: nothing downloaded
    assert calls == [ASSET.url] == ["https://registry.npmjs.org/pkg/-/pkg-1.0.0.tgz"]
    assert "| `pkg/` | pkg | 1.0.0 | MIT |" in (tmp_path / "v" / "THIRD-PARTY.md").read_text()
    config.write_text(config.read_text().replace("a.woff2", "missing.js"))
    with pytest.raises(SystemExit, match="missing.js"):
        va.vendor(tmp_path / "v", (ASSET,), config)


def test_scoped_package_url():
    asset = next(a for a in va.ASSETS if a.package.startswith("@"))
    assert asset.url.endswith("/@jupyter-widgets/html-manager/-/html-manager-1.0.6.tgz")


def test_the_books_config_loads_only_local_files():
    sphinx = yaml.safe_load((ROOT / "_config.yml").read_text())["sphinx"]["config"]
    for path in (sphinx["mathjax_path"], *sphinx["nb_ipywidgets_js"], *sphinx["html_css_files"]):
        assert "//" not in path, path

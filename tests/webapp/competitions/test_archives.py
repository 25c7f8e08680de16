"""Hostile .zip bundles: each is refused before anything is written outside the private staging folder."""

from __future__ import annotations

import stat
import zipfile

import pytest

from webapp.competitions.archives import extract_bundle_zip
from webapp.competitions.bundles import BundleError, BundleLimits


def hostile_zip(path, members):
    """members: [(ZipInfo or name, bytes)]"""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for info, data in members:
            archive.writestr(info, data)
    return path


DEFAULT_LIMITS = BundleLimits()


def refused(zip_path, tmp_path, limits=DEFAULT_LIMITS) -> str:
    dest = tmp_path / "dest"
    dest.mkdir()
    with pytest.raises(BundleError) as caught:
        extract_bundle_zip(zip_path, dest, limits)
    return str(caught.value)


def test_it_refuses_path_traversal(tmp_path):
    zip_path = hostile_zip(tmp_path / "b.zip", [("../../evil.py", b"x")])
    assert refused(zip_path, tmp_path) == "../../evil.py: paths with '..' are not allowed in a bundle."
    assert not (tmp_path / "evil.py").exists()


def test_it_refuses_absolute_paths(tmp_path):
    zip_path = hostile_zip(tmp_path / "b.zip", [("/tmp/evil.py", b"x")])
    assert "absolute paths are not allowed" in refused(zip_path, tmp_path)


def test_it_refuses_symlinks(tmp_path):
    link = zipfile.ZipInfo("public/train.csv")
    link.external_attr = (stat.S_IFLNK | 0o777) << 16
    zip_path = hostile_zip(tmp_path / "b.zip", [(link, b"/etc/passwd")])
    assert refused(zip_path, tmp_path) == "public/train.csv: symbolic links are not allowed in a bundle."


def test_it_refuses_a_zip_bomb_by_compression_ratio(tmp_path):
    zip_path = hostile_zip(tmp_path / "b.zip", [("public/train.csv", b"0" * 50_000_000)])
    assert "(a zip bomb?)" in refused(zip_path, tmp_path)
    assert not any((tmp_path / "dest").rglob("*.csv"))


def test_it_refuses_a_zip_that_unpacks_past_the_size_limit(tmp_path):
    zip_path = hostile_zip(tmp_path / "b.zip", [("public/train.csv", bytes(range(256)) * 40)])
    message = refused(zip_path, tmp_path, BundleLimits(max_total_bytes=1000))
    assert message == "The zip unpacks to 10.0 kB; at most 1000 B is allowed."


def test_it_refuses_a_member_that_lies_about_its_size(tmp_path):
    zip_path = hostile_zip(tmp_path / "b.zip", [("public/train.csv", b"a,b\n" * 1000)])
    data = bytearray(zip_path.read_bytes())
    # Shrink the declared size in the central directory (offset 24 of the entry) to 10 bytes.
    central = data.rfind(b"PK\x01\x02")
    data[central + 24 : central + 28] = (10).to_bytes(4, "little")
    zip_path.write_bytes(bytes(data))
    message = refused(zip_path, tmp_path)
    assert message.startswith("public/train.csv:")


def test_it_refuses_too_many_members(tmp_path):
    zip_path = hostile_zip(tmp_path / "b.zip", [(f"public/f{i}.txt", b"x") for i in range(6)])
    assert (
        refused(zip_path, tmp_path, BundleLimits(max_files=5))
        == "The zip has 6 files; at most 5 are allowed."
    )


def test_it_refuses_a_file_that_is_not_a_zip(tmp_path):
    path = tmp_path / "b.zip"
    path.write_bytes(b"this is not a zip")
    assert refused(path, tmp_path) == "b.zip: not a readable .zip file."


def test_it_finds_the_bundle_inside_a_single_wrapping_folder(tmp_path):
    zip_path = hostile_zip(
        tmp_path / "b.zip", [("tiny/competition.yaml", b"name: x"), ("tiny/public/a.csv", b"a")]
    )
    dest = tmp_path / "dest"
    dest.mkdir()
    assert extract_bundle_zip(zip_path, dest, BundleLimits()) == dest / "tiny"

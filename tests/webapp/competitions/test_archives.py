"""Hostile .zip bundles: each is refused before anything is written outside the private staging folder."""

from __future__ import annotations

import stat
import zipfile

import pytest

from webapp.competitions.importing.archives import extract_bundle_zip
from webapp.competitions.importing.bundles import BundleError, BundleLimits


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


@pytest.mark.parametrize(
    "kind", [stat.S_IFCHR, stat.S_IFBLK, stat.S_IFIFO, stat.S_IFSOCK], ids=["char", "block", "fifo", "socket"]
)
def test_it_refuses_device_files_pipes_and_sockets(tmp_path, kind):
    device = zipfile.ZipInfo("public/images/null")
    device.external_attr = (kind | 0o666) << 16
    zip_path = hostile_zip(tmp_path / "b.zip", [("public/a.txt", b"a"), (device, b"")])
    message = refused(zip_path, tmp_path)
    assert message == "public/images/null: device files, pipes and sockets are not allowed in a bundle."
    assert not any((tmp_path / "dest").rglob("*")), "checked before a byte is written"


def test_it_refuses_encrypted_members(tmp_path):
    zip_path = hostile_zip(tmp_path / "b.zip", [("public/secret.csv", b"a,b\n")])
    data = bytearray(zip_path.read_bytes())
    data[data.rfind(b"PK\x01\x02") + 8] |= 0x1  # the "encrypted" flag of the central directory entry
    zip_path.write_bytes(bytes(data))
    assert refused(zip_path, tmp_path) == "public/secret.csv: encrypted files are not allowed in a bundle."


def test_it_refuses_a_zip_that_holds_a_file_twice(tmp_path):
    with pytest.warns(UserWarning, match="Duplicate name"):
        zip_path = hostile_zip(tmp_path / "b.zip", [("public/a.csv", b"a\n1\n"), ("public/a.csv", b"a\n2\n")])
    assert refused(zip_path, tmp_path) == "public/a.csv: the zip holds this file twice."


def test_it_names_the_member_where_the_zip_is_corrupt(tmp_path):
    zip_path = tmp_path / "b.zip"
    with zipfile.ZipFile(zip_path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("public/ok.txt", b"fine")
        archive.writestr("public/images/broken.png", bytes(range(256)) * 64)
    data = bytearray(zip_path.read_bytes())
    start = data.find(b"public/images/broken.png") + len("public/images/broken.png") + 40
    data[start : start + 200] = bytes(200)  # scramble the deflate stream of the second member
    zip_path.write_bytes(bytes(data))
    assert refused(zip_path, tmp_path) == "public/images/broken.png: the zip is corrupt here."


def test_it_extracts_nested_folders_of_any_files_in_streams(tmp_path, monkeypatch):
    from webapp.competitions.importing import archives

    monkeypatch.setattr(archives, "CHUNK_BYTES", 1000)  # a member of 20 kB is written in 20 pieces
    image = bytes(range(256)) * 80
    members = [("public/images/a/1.png", image), ("public/meta/x.json", b"[1, 2]"), ("public/notes", b"t")]
    zip_path = hostile_zip(tmp_path / "b.zip", members)
    dest = tmp_path / "dest"
    dest.mkdir()
    extract_bundle_zip(zip_path, dest, BundleLimits())
    assert (dest / "public/images/a/1.png").read_bytes() == image
    assert sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file()) == [
        "public/images/a/1.png", "public/meta/x.json", "public/notes",
    ]  # fmt: skip


def test_the_default_limits_fit_real_competitions_and_match_the_settings(settings):
    from webapp.competitions.services import bundle_limits

    assert bundle_limits() == BundleLimits()
    assert BundleLimits().max_files >= 50_000 and BundleLimits().max_total_bytes >= 8 * 1024**3

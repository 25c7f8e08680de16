"""rl_core.sandbox.reads: the attempt's mirror of the public files, and the kernel's report of its reads."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from rl_core.sandbox.reads import ReadWatch, mirror_inputs


def public_files(folder):
    (folder / "images").mkdir(parents=True)
    (folder / "train.csv").write_text("id,y\n1,a\n")
    (folder / "images" / "a.png").write_bytes(b"\x89PNG")
    return folder


def test_the_mirror_links_every_public_file_without_copying_it(tmp_path):
    source = public_files(tmp_path / "public")
    assert mirror_inputs(source, tmp_path / "mirror")
    for name in ("train.csv", "images/a.png"):
        assert os.path.samefile(source / name, tmp_path / "mirror" / name)


def test_reads_through_the_mirror_are_reported_by_name_in_subfolders_and_from_child_processes(tmp_path):
    mirror = tmp_path / "mirror"
    mirror_inputs(public_files(tmp_path / "public"), mirror)
    watch = ReadWatch(mirror)
    subprocess.run(
        [sys.executable, "-c", f"open({str(mirror / 'images' / 'a.png')!r}, 'rb').read()"], check=True
    )
    assert watch.files_read() == ("images/a.png",)


def test_listing_the_folder_or_reading_the_shared_original_is_no_read_of_this_attempt(tmp_path):
    source = public_files(tmp_path / "public")
    mirror = tmp_path / "mirror"
    mirror_inputs(source, mirror)
    watch = ReadWatch(mirror)
    os.listdir(mirror)
    (source / "train.csv").read_text()  # another attempt reads its own view of the same file
    assert watch.files_read() == ()


def test_public_files_on_another_filesystem_leave_no_mirror_and_no_half_of_one(tmp_path):
    """Hard links cannot cross filesystems: the sandbox then mounts the shared folder, unobserved."""
    with tempfile.TemporaryDirectory(dir="/dev/shm") as other:
        if os.stat(other).st_dev == os.stat(tmp_path).st_dev:
            pytest.skip("/dev/shm is on the same filesystem as the scratch folder here")
        assert not mirror_inputs(public_files(Path(other) / "public"), tmp_path / "mirror")
    assert not (tmp_path / "mirror").exists()

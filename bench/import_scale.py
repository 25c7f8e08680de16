"""Import time and peak memory of a competition bundle against its number of files and its bytes.

    python bench/import_scale.py [--quick] [--json PATH]

Each case writes a .zip bundle in a temporary folder (a valid tiny competition plus N public files under
nested folders, made on the fly: small text files for the file counts, ZIP_STORED blocks of random bytes
for the sizes, in files of up to 512 MB, so nothing compresses and the zip-bomb ratio does not apply),
then imports it in a fresh child process as `manage.py import_competition` does
(`services.competition_import`: extract, validate, store the row and the files). It reports the import's
wall time and the child's peak resident memory (`resource.getrusage(RUSAGE_SELF).ru_maxrss`), next to
its memory once Django had started.

The database is $DATABASE_URL when set, else a throwaway SQLite file (migrated in a process of its own, so
migrating does not count); the data dir is a temporary folder. Full: 100 / 2,000 / 20,000 files and
10 MB / 500 MB / 2 GB; --quick: 100 / 2,000 files and 10 MB / 200 MB. The target: the import's peak memory
stays under `MEMORY_BOUND_MB` above the process's memory once Django has started, whatever the size.

tests/webapp/competitions/test_import_scale.py uses `write_scale_zip` and `measure_import` from here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

from _common import ROOT, bench_arguments, machine_info, print_table, target, write_json

MEMORY_BOUND_MB = 200.0  # import peak RSS above the RSS of a started Django process
BLOCK_BYTES = 1 << 20
FILE_CASES = {"full": (100, 2_000, 20_000), "quick": (100, 2_000)}
BYTE_CASES = {"full": (10, 500, 2048), "quick": (10, 200)}  # MB, in files of 512 MB at most
IDS = 100
SPEC = (
    "name: Scale\nslug: {slug}\nmetric: accuracy\nid_column: id\ntarget_columns: [label]\n"
    "time_limit_s: 60\nmemory_mb: 1024\n"
)

CHILD = """
import json, os, resource, sys, time
import django
django.setup()
from webapp.competitions import services, storage
from webapp.competitions.models import Competition
started_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.perf_counter()
competition = services.competition_import(path=__import__("pathlib").Path(sys.argv[1]), owner=None)
seconds = time.perf_counter() - t0
peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
files = len(competition.public_files)
Competition.objects.filter(pk=competition.pk).delete()
print(json.dumps({"seconds": seconds, "started_mb": started_kb / 1024, "peak_mb": peak_kb / 1024,
                  "public_files": files}))
"""


def write_scale_zip(path: Path, *, files: int, total_bytes: int = 0, slug: str = "scale") -> Path:
    """A valid bundle .zip with `files` extra public files: `total_bytes` of incompressible data spread over
    them (stored, written a block at a time), or a line of text each when total_bytes is 0."""
    block = os.urandom(BLOCK_BYTES)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        write_competition(archive, slug)
        each = total_bytes // files if files else 0
        for k in range(files):
            name = f"public/images/{k // 1000:03d}/{k:06d}" + (".bin" if each else ".txt")
            if not each:
                archive.writestr(name, f"file {k}\n")
                continue
            with archive.open(zipfile.ZipInfo(name), "w", force_zip64=True) as sink:
                for start in range(0, each, BLOCK_BYTES):
                    sink.write(block[: min(BLOCK_BYTES, each - start)])
    return path


def write_competition(archive: zipfile.ZipFile, slug: str) -> None:
    ids = range(IDS)
    archive.writestr("competition.yaml", SPEC.format(slug=slug))
    archive.writestr("description.md", "# Scale\n\nA competition made to measure imports.\n")
    archive.writestr("public/sample_submission.csv", "id,label\n" + "".join(f"{i},0\n" for i in ids))
    archive.writestr("private/answers.csv", "id,label\n" + "".join(f"{i},{i % 2}\n" for i in ids))


def measure_import(zip_path: Path, *, data_dir: Path, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Import `zip_path` in a child process; its seconds, started_mb, peak_mb and public_files."""
    child_env = {**os.environ, **(env or {}), "PRACTICUM_DATA_DIR": str(data_dir)}
    child_env.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(zip_path)],
        cwd=ROOT, env=child_env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode:
        raise RuntimeError(f"the import failed: {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def sqlite_env(folder: Path) -> dict[str, str]:
    """A migrated SQLite database in `folder` (migrated in its own process)."""
    env = {"DATABASE_URL": f"sqlite:///{folder / 'bench.db'}", "PRACTICUM_DATA_DIR": str(folder)}
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--verbosity", "0"],
        cwd=ROOT, env={**os.environ, **env}, check=True,
    )  # fmt: skip
    return env


def run_case(scratch: Path, env: dict[str, str], *, files: int, megabytes: int) -> dict[str, Any]:
    zip_path = scratch / f"bundle-{files}-{megabytes}.zip"
    t0 = time.perf_counter()
    write_scale_zip(zip_path, files=files, total_bytes=megabytes * 1024 * 1024)
    built_s = time.perf_counter() - t0
    data_dir = Path(tempfile.mkdtemp(dir=scratch))
    measured = measure_import(zip_path, data_dir=data_dir, env=env)
    zip_mb = zip_path.stat().st_size / 1024**2
    zip_path.unlink()
    subprocess.run(["rm", "-rf", str(data_dir)], check=True)
    growth = measured["peak_mb"] - measured["started_mb"]
    return {"files": files, "data_mb": megabytes, "zip_mb": round(zip_mb, 1), "build_s": built_s,
            **measured, "import_growth_mb": growth}  # fmt: skip


def cases(quick: bool) -> list[tuple[int, int]]:
    """(files, MB of data) per case: the file counts with one line each, then the sizes in 512 MB files."""
    mode = "quick" if quick else "full"
    by_files = [(n, 0) for n in FILE_CASES[mode]]
    by_bytes = [(max(1, mb // 512), mb) for mb in BYTE_CASES[mode]]
    return by_files + by_bytes


def main() -> None:
    args = bench_arguments(__doc__.splitlines()[0])
    rows = []
    with tempfile.TemporaryDirectory(prefix="import-scale-") as folder:
        scratch = Path(folder)
        env = {} if os.environ.get("DATABASE_URL") else sqlite_env(scratch)
        for files, megabytes in cases(args.quick):
            rows.append(run_case(scratch, env, files=files, megabytes=megabytes))
            print(f"  {files} files, {megabytes} MB: {rows[-1]['seconds']:.1f} s", file=sys.stderr)
    columns = ["files", "data_mb", "zip_mb", "seconds", "started_mb", "peak_mb", "import_growth_mb"]
    print_table(rows, columns, title="Import time and peak memory (one child process per case)")
    worst = max(row["import_growth_mb"] for row in rows)
    targets = {"import_growth_mb": target(worst, "<=", MEMORY_BOUND_MB)}
    database = "sqlite" if env else "DATABASE_URL"
    config = {"quick": args.quick, "database": database, "memory_bound_mb": MEMORY_BOUND_MB}
    write_json(
        args.json, benchmark="import_scale", machine=machine_info(), config=config, targets=targets,
        results={"cases": rows},
    )  # fmt: skip


if __name__ == "__main__":
    main()

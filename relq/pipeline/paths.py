"""The pipeline's paths, checked before Spark starts: a missing, unreadable or
mistyped local input is one line at once, not Spark's Java stack after its
start. Paths on other file systems (hdfs://, s3a://, ...) are Spark's to check."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlparse

from relq.errors import RelqError

# What a file's extension says it holds (a compression suffix is looked through).
FORMAT_OF = {".parquet": "parquet", ".parq": "parquet", ".csv": "csv", ".json": "json", ".jsonl": "json",
             ".ndjson": "json"}
COMPRESSIONS = frozenset({".gz", ".bz2", ".deflate", ".lz4", ".snappy", ".zst", ".xz"})


def local(path: str) -> Path | None:
    """The local path ``path`` names (a plain path or a file: URI), None for another file system."""
    parsed = urlparse(path)
    drive = len(parsed.scheme) == 1  # C:\\data parses with the scheme "c": a local path
    if parsed.scheme not in ("", "file") and not drive:
        return None
    return Path(parsed.path if parsed.scheme == "file" else path)


def for_spark(path: str, remote: str | None) -> str:
    """``path`` as Spark is given it: on a Spark Connect server on this machine, a relative local
    path made absolute (the server resolves one against its own working folder, not this
    process's); anything else as it is."""
    from relq.pipeline.spark import here

    root = local(path)
    if not remote or root is None or not here(remote) or root.is_absolute():
        return path
    return str(root.resolve())


def data_files(root: Path) -> list[Path]:
    """The files Spark reads under a folder: it skips names starting with _ or . (_SUCCESS, .crc)."""
    found: list[Path] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(("_", ".")))
        found += [Path(folder) / f for f in sorted(files) if not f.startswith(("_", "."))]
    return found


def format_of(file: Path) -> str | None:
    """The format a file's name says it holds, None when the name does not say."""
    suffixes = [s.lower() for s in file.suffixes]
    while suffixes and suffixes[-1] in COMPRESSIONS:
        suffixes.pop()
    return FORMAT_OF.get(suffixes[-1]) if suffixes else None


def check_input(option: str, path: str, fmt: str) -> None:
    """An input Spark will read as ``fmt``: it exists, can be read, and no file's name says
    it is of another format."""
    root = local(path)
    if root is None:
        return
    if not root.exists():
        raise RelqError(f"{option} {path}: no such file or folder")
    files = [root] if root.is_file() else data_files(root)
    if root.is_dir() and not os.access(root, os.R_OK | os.X_OK):
        raise RelqError(f"{option} {path}: cannot read the folder (permission denied)")
    if not files:
        raise RelqError(f"{option} {path}: the folder holds no file to read")
    for file in files:
        if not os.access(file, os.R_OK):
            raise RelqError(f"{option} {file}: cannot read it (permission denied)")
    said = sorted({f for f in map(format_of, files) if f is not None})
    if said and fmt not in said:
        hint = f": pass --format {said[0]}" if len(said) == 1 else ""
        raise RelqError(f"{option} {path}: {' and '.join(said)} by its file names, not {fmt}{hint}")


def check_folder(option: str, path: str) -> None:
    """A folder the command reads and writes (an archive root): where it exists, a folder."""
    root = local(path)
    if root is not None and root.exists() and not root.is_dir():
        raise RelqError(f"{option} {path}: a file, not a folder")


def check_output(option: str, path: str | os.PathLike[str]) -> None:
    """A local folder the command writes into: a folder it may write in, or one it can create.
    Creating it is tried and undone (nothing is left behind when a later check fails), so a
    path under a file, in /proc or on a read-only disk is one line before Spark starts."""
    root = local(os.fspath(path))
    if root is None:
        return
    if root.exists():
        if not root.is_dir():
            raise RelqError(f"{option} {path}: a file, not a folder")
        if not os.access(root, os.W_OK | os.X_OK):
            raise RelqError(f"{option} {path}: cannot write in the folder (permission denied)")
        return
    missing = [root]
    while not missing[-1].parent.exists() and missing[-1].parent != missing[-1]:
        missing.append(missing[-1].parent)
    base = missing[-1].parent
    if not base.is_dir():
        raise RelqError(f"{option} {path}: {base} is a file, not a folder")
    try:
        root.mkdir(parents=True)
    except OSError as exc:
        raise RelqError(f"{option} {path}: cannot create the folder ({exc.strerror or type(exc).__name__})"
                        ) from None
    for folder in missing:  # the deepest first
        folder.rmdir()


def check_replaced(option: str, path: str) -> None:
    """A Parquet folder the command replaces (Spark's overwrite deletes whatever is at the path
    first): it can be written, and where it exists, it holds Parquet files only (a folder of
    anything else is refused, not deleted)."""
    root = local(path)
    if root is None:
        return
    check_output(option, path)
    if not root.is_dir():
        return
    for entry in sorted(root.iterdir()):
        if entry.name.startswith(("_", ".")) or (entry.is_file() and format_of(entry) == "parquet"):
            continue
        raise RelqError(f"{option} {path}: it is replaced on every run, and it holds {entry.name}, which a "
                        f"Parquet folder does not: pass a new folder")


def check_apart(option: str, path: str, other_option: str, other: str, *, may_hold: bool = False) -> None:
    """``path``, which the command writes, is not ``other`` and lies not inside it, nor holds it
    unless ``may_hold``."""
    mine, theirs = local(path), local(other)
    if mine is None or theirs is None:
        return
    mine, theirs = mine.resolve(), theirs.resolve()
    if mine == theirs:
        how = "is"
    elif theirs in mine.parents:
        how = "is inside"
    elif mine in theirs.parents and not may_hold:
        how = "holds"
    else:
        return
    raise RelqError(f"{option} {path} {how} {other_option} {other}: pass {option} a folder of its own")

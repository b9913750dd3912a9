"""The parse cache: each file's facts, kept by the file's checksum.

A parse is the slow part of a build; a rebuild after one file changed parses
only that file. The cache is keyed by everything that could change the facts
of an unchanged file: relq's build code, sqlfluff's version and .sqlfluff.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from pathlib import Path

import sqlfluff

from relq.compiler.facts import FileFacts, from_json, to_json

CACHE_DIR = ".relq_cache"


def cache_key(root: Path) -> str:
    h = hashlib.sha256(sqlfluff.__version__.encode())
    for file in sorted(Path(__file__).parent.glob("*.py")):
        h.update(file.read_bytes())
    config = root / ".sqlfluff"
    if config.is_file():
        h.update(config.read_bytes())
    return h.hexdigest()[:16]


def load(root: Path) -> dict[str, FileFacts]:
    file = root / CACHE_DIR / f"facts-{cache_key(root)}.json"
    try:
        raw = json.loads(file.read_text(encoding="utf-8"))
        return {path: from_json(FileFacts, data) for path, data in raw.items()}
    except (OSError, ValueError, KeyError, TypeError):
        return {}  # no cache, or one we cannot read: parse everything


def store(root: Path, facts: list[FileFacts]) -> None:
    """Keep the facts for the next build; a cache that cannot be written (a read-only
    checkout, a build running at the same time) only costs the next build time."""
    folder = root / CACHE_DIR
    name = f"facts-{cache_key(root)}.json"
    tmp = folder / f"{name}.{os.getpid()}.{threading.get_ident()}.tmp"  # two builds at once
    try:
        folder.mkdir(exist_ok=True)
        for old in folder.glob("facts-*.json"):
            if old.name != name:
                old.unlink(missing_ok=True)
        tmp.write_text(json.dumps({f.path: to_json(f) for f in facts}), encoding="utf-8")
        tmp.replace(folder / name)
    except OSError:
        tmp.unlink(missing_ok=True)

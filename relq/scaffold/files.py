"""Writing the rendered files into a project: every queue's (`invoke render-queues`)."""

from __future__ import annotations

from pathlib import Path

from relq.scaffold.catalogue import load
from relq.scaffold.queue import Queue
from relq.scaffold.render import renders


def write(root: Path, queues: list[Queue] | None = None) -> list[str]:
    """Render every queue of ``root``'s catalogue into its database/ and tests_tsqlt/;
    returns the paths whose text changed (a second run changes nothing)."""
    return write_files(root, renders(load(root) if queues is None else queues))


def write_files(root: Path, files: list[tuple[str, str]]) -> list[str]:
    """Write each (path, text) under ``root`` whose file has another text; returns their paths."""
    changed = []
    for path, text in files:
        target = root / path
        if not target.exists() or target.read_text(encoding="utf-8") != text:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
            changed.append(path)
    return changed

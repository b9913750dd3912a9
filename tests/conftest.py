"""A throwaway copy of a fixture project, to plant one error in and build."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from relq.build import BuildResult, build

FIXTURES = Path(__file__).parent.parent / "fixtures"
HEADER = "SET ANSI_NULLS ON;\nSET QUOTED_IDENTIFIER ON;\nGO\n"


@dataclass
class Project:
    root: Path

    def read(self, path: str) -> str:
        return (self.root / path).read_text(encoding="utf-8")

    def write(self, path: str, text: str) -> None:
        file = self.root / path
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(text, encoding="utf-8")

    def edit(self, path: str, old: str, new: str) -> None:
        text = self.read(path)
        assert old in text, f"{old!r} is not in {path}"
        self.write(path, text.replace(old, new, 1))

    def line_of(self, path: str, needle: str) -> int:
        for number, text in enumerate(self.read(path).splitlines(), start=1):
            if needle in text:
                return number
        raise AssertionError(f"{needle!r} is not in {path}")

    def build(self) -> BuildResult:
        return build(self.root)

    def problems(self) -> list[str]:
        return [str(d) for d in self.build().diagnostics]


@pytest.fixture(scope="session")
def warm_clean(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The clean fixture, built once: its parse cache makes every copy quick."""
    root = tmp_path_factory.mktemp("warm") / "project"
    shutil.copytree(FIXTURES / "clean", root)
    assert build(root).ok
    return root


@pytest.fixture
def project(tmp_path: Path, warm_clean: Path) -> Project:
    """A copy of the clean fixture (with its cache, without its dist/) to plant errors in."""
    root = tmp_path / "project"
    shutil.copytree(warm_clean, root, ignore=shutil.ignore_patterns("dist"))
    return Project(root)

"""The README is a front page: short, with a table of contents; and every link in
the documentation resolves inside the repository, anchors included."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
MAX_README_LINES = 250
# what a clone does not have: the places the house style and the design came from
OUTSIDE = ("../shared", "shared/STYLE", "seeds/")

FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.M | re.S)
CODE_SPAN = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)", re.S)
INLINE_LINK = re.compile(r"\[([^\]]*)\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_DEFINITION = re.compile(r"^ {0,3}\[([^\]]+)\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$", re.M)
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$", re.M)


def markdown_files() -> list[Path]:
    """The repository's own markdown files (not those of .venv, caches or outputs)."""
    skip = {"dist", "reports", "build", "node_modules"}
    return sorted(p for p in REPO.rglob("*.md")
                  if not any(part.startswith(".") or part in skip or part.endswith(".egg-info")
                             for part in p.relative_to(REPO).parts[:-1]))


def prose(text: str) -> str:
    """The text without fenced code blocks and code spans, where brackets are no links."""
    return CODE_SPAN.sub("code", FENCE.sub("", text))


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading: the rendered text in lower case, punctuation
    dropped (hyphens and underscores kept), each space a hyphen."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link shows its text
    text = text.replace("`", "").strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every heading's anchor; a repeated heading gets -1, -2, ... as on GitHub."""
    seen: dict[str, int] = {}
    found = set()
    for match in HEADING.finditer(FENCE.sub("", text)):
        slug = anchor(match.group(2))
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        found.add(slug if n == 0 else f"{slug}-{n}")
    return found


def links(text: str) -> list[str]:
    """The targets of inline links and of reference definitions."""
    body = prose(text)
    return [m.group(2) for m in INLINE_LINK.finditer(body)] + \
           [m.group(2) for m in REFERENCE_DEFINITION.finditer(body)]


def broken_links(path: Path) -> list[str]:
    """Every relative link of ``path`` that leads nowhere, or outside the repository."""
    problems = []
    where = path.relative_to(REPO)
    for target in links(path.read_text(encoding="utf-8")):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # http:, https:, mailto:
            continue
        file_part, _, fragment = target.partition("#")
        if file_part.startswith("/"):
            problems.append(f"{where}: {target} is an absolute path")
            continue
        dest = (path.parent / file_part).resolve() if file_part else path
        if not dest.is_relative_to(REPO):
            problems.append(f"{where}: {target} leads outside the repository")
        elif not dest.exists():
            problems.append(f"{where}: {target} does not exist")
        elif fragment and dest.suffix == ".md" and fragment not in anchors(dest.read_text(encoding="utf-8")):
            problems.append(f"{where}: {target} names no heading of {dest.relative_to(REPO)}")
    return problems


def test_the_readme_is_a_front_page() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_README_LINES, f"README.md has {len(lines)} lines, more than {MAX_README_LINES}"


def test_the_readme_has_a_table_of_contents_of_its_sections() -> None:
    text = README.read_text(encoding="utf-8")
    contents = re.search(r"^## Contents\n(.*?)(?=^#)", text, re.M | re.S)
    assert contents, "README.md has no '## Contents' section"
    entries = re.findall(r"^\s*- \[[^\]]+\]\(#([^)]+)\)", contents.group(1), re.M)
    sections = [anchor(h) for h in re.findall(r"^## (.*)$", FENCE.sub("", text), re.M)]
    assert entries, "the table of contents lists nothing"
    missing = [e for e in entries if e not in anchors(text)]
    assert not missing, f"contents entries with no heading: {missing}"
    unlisted = [s for s in sections if s != "contents" and s not in entries]
    assert not unlisted, f"sections missing from the contents: {unlisted}"


@pytest.mark.parametrize("name", ["README.md", "CONTRIBUTING.md", "docs"])
def test_every_relative_link_resolves_inside_the_repository(name: str) -> None:
    path = REPO / name
    files = sorted(path.glob("*.md")) if path.is_dir() else [path]
    assert files, f"{name}: no markdown here"
    problems = [problem for f in files for problem in broken_links(f)]
    assert not problems, "\n".join(problems)


def test_every_docs_page_is_linked_from_the_readme() -> None:
    linked = {(REPO / t.partition("#")[0]).resolve() for t in links(README.read_text(encoding="utf-8"))}
    unlinked = [p.name for p in sorted((REPO / "docs").glob("*.md")) if p.resolve() not in linked]
    assert not unlinked, f"docs pages the README does not link: {unlinked}"


def test_no_markdown_file_refers_outside_the_repository() -> None:
    problems = []
    for path in markdown_files():
        text = path.read_text(encoding="utf-8")
        problems += [f"{path.relative_to(REPO)}: mentions {word!r}" for word in OUTSIDE if word in text]
        problems += [p for p in broken_links(path) if "outside" in p or "absolute" in p]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(("heading", "slug"), [
    ("Using a queue", "using-a-queue"),
    ("What `invoke build` checks", "what-invoke-build-checks"),
    ("Keys, tokens and sessions", "keys-tokens-and-sessions"),
    ("Your transaction or its own: `_trx` and `_utx`", "your-transaction-or-its-own-_trx-and-_utx"),
    ("Where to change a queue's behaviour", "where-to-change-a-queues-behaviour"),
    ("Running workers (`invoke worker`)", "running-workers-invoke-worker"),
])
def test_anchors_follow_githubs_rules(heading: str, slug: str) -> None:
    assert anchor(heading) == slug


def test_a_broken_link_or_anchor_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(f"{__name__}.REPO", tmp_path)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A\n\n## Two words\n", encoding="utf-8")
    page = tmp_path / "README.md"
    page.write_text("[ok](docs/a.md#two-words) [gone](docs/b.md) [anchor](docs/a.md#three)\n"
                    "[up](../x.md) `[code](nowhere.md)`\n\n```\n[fenced](nowhere.md)\n```\n"
                    "[ref][r]\n\n[r]: docs/c.md\n", encoding="utf-8")
    assert broken_links(page) == [
        "README.md: docs/b.md does not exist",
        "README.md: docs/a.md#three names no heading of docs/a.md",
        "README.md: ../x.md leads outside the repository",
        "README.md: docs/c.md does not exist",
    ]

"""Build problems, and the comments that silence one check on one line."""

from __future__ import annotations

from dataclasses import dataclass

from relq.compiler.facts import FileFacts

# Checks that no comment can silence: the file must parse, and a silenced
# check must exist and say why.
UNSILENCEABLE = frozenset({"parse", "allow", "layout", "duplicate-object", "message-mark"})
MIN_REASON = 10  # characters: "because" and a few words


@dataclass(frozen=True, order=True)
class Diagnostic:
    path: str
    line: int
    check: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message} [{self.check}]"


def apply_allows(
    diagnostics: list[Diagnostic], files: list[FileFacts], known_checks: set[str]
) -> list[Diagnostic]:
    """Drop the diagnostics an allow comment silences; report allows that are
    malformed or silence nothing."""
    allows = {(f.path, a.line, a.check): a for f in files for a in f.allows}
    used: set[tuple[str, int, str]] = set()
    kept = []
    for d in diagnostics:
        k = (d.path, d.line, d.check)
        if k in allows and d.check not in UNSILENCEABLE and len(allows[k].reason) >= MIN_REASON:
            used.add(k)
        else:
            kept.append(d)
    for f in files:
        for a in f.allows:
            k = (f.path, a.line, a.check)
            if a.check not in known_checks or a.check in UNSILENCEABLE:
                kept.append(Diagnostic(f.path, a.comment_line, "allow",
                                       f"relq:allow names no check that can be silenced: "
                                       f"{a.check}"))
            elif len(a.reason) < MIN_REASON:
                kept.append(Diagnostic(f.path, a.comment_line, "allow",
                                       f"relq:allow {a.check} must say why "
                                       f"(a reason of {MIN_REASON} characters or more)"))
            elif k not in used:
                kept.append(Diagnostic(f.path, a.comment_line, "allow",
                                       f"relq:allow {a.check} silences nothing on line "
                                       f"{a.line}: remove it"))
    return sorted(kept)

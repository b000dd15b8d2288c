"""The docs stand on their own (issue 31): every link in README.md and docs/ leads to a file
in the repository, nothing points outside it (a clone has no `../shared/`), and docs/README.md
is an index of every page."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s#]+)(?:#[^)]*)?\)")
#: a repository path written in backticks or plainly: docs/x.md, deploy/…, bot/…
REPO_PATH = re.compile(r"(?<![\w./$-])((?:docs|deploy|bot|core|lab|storage|forensics|cloud|"
                       r"benchmarks|tests)/[\w./*-]*[\w/*])")


#: ``../shared/…``, ``shared/pcaps``, ``specs/x.md`` (a name that merely ends in "shared", such
#: as the resource group ``ghost-shared/``, is not a path outside)
OUTSIDE = re.compile(r"(?<![\w-])(?:\.\./)?(?:shared|specs)/")


def test_nothing_points_outside_the_repository() -> None:
    bad = [f"{page.relative_to(ROOT)}:{n}: {line.strip()}"
           for page in PAGES
           for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
           if OUTSIDE.search(line)]
    assert not bad, "\n".join(bad)


def test_every_link_leads_to_a_file_in_the_repository() -> None:
    bad = []
    for page in PAGES:
        for target in LINK.findall(page.read_text(encoding="utf-8")):
            if re.match(r"^[a-z]+:", target):  # https:, mailto:
                continue
            resolved = (page.parent / target).resolve()
            if not resolved.is_relative_to(ROOT) or not resolved.exists():
                bad.append(f"{page.relative_to(ROOT)} -> {target}")
    assert not bad, "\n".join(bad)


def test_repository_paths_named_in_the_docs_exist() -> None:
    """`docs/terminal.md`, `deploy/teams/manifest.template.json`, `bot/terminal/` …: a path
    the reader is sent to is there (names with placeholders or globs are skipped)."""
    bad = []
    for page in PAGES:
        for path in set(REPO_PATH.findall(page.read_text(encoding="utf-8"))):
            if any(c in path for c in "*{}<>") or path.endswith((".", "-")):
                continue
            if not (ROOT / path).exists() and not (ROOT / path.rstrip("/")).exists():
                bad.append(f"{page.relative_to(ROOT)}: {path}")
    assert not bad, "\n".join(sorted(bad))


def test_the_docs_index_lists_every_page() -> None:
    index = (DOCS / "README.md").read_text(encoding="utf-8")
    linked = {Path(t).name for t in LINK.findall(index)}
    pages = {p.name for p in DOCS.glob("*.md")} - {"README.md"}
    assert pages <= linked, f"not in docs/README.md: {sorted(pages - linked)}"
    assert "schemas/" in {t for t in LINK.findall(index)}

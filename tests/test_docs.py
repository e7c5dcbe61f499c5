"""Documentation stays consistent with the code and with its chapters."""

import re
import subprocess
import sys


def test_theory_md_is_assembled_from_chapters(repo_root):
    proc = subprocess.run(
        [sys.executable, str(repo_root / "scripts" / "build_theory.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr


def test_theory_marks_reconstructions(repo_root):
    text = (repo_root / "docs" / "theory.md").read_text(encoding="utf-8")
    assert text.count("reconstruction") >= 3
    for needle in ("Eckart", "Lam", "Bruck", "Krein", "exactness theorem", "polar"):
        assert needle.lower() in text.lower(), needle


def test_readme_commands_exist(repo_root):
    readme = (repo_root / "README.md").read_text(encoding="utf-8")
    make = (repo_root / "Makefile").read_text(encoding="utf-8")
    assert "make demo" in readme and "make test" in readme
    assert "\ndemo:" in make and "\ntest:" in make
    ci = (repo_root / ".ci" / "run").read_text(encoding="utf-8")
    assert "make test" in ci


# --- self-contained docs: no internal spec, every theory reference resolves -------------------------

_TEXT_SUFFIXES = {".md", ".py", ".pyi", ".txt", ".csv", ".json", ".ipynb", ".sh", ".toml", ".cfg"}
# "theory §30.4", "docs/theory.md §30 App. A", "theory.md, §45", and a chain "§5.1–§5.4", "§10–§30"
_REF = r"§(\d+(?:\.\d+)*)(?: App\. ([A-Z]))?"
_CHAIN = re.compile(r"\s*(?:[–,-]|and|or|to)\s*" + _REF)
_THEORY_REF = re.compile(r"\btheory(?:\.md)?,?\s+" + _REF)
# "docs/theory/40_error_identities.md §6" (a section of that chapter) or "... §40.6"
_CHAPTER_REF = re.compile(r"docs/theory/(\d+)_[\w-]+\.md,?\s+" + _REF)
_CHAPTER_FILE = re.compile(r"docs/theory/\d+_[\w-]+\.md")
# headings of the assembled document: "## 30. Coset ...", "### 30.4 Invertibility ...", "### 30.A Appendix ..."
_HEADING_NUMBER = re.compile(r"^#{2,}\s+(\d+(?:\.(?:\d+|[A-Z]))*)\.?\s", re.M)


def _text_files(repo_root, *tops):
    for top in tops:
        path = repo_root / top
        files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
        for f in files:
            if f.suffix in _TEXT_SUFFIXES and "__pycache__" not in f.parts:
                yield f


def _theory_sections(repo_root):
    return set(_HEADING_NUMBER.findall((repo_root / "docs" / "theory.md").read_text(encoding="utf-8")))


def _ref_id(number, appendix):
    return f"{number}.{appendix}" if appendix else number


def _chained(text, end):
    """The further references of a chain that starts right before ``end`` ("§5.1–§5.4")."""
    out = []
    m = _CHAIN.match(text, end)
    while m:
        out.append(_ref_id(m.group(1), m.group(2)))
        m = _CHAIN.match(text, m.end())
    return out


def theory_references(text):
    """Every section id ("30.4", "30.A", "45") a text cites as a section of docs/theory.md."""
    refs = []
    for m in _THEORY_REF.finditer(text):
        refs.append((m.start(), _ref_id(m.group(1), m.group(2))))
        refs.extend((m.start(), r) for r in _chained(text, m.end()))
    for m in _CHAPTER_REF.finditer(text):
        chapter = str(int(m.group(1)))
        for r in [_ref_id(m.group(2), m.group(3)), *_chained(text, m.end())]:
            # "§6" of a chapter file is section 6 of that chapter; "§40.6" is already qualified
            qualified = r if r.split(".")[0] == chapter and "." in r else f"{chapter}.{r}"
            refs.append((m.start(), qualified))
    return refs


def test_theory_references_parse():
    text = (
        "see theory §30.4 and docs/theory.md §45; (theory §5.1–§5.4), theory.md §30 App. A, "
        "theory §10–§30, docs/theory/40_error_identities.md §6, docs/theory/55_cerar_opt.md §55.4, "
        "[BH §9.1], the SPEC"
    )
    assert [r for _, r in theory_references(text)] == ["30.4", "45", "5.1", "5.4", "30.A", "10", "30", "40.6", "55.4"]


def test_docs_do_not_cite_the_internal_spec(repo_root):
    """Users never see the project's internal specification: docs and README stand alone."""
    found = []
    for f in _text_files(repo_root, "docs", "README.md", "gcsim", "designs", "scripts", "benchmarks", "notebooks"):
        for lineno, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"\bSPEC\b", line):
                found.append(f"{f.relative_to(repo_root)}:{lineno}: {line.strip()[:100]}")
    assert not found, "docs cite SPEC (point to a section of docs/theory.md instead):\n" + "\n".join(found)


def test_theory_section_references_exist(repo_root):
    """Every "theory §N.k" / "docs/theory.md §N.k" / "docs/theory/<chapter>.md §k" names a real heading."""
    sections = _theory_sections(repo_root)
    assert {"5", "5.1", "30.4", "30.A", "40.6", "45.2.1"} <= sections  # the headings parse
    bad = []
    for f in _text_files(repo_root, "gcsim", "designs", "docs", "README.md", "scripts", "benchmarks", "notebooks"):
        if f.name == "theory.md":
            continue  # the assembled document repeats its chapters (checked through them)
        text = f.read_text(encoding="utf-8")
        for pos, ref in theory_references(text):
            if ref not in sections:
                bad.append(f"{f.relative_to(repo_root)}:{text.count(chr(10), 0, pos) + 1}: §{ref}")
        for m in _CHAPTER_FILE.finditer(text):
            if not (repo_root / m.group(0)).is_file():
                bad.append(f"{f.relative_to(repo_root)}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0)}")
    assert not bad, "references to sections or chapters docs/theory.md does not have:\n" + "\n".join(bad)


def test_theory_chapters_cite_their_own_sections(repo_root):
    """Inside the chapters a bare "§N.k" with N a chapter number is a cross reference: it must exist.

    Citations of other works keep their own numbering inside brackets ("[BH §9.1]") or after an
    italic title ("*Spectra of Graphs*, Section 10.20").
    """
    sections = _theory_sections(repo_root)
    chapters = {s for s in sections if "." not in s}
    bad = []
    for f in sorted((repo_root / "docs" / "theory").glob("*.md")):
        text = re.sub(r"\[[^\]\n]*§[^\]\n]*\]", "", f.read_text(encoding="utf-8"))  # bracket citations
        for lineno, line in enumerate(text.splitlines(), 1):
            for m in re.finditer(_REF, line):
                ref = _ref_id(m.group(1), m.group(2))
                if ref.split(".")[0] in chapters and ref not in sections:
                    bad.append(f"{f.name}:{lineno}: §{ref}")
    assert not bad, "cross references to missing sections:\n" + "\n".join(bad)


def _resolves(dotted: str) -> bool:
    """``gcsim.a.b.c`` names a module, or an attribute of the longest importable module prefix."""
    import importlib

    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def test_module_names_in_docs_exist(repo_root):
    """Every ``gcsim.x.y`` the docs and the README name is a module or a public name that exists."""
    missing = []
    for f in _text_files(repo_root, "docs", "README.md"):
        if f.suffix != ".md" or f.name == "reliability.md":  # reliability.md quotes recorded messages
            continue
        for lineno, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
            for dotted in re.findall(r"\bgcsim(?:\.[A-Za-z_]\w*)+", line):
                if not _resolves(dotted):
                    missing.append(f"{f.relative_to(repo_root)}:{lineno}: {dotted}")
    assert not missing, "names in docs that gcsim does not have:\n" + "\n".join(sorted(set(missing)))

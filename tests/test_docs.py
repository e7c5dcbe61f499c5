"""Documentation stays consistent with the code and with its chapters."""
import subprocess
import sys


def test_theory_md_is_assembled_from_chapters(repo_root):
    proc = subprocess.run([sys.executable, str(repo_root / "scripts" / "build_theory.py"), "--check"],
                          capture_output=True, text=True, timeout=60)
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

"""docs/architecture.md names every module of the package, and names none that is not there; the
renderers take models, never the store (issue 28)."""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "tracekit"
DOC = (ROOT / "docs" / "architecture.md").read_text()


def modules() -> list[str]:
    return sorted(str(f.relative_to(PACKAGE)) for f in PACKAGE.rglob("*.py") if "build" not in f.parts)


def test_every_module_is_named_in_the_architecture():
    named = set(re.findall(r"`(?:tracekit/)?([\w/]+\.py)`", DOC))
    missing = [m for m in modules() if m not in named]
    assert not missing, f"docs/architecture.md does not name: {missing}"


def test_every_module_the_architecture_names_exists():
    cited = set(re.findall(r"`tracekit/([\w/{},.]+\.(?:py|c))`", DOC))
    for c in cited:  # `sources/{fr,nccl,kineto}.py` stands for three modules
        m = re.fullmatch(r"(.*)\{(.*)\}(.*)", c)
        for path in ([m[1] + x + m[3] for x in m[2].split(",")] if m else [c]):
            assert (PACKAGE / path).exists() or "myformat" in path, path


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            out |= {f"{node.module}.{a.name}" for a in node.names} | {node.module}
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
    return out


def test_no_renderer_takes_the_store():
    """A renderer reads a model of view.py (or diff.Comparison): it imports neither the store nor a
    module that reads one (verdict, evidence, sources, figures' counting)."""
    reads = {"tracekit.store", "tracekit.store.Store", "tracekit.verdict", "tracekit.evidence",
             "tracekit.sources", "tracekit.ingest", "tracekit.load"}
    for f in sorted((PACKAGE / "reports").glob("*.py")):
        assert not _imports(f) & reads, f"{f.name} imports {_imports(f) & reads}"
        assert "Store" not in re.findall(r"\b(\w+)\b", f.read_text()), f"{f.name} names the Store"

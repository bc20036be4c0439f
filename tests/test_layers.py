"""The package's layers: lower layers never import upper ones, and no module imports itself back.

Every ``import ibo_pymc...`` / ``from ibo_pymc... import`` statement of every
module is read with :mod:`ast` (those inside functions too, since a lazy import
is still a dependency), so the test needs nothing to run.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "ibo_pymc"

#: bottom to top; a module may import only modules of its own layer or below
LAYERS = [
    {"errors", "stop", "cache", "io", "execution"},
    {"data"},
    {"engine"},
    {"population"},
    {"tasks"},
    {"cli"},
]


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    out = set()
    me = _module_name(path).split(".")
    package = me if path.name == "__init__.py" else me[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("ibo_pymc")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if mod.startswith("ibo_pymc"):
                out.add(mod)
                # "from ibo_pymc.tasks.hotspot.data import fetch" imports the submodule fetch
                out |= {f"{mod}.{a.name}" for a in node.names}
    return out


def _graph() -> dict[str, set[str]]:
    files = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph = {}
    for name, path in files.items():
        graph[name] = {m for m in _imports(path) if m in files and m != name}
    return graph


def _layer(module: str) -> int:
    top = module.split(".")[1] if "." in module else ""
    for i, layer in enumerate(LAYERS):
        if top in layer:
            return i
    return -1


def test_every_module_is_in_a_layer():
    missing = sorted({m.split(".")[1] for m in _graph() if "." in m and _layer(m) < 0})
    assert not missing, f"modules outside every layer of tests/test_layers.py: {missing}"


def test_lower_layers_never_import_upper_ones():
    bad = []
    for mod, deps in _graph().items():
        if mod == "ibo_pymc":
            continue
        for d in deps:
            if d != "ibo_pymc" and _layer(d) > _layer(mod):
                bad.append(f"{mod} -> {d}")
    assert not bad, "imports upwards:\n" + "\n".join(sorted(bad))


def test_no_import_cycles_between_modules():
    graph = _graph()
    # a package's __init__ re-exports its own modules; edges into a package's own
    # __init__ from inside the package are not dependencies of the package on itself
    for mod in list(graph):
        graph[mod] = {d for d in graph[mod] if not (mod.startswith(d + ".") and d.count(".") >= 1)}
    graph.pop("ibo_pymc", None)
    for mod in graph:
        graph[mod].discard("ibo_pymc")
    state, stack, cycles = {}, [], []

    def visit(m):
        state[m] = 1
        stack.append(m)
        for d in sorted(graph.get(m, ())):
            if state.get(d) == 1:
                cycles.append(stack[stack.index(d) :] + [d])
            elif d not in state:
                visit(d)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


@pytest.mark.parametrize("module", ["ibo_pymc.cache"])
def test_bottom_modules_import_nothing_of_the_package(module):
    assert not _graph()[module]


def _task_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "tasks" and parts[2] != "base" else None


def test_nothing_outside_a_task_imports_it_but_the_registry():
    crossings = set()
    for mod, deps in _graph().items():
        for d in deps:
            task = _task_of(d)
            if task is None or _task_of(mod) == task or mod == "ibo_pymc.tasks":
                continue
            crossings.add((mod, task))
    assert not crossings, "imports of a task from outside it (go through ibo_pymc.tasks.get_task):\n" + "\n".join(
        f"{m} -> tasks.{t}" for m, t in sorted(crossings)
    )


def test_no_task_imports_another():
    for mod, deps in _graph().items():
        mine = _task_of(mod)
        others = {_task_of(d) for d in deps} - {None, mine}
        assert mine is None or not others, f"{mod} imports the tasks {sorted(others)}"


def test_the_nutpie_path_does_not_import_pytensor():
    """Fitting with nutpie (the default) runs the compiled callback, in either task: PyTensor (1.2 s to import) is
    loaded only for PyMC's own paths (``build()``, ``sampler="pymc"``, the grid task's ``build_model``)."""
    import subprocess
    import sys

    code = (
        "import sys; import ibo_pymc.tasks.hotspot.model.fit, ibo_pymc.tasks.hotspot.model.compiled, "
        "ibo_pymc.tasks.hotspot.model.sampling, ibo_pymc.tasks.gridsearch.model, ibo_pymc.tasks.gridsearch.density, "
        "ibo_pymc.cli.sample; "
        "print(sorted(m for m in ('pytensor', 'pymc') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", out

"""The house rules that the code base's shape must keep, read from the sources' ASTs (no GPU):
no import circle, no reach into another module's underscored names, the size limits, the
README's length, tests that use only the library's public attributes, and docs/design.md naming
every module of pyfftgl/ and only modules that exist."""
from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("pyfftgl", "demos")
MODULE_LINES, FUNCTION_LINES, README_LINES = 500, 80, 300


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _module_files(top: str) -> dict[str, Path]:
    """{dotted module name: its file} of every Python module under ROOT/top."""
    out = {}
    for path in sorted((ROOT / top).rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = {name: path for top in PACKAGES for name, path in _module_files(top).items()}


def _is_package(name: str) -> bool:
    return MODULES.get(name, Path()).name == "__init__.py"


def _is_module(name: str) -> bool:
    """A Python module or package of ours, or a compiled extension module (pyfftgl._kp)."""
    if name in MODULES:
        return True
    parent, _, leaf = name.rpartition(".")
    return _is_package(parent) and any(MODULES[parent].parent.glob(leaf + ".*.so"))


def _resolve(module: str, level: int, target: str | None) -> str:
    """The absolute name of `from <level dots><target> import ...` written in `module`."""
    if level == 0:
        return target or ""
    base = module.split(".") if _is_package(module) else module.split(".")[:-1]
    base = base[:len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def _imports(module: str, stmt) -> list[tuple[str, str | None]]:
    """(module imported from, name imported or None) of an import statement."""
    if isinstance(stmt, ast.Import):
        return [(a.name, None) for a in stmt.names]
    base = _resolve(module, stmt.level, stmt.module)
    return [(base, a.name) for a in stmt.names]


def _type_checking(node) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(test)


def _import_time_statements(body):
    """The import statements that run when a module is imported: module and class bodies and
    the branches of top-level if/try/with, not function bodies nor `if TYPE_CHECKING:`."""
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or _type_checking(node):
            continue
        else:
            for field in ("body", "orelse", "finalbody", "handlers"):
                yield from _import_time_statements(getattr(node, field, []) or [])


def _edges(module: str, tree) -> set[str]:
    """Our modules that `module` imports at import time (`from . import x`: the submodule x
    where there is one, else the package)."""
    out = set()
    for stmt in _import_time_statements(tree.body):
        for base, name in _imports(module, stmt):
            sub = f"{base}.{name}" if name else None
            for target in ((sub,) if sub and _is_module(sub) else (base,)):
                if target in MODULES and target != module:
                    out.add(target)
    return out


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _trees() -> dict[str, ast.Module]:
    return {name: ast.parse(path.read_text(), str(path)) for name, path in MODULES.items()}


def test_no_import_circle():
    graph = {name: _edges(name, tree) for name, tree in _trees().items()}
    cycles = _cycles(graph)
    assert not cycles, "import circles: " + "; ".join(" <-> ".join(c) for c in cycles)


def _module_bindings(module: str, tree) -> dict[str, str]:
    """{local name: our module it is bound to} from the imports anywhere in `tree`."""
    out = {}
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        for alias, (base, name) in zip(node.names, _imports(module, node)):
            if name is None:  # import a.b.c [as x]: x is a.b.c, else the name a is a
                target = base if alias.asname else base.split(".")[0]
                local = alias.asname or target
            else:
                target, local = f"{base}.{name}", alias.asname or name
            if _is_module(target) and target.split(".")[0] in PACKAGES:
                out[local] = target
    return out


def _attribute_module(node, bound: dict[str, str]) -> str | None:
    """The module of ours an expression names (a bound name, or a submodule of one), else None."""
    if isinstance(node, ast.Name):
        return bound.get(node.id)
    if isinstance(node, ast.Attribute):
        base = _attribute_module(node.value, bound)
        if base and _is_module(f"{base}.{node.attr}"):
            return f"{base}.{node.attr}"
    return None


def _private_reaches(module: str, tree) -> list[str]:
    """`from x import _y` and `x._y` of another module's underscored name; importing a private
    module of the package (`from . import numpy_fft`) is allowed: its public names are the point."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            for base, name in _imports(module, node):
                # another package's private module (wgpuinfo's wgpu-native extension) is a
                # pinned dependency's, not this house's boundary
                if _private(name) and not _is_module(f"{base}.{name}") and base != module \
                        and base.split(".")[0] in PACKAGES:
                    out.append(f"{module}:{node.lineno} from {base} import {name}")
    bound = _module_bindings(module, tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            owner = _attribute_module(node.value, bound)
            if owner and owner != module and not _is_module(f"{owner}.{node.attr}"):
                out.append(f"{module}:{node.lineno} {owner}.{node.attr}")
    return out


def test_no_reach_into_underscored_names():
    found = [r for name, tree in _trees().items() for r in _private_reaches(name, tree)]
    assert not found, "underscored names of other modules:\n" + "\n".join(found)


def test_module_and_function_sizes():
    long_modules = [f"{p.relative_to(ROOT)}: {n}" for p in sorted((ROOT / "pyfftgl").rglob("*.py"))
                    if (n := len(p.read_text().splitlines())) > MODULE_LINES]
    long_functions = []
    for top in ("pyfftgl", "tools", "demos"):
        for path in sorted((ROOT / top).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    n = node.end_lineno - node.lineno + 1
                    if n > FUNCTION_LINES:
                        long_functions.append(f"{path.relative_to(ROOT)}:{node.lineno} "
                                              f"{node.name} {n}")
    assert not long_modules + long_functions, (
        f"modules over {MODULE_LINES} lines, functions over {FUNCTION_LINES}:\n"
        + "\n".join(long_modules + long_functions))


def test_readme_length():
    n = len((ROOT / "README.md").read_text().splitlines())
    assert n <= README_LINES, f"README.md has {n} lines, over {README_LINES}"


def _library_names(tree) -> set[str]:
    """Names a test module binds to the library: its imports from pyfftgl, and variables
    assigned straight from an expression on one of those (`plan = pyfftgl.plan(...)`)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names
                      if a.name.split(".")[0] == "pyfftgl"}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "pyfftgl":
            names |= {a.asname or a.name for a in node.names}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and _root_name(node.value) in names:
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return names


def _root_name(node) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Call, ast.Subscript)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _private_reads(path: Path) -> list[str]:
    """A test's imports of underscored names from pyfftgl (private modules included: the
    library's private modules are private to it) and its reads of underscored attributes of
    the library's names (getattr, setattr and hasattr by name too)."""
    tree = ast.parse(path.read_text(), str(path))
    lib = _library_names(tree)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "pyfftgl":
            out += [f"{path.name}:{node.lineno} from {node.module} import {a.name}"
                    for a in node.names if _private(a.name)]  # a private module too
        elif (isinstance(node, ast.Attribute) and _private(node.attr)
              and _root_name(node.value) in lib):
            out.append(f"{path.name}:{node.lineno} {ast.unparse(node)}")
        elif (isinstance(node, ast.Call) and len(node.args) >= 2
              and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)
              and _private(node.args[1].value) and _root_name(node.args[0]) in lib
              and ast.unparse(node.func).split(".")[-1] in ("getattr", "setattr", "hasattr")):
            out.append(f"{path.name}:{node.lineno} {ast.unparse(node)[:60]}")
    return out


def test_tests_read_no_private_attribute():
    found = [r for path in sorted((ROOT / "tests").glob("*.py")) for r in _private_reads(path)]
    assert not found, "private attributes of the library read by tests:\n" + "\n".join(found)


DESIGN_PATH = re.compile(r"(?<![\w/.-])((?:[\w-]+/)*[\w-]+\.py)\b")


def _named_paths(text: str) -> set[str]:
    return set(DESIGN_PATH.findall(text))


def _exists(named: str) -> bool:
    """A file named as a path from the repository's root, from pyfftgl/, or by its name alone
    (or its tail) anywhere in the repository's source folders."""
    if (ROOT / named).exists() or (ROOT / "pyfftgl" / named).exists():
        return True
    tops = ("pyfftgl", "tools", "tests", "demos", "bench")
    return any(str(p).endswith("/" + named) for top in tops for p in (ROOT / top).rglob("*.py"))


def _is_named(path: Path, text: str, paths: set[str]) -> bool:
    """Whether docs/design.md names pyfftgl's module `path`: as a path (from the root, from
    pyfftgl/ or its file name alone), dotted (`planner.rules`), or backquoted (`rules`); a package
    by its folder (`planner/`)."""
    rel = path.relative_to(ROOT / "pyfftgl")
    if rel.name == "__init__.py":
        folder = rel.parent.as_posix()
        return folder == "." or f"{folder}/" in text or f"`{folder}`" in text
    stem, dotted = rel.with_suffix("").name, ".".join(rel.with_suffix("").parts)
    return (bool({rel.as_posix(), f"pyfftgl/{rel.as_posix()}", rel.name} & paths)
            or f"`{stem}`" in text or re.search(rf"\b{re.escape(dotted)}\b", text) is not None)


def test_design_names_every_module():
    text = (ROOT / "docs" / "design.md").read_text()
    paths = _named_paths(text)
    missing = sorted(p for p in paths if not _exists(p))
    unnamed = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "pyfftgl").rglob("*.py")
                     if not _is_named(p, text, paths))
    assert not missing + unnamed, (f"named in docs/design.md but missing: {missing}; "
                                   f"modules docs/design.md does not name: {unnamed}")

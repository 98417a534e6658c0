"""One HTTP stack: every request goes through urllib3 (the official client's pool for the API
server, requests' for instance metadata), and no module of ours speaks HTTP itself or
reaches into the private parts of http.client, urllib3 or requests, which an upgrade of
either may change without notice. Read from the source (AST), so a new module is held to
the same rules without being listed."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from collections.abc import Iterator
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "labeler"
LIBRARIES = ("http.client", "urllib3", "requests")
# The modules that send requests: to the API server (kube), to instance metadata
# (sources), and the deadline and capped read they share.
CLIENT_SIDE = ("kube", "sources", "base/httpclient.py")
# Modules that would let a client frame HTTP or drive sockets itself.
LOW_LEVEL = ("http.client", "select", "selectors", "ssl", "socket")
# Bytes and calls that only a hand-written HTTP client needs.
FRAMING_TEXT = ("HTTP/1.", "\r\n", "Transfer-Encoding", "chunk-size")
SOCKET_CALLS = ("recv", "recv_into", "sendall", "makefile", "connect", "setsockopt")


def modules() -> Iterator[tuple[Path, ast.Module]]:
    for path in sorted(ROOT.rglob("*.py")):
        yield path, ast.parse(path.read_text(), str(path))


def client_side(path: Path) -> bool:
    rel = path.relative_to(ROOT).as_posix()
    return any(rel == part or rel.startswith(part + "/") for part in CLIENT_SIDE)


@cache
def library_privates() -> frozenset[str]:
    """Every private name (``_x``, not a dunder) the libraries define: their modules'
    names, their classes' attributes and methods, and the attributes their code assigns
    (``self._fp = ...``), read from their source."""
    names: set[str] = set()
    modules = [importlib.import_module(name) for name in LIBRARIES]
    for package in list(modules):
        if hasattr(package, "__path__"):
            for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
                try:
                    modules.append(importlib.import_module(info.name))
                except ImportError:  # an optional extra (brotli, socks, h2…)
                    continue
    for module in modules:
        for name, value in vars(module).items():
            names.add(name)
            if inspect.isclass(value):
                names.update(dir(value))
        source = inspect.getsourcefile(module)
        if source:
            names.update(defined_names([ast.parse(Path(source).read_text())]))
    return frozenset(n for n in names if n.startswith("_") and not n.startswith("__"))


def defined_names(trees: list[ast.Module]) -> set[str]:
    """The names code defines: functions, classes, what it assigns, its arguments."""
    found: set[str] = set()
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                found.add(node.name)
            elif isinstance(node, ast.arg):
                found.add(node.arg)
            elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    for part in ast.walk(target):
                        if isinstance(part, ast.Attribute):
                            found.add(part.attr)
                        elif isinstance(part, ast.Name):
                            found.add(part.id)
    return found


def our_privates(trees: list[ast.Module]) -> set[str]:
    """The private names labeler/ defines itself, and those it names in strings
    (``__slots__`` entries, ``getattr(x, "_name")`` of its own)."""
    ours = defined_names(trees)
    for tree in trees:
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and node.value.isidentifier()
            ):
                ours.add(node.value)
    return {n for n in ours if n.startswith("_")}


def foreign_base(node: ast.ClassDef, classes: set[str]) -> bool:
    """Does the class derive from something that is not a class of ours (a library's, or a
    class handed in as an argument)?"""
    for base in node.bases:
        name = base.id if isinstance(base, ast.Name) else ast.unparse(base)
        if name not in classes and name not in PLAIN_BASES:
            return True
    return False


PLAIN_BASES = {"object", "Exception", "ValueError", "RuntimeError", "TypeError", "KeyError"}


def is_library(module: str) -> bool:
    return any(module == lib or module.startswith(lib + ".") for lib in LIBRARIES)


def test_nothing_touches_a_private_name_of_http_client_urllib3_or_requests() -> None:
    trees = list(modules())
    ours = our_privates([tree for _, tree in trees])
    classes = {
        node.name for _, tree in trees for node in ast.walk(tree) if isinstance(node, ast.ClassDef)
    }
    theirs = library_privates()
    found: list[str] = []
    for path, tree in trees:
        where = path.relative_to(ROOT.parent)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and is_library(node.module or ""):
                private = [a.name for a in node.names if a.name.startswith("_")]
                parts = (node.module or "").split(".")
                if private or any(p.startswith("_") for p in parts):
                    found.append(f"{where}:{node.lineno}: imports a private name {private}")
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    parts = alias.name.split(".")
                    if is_library(alias.name) and any(p.startswith("_") for p in parts):
                        found.append(f"{where}:{node.lineno}: imports {alias.name}")
            elif isinstance(node, ast.Attribute) and node.attr in theirs:
                if node.attr not in ours:
                    found.append(f"{where}:{node.lineno}: uses .{node.attr}")
            elif isinstance(node, ast.ClassDef) and foreign_base(node, classes):
                # A method of a class derived from another's that takes the name of a
                # library's private one overrides it (as a subclass of http.client's
                # response once did with its status line and chunk readers).
                for item in node.body:
                    if isinstance(item, ast.FunctionDef) and item.name in theirs:
                        found.append(f"{where}:{item.lineno}: overrides {item.name}")
    assert not found, "\n".join(found)


def test_no_client_module_speaks_http_or_drives_sockets_itself() -> None:
    found: list[str] = []
    for path, tree in modules():
        if not client_side(path):
            continue
        where = path.relative_to(ROOT.parent)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                names = (
                    [a.name for a in node.names]
                    if isinstance(node, ast.Import)
                    else [node.module or ""]
                )
                for name in names:
                    if name in LOW_LEVEL and not (name == "socket" and socket_only_shut(path)):
                        found.append(f"{where}:{node.lineno}: imports {name}")
            elif isinstance(node, ast.Constant) and isinstance(node.value, str | bytes):
                text = node.value if isinstance(node.value, str) else node.value.decode("latin-1")
                for fragment in FRAMING_TEXT:
                    if fragment in text and not is_docstring(tree, node):
                        found.append(f"{where}:{node.lineno}: {fragment!r} in a literal")
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in SOCKET_CALLS
                and not is_module_call(node.func)
            ):
                found.append(f"{where}:{node.lineno}: calls .{node.func.attr}()")
    assert not found, "\n".join(found)


def socket_only_shut(path: Path) -> bool:
    """The socket module used only to shut a socket down (the deadline's watchdog) and to
    recognise one: nothing that opens, reads or writes one."""
    tree = ast.parse(path.read_text())
    used = {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "socket"
    }
    shut = {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Attribute)
        and isinstance(node.value.value, ast.Name)
        and node.value.value.id == "socket"
    }
    return used <= {"socket", "SHUT_RDWR"} and shut <= {"shutdown"}


def is_module_call(func: ast.Attribute) -> bool:
    """``urllib3.connection_from_url``-like calls on a module name are not socket calls;
    only a call on an object (``sock.recv``) is."""
    return isinstance(func.value, ast.Name) and func.value.id in ("urllib3", "requests")


@cache
def _docstrings(tree: ast.Module) -> frozenset[int]:
    ids: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return frozenset(ids)


def is_docstring(tree: ast.Module, node: ast.Constant) -> bool:
    return id(node) in _docstrings(tree)


def test_the_rules_catch_what_they_are_about() -> None:
    """The scan finds the kinds of code it forbids (else it could pass on anything)."""
    theirs = library_privates()
    assert {"_new_conn", "_read_status", "_get_chunk_left", "_fp"} <= theirs
    bad = ast.parse(
        "import socket\n"
        "class R(HTTPResponse):\n"
        "    def _read_status(self): ...\n"
        "conn = pool._new_conn()\n"
        "sock.sendall(b'GET / HTTP/1.1\\r\\n')\n"
    )
    attrs = {n.attr for n in ast.walk(bad) if isinstance(n, ast.Attribute)}
    assert "_new_conn" in attrs & theirs
    overrides = [
        item.name
        for node in ast.walk(bad)
        if isinstance(node, ast.ClassDef)
        for item in node.body
        if isinstance(item, ast.FunctionDef) and item.name in theirs
    ]
    assert overrides == ["_read_status"]
    texts = [n.value for n in ast.walk(bad) if isinstance(n, ast.Constant)]
    assert any(isinstance(t, bytes) and b"HTTP/1." in t for t in texts)
    calls = [n.func.attr for n in ast.walk(bad) if isinstance(n, ast.Call)]
    assert "sendall" in calls

"""The parts of the official ``kubernetes`` client we use, imported without the rest.

We use the client for what is hard to get right: kubeconfig loading and merging, contexts,
in-cluster ServiceAccount config, exec/OIDC credential plugins, TLS and proxies (its
``Configuration``, config loaders and the urllib3 pool its REST client builds). We do not
use its generated API classes and models: we send a handful of requests and read plain
JSON. But ``kubernetes/__init__.py`` and ``kubernetes/client/__init__.py`` import every
API class and every model (seconds of CPU and ~20 MB) before anything else can be
imported from the package.

So the package modules are put in ``sys.modules`` as bare namespaces while the few modules
we need are imported, then taken out again: a later ``import kubernetes`` (a test, a
plug-in) runs the real package ``__init__`` files, which find the modules imported here
already loaded and reuse them, so there is still one ``Configuration`` class. The OAuth2
libraries the kubeconfig loader imports for OIDC token refresh are stood in for the same
way, and loaded for real only when a refresh happens. The client
version is pinned to one major in pyproject.toml; tests/cli/test_startup.py checks that
the generated classes stay out of the process.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
import types
from pathlib import Path
from typing import Any

from labeler.base import logs

_lock = threading.Lock()
_loaded: dict[str, types.ModuleType] = {}

# Package → its stand-in while loading; each __init__ would import far more than we need.
_PACKAGES = ("kubernetes", "kubernetes.client", "kubernetes.utils", "kubernetes.config")


def _load(name: str) -> types.ModuleType:
    logs.configure()  # the client and urllib3 log on their own: in our format, filtered
    with _lock:
        if name in _loaded:
            return _loaded[name]
        # Once the real package is loaded there is nothing left to avoid.
        real = "kubernetes" in sys.modules
        module = importlib.import_module(name) if real else _load_bare(name)
        _loaded[name] = module
        return module


def _load_bare(name: str) -> types.ModuleType:
    spec = importlib.util.find_spec("kubernetes")  # finds, does not import
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("the kubernetes client package is not installed")
    root = Path(next(iter(spec.submodule_search_locations)))
    stand_ins = {}
    for package in _PACKAGES:
        if package in sys.modules:
            continue
        module = types.ModuleType(package)
        module.__path__ = [str(root.joinpath(*package.split(".")[1:]))]
        module.__package__ = package
        sys.modules[package] = stand_ins[package] = module
    if name == "kubernetes.config.kube_config":
        for module_name, module in _oauth_stand_ins().items():
            sys.modules[module_name] = stand_ins[module_name] = module
    try:
        configuration = importlib.import_module("kubernetes.client.configuration")
        client = sys.modules["kubernetes.client"]
        # kube_config.py does "from kubernetes.client import ApiClient, Configuration";
        # it builds an ApiClient only to fetch an OIDC issuer's discovery document.
        client.Configuration = configuration.Configuration  # type: ignore[attr-defined]
        client.ApiClient = _full_api_client  # type: ignore[attr-defined]
        return importlib.import_module(name)
    finally:
        for package in stand_ins:
            del sys.modules[package]


def _oauth_stand_ins() -> dict[str, types.ModuleType]:
    """kube_config.py imports requests_oauthlib (and with it requests) and oauthlib at its
    top, ~90 ms of every command that reads a kubeconfig, for one use: refreshing an
    expired OIDC id-token. While it loads, these stand in for them; the real modules are
    imported when that refresh happens."""
    if "oauthlib" in sys.modules or "requests_oauthlib" in sys.modules:
        return {}  # already loaded: nothing to save
    session = types.ModuleType("requests_oauthlib")
    setattr(session, "OAuth2Session", _oauth2_session)  # noqa: B010 (a module built here)
    oauth2 = types.ModuleType("oauthlib.oauth2")
    # Read only when a refresh fails (``except oauthlib.oauth2.rfc6749.errors...``).
    setattr(oauth2, "__getattr__", _real_oauth2)  # noqa: B010
    oauthlib = types.ModuleType("oauthlib")
    setattr(oauthlib, "oauth2", oauth2)  # noqa: B010
    return {"requests_oauthlib": session, "oauthlib": oauthlib, "oauthlib.oauth2": oauth2}


def _oauth2_session(*args: Any, **kwargs: Any) -> Any:
    from requests_oauthlib import OAuth2Session  # type: ignore[import-untyped]  # the real one

    return OAuth2Session(*args, **kwargs)


def _real_oauth2(attr: str) -> Any:
    return getattr(importlib.import_module("oauthlib.oauth2"), attr)


def _full_api_client(*args: Any, **kwargs: Any) -> Any:
    from kubernetes.client.api_client import ApiClient  # the real package, in full

    return ApiClient(*args, **kwargs)


def configuration() -> Any:
    """``kubernetes.client.configuration`` (the ``Configuration`` class)."""
    return _load("kubernetes.client.configuration")


def rest() -> Any:
    """``kubernetes.client.rest`` (``RESTClientObject``: the urllib3 pool from a config)."""
    return _load("kubernetes.client.rest")


def kube_config() -> Any:
    """``kubernetes.config.kube_config`` (kubeconfig files, contexts, credential plugins)."""
    return _load("kubernetes.config.kube_config")


def incluster_config() -> Any:
    """``kubernetes.config.incluster_config`` (the pod's ServiceAccount)."""
    return _load("kubernetes.config.incluster_config")


def config_exception() -> type[Exception]:
    """``ConfigException``, raised by both config loaders."""
    module = _load("kubernetes.config.config_exception")
    return module.ConfigException  # type: ignore[no-any-return]

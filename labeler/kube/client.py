"""Cluster access as kubectl does it: --kubeconfig, $KUBECONFIG, --context, in-cluster."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubernetes import client, config
from kubernetes.config.config_exception import ConfigException

from labeler.errors import UsageError


@dataclass(frozen=True)
class ClusterOptions:
    kubeconfig: str | None = None
    context: str | None = None
    # Enough pooled connections for the bulk writer's worker threads.
    pool_size: int = 32
    # (connect, read) seconds for every call that does not set its own (watches do).
    request_timeout: tuple[float, float] = (10.0, 60.0)


class TimedApiClient(client.ApiClient):
    """An ApiClient whose calls time out. The official client waits forever by default, so
    an API server that accepts a connection and never answers would hang ``apply`` for
    good; with a timeout the call fails as retryable and is retried like a 5xx."""

    def __init__(self, cfg: client.Configuration, request_timeout: tuple[float, float]) -> None:
        super().__init__(cfg)
        self.request_timeout = request_timeout

    def call_api(
        self,
        method: Any,
        url: Any,
        header_params: Any = None,
        body: Any = None,
        post_params: Any = None,
        _request_timeout: Any = None,
    ) -> Any:
        return super().call_api(
            method, url, header_params, body, post_params, _request_timeout or self.request_timeout
        )


def api_client(opts: ClusterOptions) -> client.ApiClient:
    """Build an ApiClient, in kubectl's order of precedence."""
    cfg = client.Configuration()
    path = opts.kubeconfig or os.environ.get("KUBECONFIG")
    default = Path.home() / ".kube" / "config"
    if path and not any(Path(p).is_file() for p in path.split(os.pathsep) if p):
        flag = "--kubeconfig" if opts.kubeconfig else "$KUBECONFIG"
        raise UsageError(f"{flag} {path}: no such file; give the path of a kubeconfig file")
    source = path or str(default)
    try:
        if path or default.is_file() or opts.context:
            # $KUBECONFIG may list several files; the client merges them like kubectl.
            config.load_kube_config(
                config_file=path or str(default),
                context=opts.context,
                client_configuration=cfg,
                persist_config=False,
            )
        elif os.environ.get("KUBERNETES_SERVICE_HOST"):
            config.load_incluster_config(client_configuration=cfg)
        else:
            raise UsageError(
                "no cluster configured: pass --kubeconfig, set KUBECONFIG, create "
                "~/.kube/config, or run inside a pod"
            )
    except (ConfigException, OSError) as e:
        if not (path or default.is_file() or opts.context):
            source = "in-cluster ServiceAccount"
        raise UsageError(f"cannot load cluster configuration ({source}): {e}") from e
    cfg.connection_pool_maxsize = opts.pool_size
    return TimedApiClient(cfg, opts.request_timeout)

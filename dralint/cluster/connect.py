"""Which API server to talk to and as whom, found the way kubectl finds it.

kubectl's loading rules (client-go's ``clientcmd``): ``--kubeconfig FILE`` alone if given; else the
files of ``KUBECONFIG`` (separated by ``:``, ``;`` on Windows), merged, the first to set a value
winning; else ``~/.kube/config``; and when none of them exists, inside a Pod
(``KUBERNETES_SERVICE_HOST`` set), the Pod's service account. ``--context NAME`` picks a context of
the kubeconfig instead of its ``current-context``. Every failure is one :class:`ConnectError` line.
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from .api import Api, load_endpoint

INSTALL_HINT = "pip install 'dralint[cluster]'"


class ConnectError(Exception):
    """No API server to talk to: the client missing, no kubeconfig, an unknown context (one line)."""


def connect(kubeconfig: str | None = None, context: str | None = None, *, environ: Mapping[str, str] | None = None,
            user_agent: str = "dralint") -> Api:
    """A client of the API server that ``kubeconfig`` and ``context`` name, as kubectl would find it.

    ``environ`` stands for ``os.environ`` (tests). No request is sent yet. Raises :class:`ConnectError`.
    """
    env = os.environ if environ is None else environ
    try:
        import kubernetes   # noqa: F401  (both come with the extra; neither is needed before this)
        import urllib3      # noqa: F401
    except ImportError:
        raise ConnectError(f"talking to a cluster needs the Kubernetes client: {INSTALL_HINT}") from None
    source = _kubeconfig(kubeconfig, context, env)
    if source is not None:
        _check_context(source, context)
    try:
        return Api(load_endpoint(source, context), user_agent=user_agent)
    except ValueError as exc:
        raise ConnectError(str(exc)) from None


def _kubeconfig(given: str | None, context: str | None, env: Mapping[str, str]) -> str | None:
    """The kubeconfig file(s) to read, joined by the path separator; None: the Pod's service account."""
    if given is not None:
        if not Path(given).expanduser().is_file():
            raise ConnectError(f"--kubeconfig {given}: no such file")
        return given
    listed = [p for p in env.get("KUBECONFIG", "").split(os.pathsep) if p]
    if listed:
        if not any(Path(p).expanduser().is_file() for p in listed):
            raise ConnectError(f"KUBECONFIG={env['KUBECONFIG']}: none of its files exists")
        return os.pathsep.join(listed)
    home = Path(env.get("HOME") or Path.home()) / ".kube" / "config"
    if home.is_file():
        return str(home)
    if env.get("KUBERNETES_SERVICE_HOST") and env.get("KUBERNETES_SERVICE_PORT") and context is None:
        return None
    raise ConnectError("no kubeconfig: give --kubeconfig FILE, set KUBECONFIG, or write ~/.kube/config "
                       "(inside a Pod, its service account is used)")


def _check_context(source: str, context: str | None) -> None:
    """An unknown ``--context``, or none to use, said plainly (the client's own words name its internals)."""
    from kubernetes import config

    try:
        contexts, current = config.list_kube_config_contexts(config_file=source)
    except (config.ConfigException, OSError, ValueError, TypeError, KeyError) as exc:
        raise ConnectError(f"kubeconfig {source}: {exc}") from None
    names = [c.get("name") for c in contexts or [] if isinstance(c, dict)]
    if context is not None and context not in names:
        known = ", ".join(str(n) for n in names) or "none"
        raise ConnectError(f"context {context!r} does not exist in kubeconfig {source} (its contexts: {known})")
    if context is None and not current:
        raise ConnectError(f"kubeconfig {source} has no current-context: give --context NAME")

"""``dralint-webhook vap --config POLICY [--kube-version 1.N]``: the YAML on standard output, or a
clear error on standard error and exit status 2."""
from __future__ import annotations

import sys

from dralint.kube.releases import DEFAULT_MINOR, ReleaseError, parse_version

from ..policy import PolicyError, load_policy
from . import VapError, VapLimitError, render

EXIT_USAGE = 2


def run(config: str, kube_version: str | None) -> int:
    """Write the policies and bindings for the policy file ``config``; the exit status."""
    try:
        policy = load_policy(config)
    except PolicyError as exc:
        return _fail(str(exc))
    if kube_version is not None:
        try:
            minor = parse_version(kube_version)
        except ReleaseError as exc:
            return _fail(exc.named("--kube-version"))
    else:
        minor = policy.pinned_minor if policy.pinned_minor is not None else DEFAULT_MINOR
    try:
        text = render(policy, minor, config)
    except (VapError, VapLimitError) as exc:
        return _fail(f"{config}: {exc}")
    sys.stdout.write(text)
    return 0


def _fail(message: str) -> int:
    sys.stderr.write(f"dralint-webhook vap: error: {message}\n")
    return EXIT_USAGE

#!/usr/bin/env python3
"""Generate docs/rules.md from the rule catalog (rules/*.yaml). ``--check`` fails when it is stale."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from dralint.catalog import load_catalog  # noqa: E402
from generated import write_or_check  # noqa: E402  (scripts/ is the script's own folder on sys.path)

GROUPS = [("0", "Input"), ("1", "Schema and object metadata"), ("2", "Claims, templates and pods"),
          ("3", "Device classes"), ("4", "Resource slices and device taint rules"), ("5", "CEL selectors"),
          ("6", "References"), ("7", "Feasibility"), ("8", "Versions and feature gates"), ("9", "Best practice")]


def render() -> str:
    catalog = load_catalog(REPO / "rules")
    out = ["# dralint rules", "",
           "Generated from `rules/` by `scripts/gen_rule_docs.py`; do not edit by hand.", "",
           "| id | name | category | severity | summary |", "| --- | --- | --- | --- | --- |"]
    rules = list(catalog)
    out += [f"| [{r.id}](#{r.id.lower()}) | {r.name} | {r.category.value} | {r.severity.value} | {r.summary} |"
            for r in rules]
    for digit, title in GROUPS:
        group = [r for r in rules if r.id[3] == digit]
        if not group:
            continue
        out += ["", f"## {title}"]
        for r in group:
            # The heading is the id alone, so its anchor is #draNNN: the links of dralint/project.py.
            out += ["", f"### {r.id}", "", f"`{r.name}` · *{r.category.value}, {r.severity.value} by default.* {r.summary}",
                    "", r.rationale, "", f"**Fix.** {r.fix}"]
            if r.autofix is not None:
                how = "`dralint --fix` applies it" if r.autofix.value == "safe" else \
                    "shown by `dralint --fix --diff`, applied with `--unsafe-fixes`"
                out += ["", f"**Autofix ({r.autofix.value}).** Some findings carry a fix: {how} (docs/migrate.md)."]
            if r.api_server:
                out += ["", f"**API server.** `{r.api_server}`"]
            if r.cluster_state:
                out += ["", "**Cluster state.** Judged against the other objects of the run (`--cluster`, the "
                        "webhook's cluster state); in the webhook it follows the policy's `feasibility`."]
            if r.kubernetes:
                concerns = ", ".join(f"{k}: {v}" for k, v in r.kubernetes.items())
                out += ["", f"**Kubernetes.** {concerns}"]
            for ex in r.examples:
                extra = []
                if ex.kube_version:
                    extra.append(f"--kube-version {ex.kube_version}")
                if ex.feature_gates:
                    extra.append("--feature-gates " + ",".join(f"{k}={str(v).lower()}" for k, v in ex.feature_gates.items()))
                flags = f" (`{' '.join(extra)}`)" if extra else ""
                out += ["", f"{'Fails' if ex.verdict == 'bad' else 'Passes'}: {ex.title}{flags}", "", "```yaml",
                        ex.manifest.rstrip("\n"), "```"]
                if ex.fixed is not None:
                    out += ["", "After `dralint --fix`:", "", "```yaml", ex.fixed.rstrip("\n"), "```"]
    return "\n".join(out) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="exit 1 when docs/rules.md is not up to date")
    args = parser.parse_args()
    target = REPO / "docs" / "rules.md"
    text = render()
    return write_or_check(target, text, args.check, "gen_rule_docs.py")


if __name__ == "__main__":
    sys.exit(main())

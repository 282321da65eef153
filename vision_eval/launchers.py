"""Hydra launchers: a ``hydra/launcher=<name>`` whose plugin or library is not installed names the extra to
install (Hydra alone would say "Could not load 'hydra/launcher/submitit_slurm'", or fail once the sweep starts)."""

from __future__ import annotations

import importlib.util

PLUGINS = {
    "slurm": (("hydra_plugins.hydra_submitit_launcher", "submitit"), "slurm"),
    "submitit_slurm": (("hydra_plugins.hydra_submitit_launcher", "submitit"), "slurm"),
    "submitit_local": (("hydra_plugins.hydra_submitit_launcher", "submitit"), "slurm"),
    "local_submitit": (("hydra_plugins.hydra_submitit_launcher", "submitit"), "slurm"),
    "ray": (("ray",), "ray"),
}
"""Launcher option -> (the modules it needs, the vision-eval extra that installs them). ``local_parallel`` and
``joblib`` need nothing more than vision-eval."""


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def missing_launcher(argv: list[str]) -> str | None:
    """The problem with a ``hydra/launcher=<name>`` argument whose plugin is not installed (``None`` if fine)."""
    for arg in argv:
        key, sep, value = arg.lstrip("+").partition("=")
        if not sep or key != "hydra/launcher":
            continue
        plugin = PLUGINS.get(value.strip())
        if plugin is None:
            continue
        modules, extra = plugin
        missing = [module for module in modules if not _installed(module)]
        if not missing:
            continue
        name = missing[0].split(".")[-1]
        return f'hydra/launcher={value} needs {name}, which is not installed: pip install "vision-eval[{extra}]"'
    return None

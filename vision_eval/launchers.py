"""Hydra launcher plugins: a ``hydra/launcher=<name>`` whose plugin is not installed names the extra to install
(Hydra alone would say "Could not load 'hydra/launcher/submitit_slurm'")."""

from __future__ import annotations

import importlib.util

PLUGINS = {
    "slurm": ("hydra_plugins.hydra_submitit_launcher", "slurm"),
    "submitit_slurm": ("hydra_plugins.hydra_submitit_launcher", "slurm"),
    "submitit_local": ("hydra_plugins.hydra_submitit_launcher", "slurm"),
    "local_submitit": ("hydra_plugins.hydra_submitit_launcher", "slurm"),
    "local_parallel": ("hydra_plugins.hydra_joblib_launcher", None),
    "joblib": ("hydra_plugins.hydra_joblib_launcher", None),
}
"""Launcher option -> (plugin module, the vision-eval extra that installs it; ``None``: a core dependency)."""


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
        if plugin is None or _installed(plugin[0]):
            continue
        module, extra = plugin
        install = f'pip install "vision-eval[{extra}]"' if extra else "reinstall vision-eval"
        plugin_name = module.split(".")[-1]
        return f"hydra/launcher={value} needs the Hydra plugin {plugin_name}, which is not installed: {install}"
    return None

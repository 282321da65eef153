"""``vision-eval``: the Hydra entry point.

vision-eval                                   # the demo, offline
vision-eval dataset=X evaluators=Y judge=Z    # compose
vision-eval -m judge=a,b                      # sweep
vision-eval --cfg job                         # show the composed config
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from vision_eval._resources import conf_dir, resource
from vision_eval.config import ConfigSources, redact, redact_override
from vision_eval.errors import VisionEvalError

EXIT_CONFIG = 2
EXIT_INTERRUPTED = 130


def _register_resolvers() -> None:
    if not OmegaConf.has_resolver("vision_eval.resource"):
        OmegaConf.register_new_resolver("vision_eval.resource", lambda rel: str(resource(rel)))


def _sources() -> ConfigSources:
    """Which file each top-level section came from, from Hydra's runtime info."""
    from hydra.core.hydra_config import HydraConfig

    hydra_cfg = HydraConfig.get()
    roots = []
    for source in hydra_cfg.runtime.config_sources:
        path = str(source.path)
        if source.schema == "file":
            roots.append(Path(path))
        elif source.schema == "pkg":
            continue
    files: dict[str, str] = {}
    for group, choice in hydra_cfg.runtime.choices.items():
        if group.startswith("hydra") or choice is None:
            continue
        for root in roots:
            candidate = root / group / f"{choice}.yaml"
            if candidate.is_file():
                files[group] = str(candidate)
                break
    for root in roots:
        if (root / f"{hydra_cfg.job.config_name}.yaml").is_file():
            files.setdefault("run", str(root / f"{hydra_cfg.job.config_name}.yaml"))
            break
    return ConfigSources(files=files, overrides=list(hydra_cfg.overrides.task))


def _redact_multirun_file() -> None:
    """Hydra saves the whole sweep config (overrides included) as multirun.yaml: hide secrets in it."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    hydra_cfg = HydraConfig.get()
    path = Path(hydra_cfg.sweep.dir) / "multirun.yaml"
    if hydra_cfg.mode != RunMode.MULTIRUN or not path.is_file():
        return
    saved = OmegaConf.to_container(OmegaConf.load(path), resolve=False)
    text = redact_override(OmegaConf.to_yaml(OmegaConf.create(redact(saved))))
    staging = path.with_name(f".multirun.{os.getpid()}.yaml")
    staging.write_text(text, encoding="utf-8")
    os.replace(staging, path)


def _fail(message: str) -> None:
    print(f"vision-eval: config error: {message}", file=sys.stderr)
    print("nothing was evaluated.", file=sys.stderr)
    sys.exit(EXIT_CONFIG)


def _task(cfg: DictConfig) -> Any:
    from vision_eval.api import run_config
    from vision_eval.config import validate_config
    from vision_eval.summary import print_summary

    _redact_multirun_file()
    sources = _sources()
    try:
        raw = OmegaConf.to_container(cfg, resolve=True)
    except OmegaConfBaseException as exc:
        _fail(str(exc).splitlines()[0])
    try:
        config = validate_config(raw, sources)  # type: ignore[arg-type]
        result = run_config(config, sources=sources)
    except VisionEvalError as exc:
        _fail(str(exc))
    except KeyboardInterrupt:  # run_config has said how to resume; finished batches are on disk
        sys.exit(EXIT_INTERRUPTED)
    output_dir = config.run.resume or config.run.output_dir
    if output_dir:
        (Path(output_dir) / "config.yaml").write_text(
            OmegaConf.to_yaml(OmegaConf.create(redact(config.model_dump(mode="json")))), encoding="utf-8"
        )
    print_summary(result.summary, result.metrics)
    if output_dir:
        print(f"results: {output_dir}")
    return result.summary["mean_score"].mean()


def forgiving_overrides(argv: list[str]) -> list[str]:
    """``section.key=value`` overrides become ``++section.key=value`` (set, adding the key if the file does
    not list it), so any setting can be overridden without a ``+``; a misspelt key is then reported by
    validation, naming the key and the override. Group choices, ``hydra.*`` and flags are left alone."""
    out = []
    for arg in argv:
        key, sep, _ = arg.partition("=")
        plain = sep and not arg.startswith(("-", "+", "~")) and "/" not in key and "." in key
        out.append(f"++{arg}" if plain and not key.startswith("hydra.") else arg)
    return out


def main() -> None:
    """Console-script entry point."""
    import hydra

    sys.argv[1:] = forgiving_overrides(sys.argv[1:])
    _register_resolvers()
    hydra.main(config_path=str(conf_dir()), config_name="config", version_base="1.3")(_task)()


if __name__ == "__main__":
    main()

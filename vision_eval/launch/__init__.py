"""Running past one process: who holds a run directory (and whether that holder is provably gone), how a sweep's
jobs run so that one dead job never takes the others down, and what a sweep says when it ends (which jobs failed,
the command that finishes each, its exit code). The Hydra launcher classes themselves live in
``hydra_plugins/vision_eval_launchers`` (Hydra only instantiates launchers from that package); they are thin.
"""

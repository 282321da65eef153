"""vision-eval's Hydra launchers (Hydra instantiates launchers only from the ``hydra_plugins`` package); the work
is done in :mod:`vision_eval.launch`."""

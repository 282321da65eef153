"""Built-in evaluator families, one module each. Every module here is imported by the registry
on first lookup and registers its classes with ``@register``; keep heavy imports inside functions."""

"""Plain text assertions: ``exact_match``, ``contains``, ``regex``."""

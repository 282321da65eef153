"""Test helpers shipped with the package (fake provider servers) so tests, benchmarks and users can reuse them."""

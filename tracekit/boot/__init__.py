"""The sitecustomize that `tracekit run` puts first on every rank's PYTHONPATH (not imported as a package)."""

"""The library's own exceptions (the CLI turns them into one-line messages and exit code 2)."""


class StoreError(Exception):
    """A store folder that is missing, partial or unreadable, or one that cannot be written."""

"""gitmem's git hooks, shipped inside the package as ``gitmem._hooks`` (see gitmem.githooks)."""

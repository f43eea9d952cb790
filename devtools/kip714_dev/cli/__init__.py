"""kip714 command groups of the development tooling (registered through the kip714.cli entry point)."""

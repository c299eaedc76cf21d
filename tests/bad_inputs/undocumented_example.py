"""A module for the meta-test only: public callables that no catalogue entry covers."""

from __future__ import annotations

__all__ = ["NewlyPublic", "newly_public"]


def newly_public(x: int) -> int:
    """A documented public function."""
    return x


class NewlyPublic:
    """A documented public class."""

    def method(self) -> int:
        """A documented public method."""
        return 1

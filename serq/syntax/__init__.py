"""The text syntax: grammar, AST, parser."""

from .parser import parse

__all__ = ["parse"]

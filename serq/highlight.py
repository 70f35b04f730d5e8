"""A Pygments lexer for serQ programs (``.sq``).

Registered as the entry point ``pygments.lexers: serq``, so ``pygmentize -l
serq prog.sq``, Sphinx and MkDocs highlight programs once serq is installed
(with Pygments: ``pip install serq[highlight]``).  Its words are the
grammar's (``serq.syntax.words``) and the catalogue's (``serq.link.catalogue``);
``tools/gen_textmate.py`` writes the VS Code grammar from the same lists.
"""

from __future__ import annotations

from pygments.lexer import RegexLexer, words
from pygments.token import Comment, Keyword, Name, Number, Operator, Punctuation, String, Text

from .link import catalogue as C
from .syntax.words import declarations, keywords


def builtin_functions() -> tuple[str, ...]:
    return tuple(sorted(set(C.FUNCTIONS) | set(C.POOL_QUERIES) | set(C.STAGE_QUERIES) | C.OTHER_FUNCTIONS
                        | set(C.AGGREGATES)))


def supplied_names() -> tuple[str, ...]:
    return tuple(sorted(C.SUPPLIED | {"self", "args", "cached", "computed", "serial", "turn_no"}))


def distributions() -> tuple[str, ...]:
    return tuple(sorted(C.DISTS))


def _statement_keywords() -> tuple[str, ...]:
    return tuple(w for w in keywords() if w not in declarations())


class SerqLexer(RegexLexer):
    name = "serQ"
    aliases = ["serq", "sq"]
    filenames = ["*.sq"]
    mimetypes = ["text/x-serq"]

    tokens = {
        "root": [
            (r"\s+", Text),
            (r"//[^\n]*", Comment.Single),
            (r"/\*(.|\n)*?\*/", Comment.Multiline),
            (r'"[^"\n]*"', String),
            (r"(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", Number),
            (r"~\s*(" + "|".join(distributions()) + r")\b", Name.Builtin),
            (words(declarations(), suffix=r"\b"), Keyword.Declaration),
            (words(_statement_keywords(), suffix=r"\b"), Keyword),
            (words(builtin_functions(), suffix=r"(?=\s*\()"), Name.Builtin),
            (words(supplied_names(), suffix=r"\b"), Name.Builtin.Pseudo),
            (r"[A-Za-z_][A-Za-z0-9_]*", Name),
            (r"==|!=|<=|>=|&&|\|\||[-+*/^<>!?:=~]", Operator),
            (r"[(){}\[\];,.]", Punctuation),
        ],
    }

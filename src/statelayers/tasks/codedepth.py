"""Code-Depth: the bracket nesting depth at every token of real Python code.

Tokens
------
A file is tokenized with :func:`tokenize.generate_tokens` and every kept token gets
the id of its entry in :data:`VOCAB` (id = index):

* ``<name>``: an identifier that is not a hard keyword (the soft keywords ``match``,
  ``case``, ``type`` and ``_`` are names); ``<number>``; ``<string>``: a string
  literal. An f-string is ONE ``<string>`` however the tokenizer splits it: Python
  >= 3.12 emits ``FSTRING_START``, the literal parts and the replacement-field
  expressions as ordinary tokens, then ``FSTRING_END``; everything from a start to
  its matching end collapses, so 3.11 and 3.12+ give the same stream.
* ``<newline>`` (NEWLINE, end of a logical line), ``<nl>`` (NL, a line break that
  ends no statement: inside brackets, blank or comment-only lines), ``<indent>``,
  ``<dedent>``.
* ``<other>``: an operator missing from the list below (one a later Python adds).
* one id per hard keyword, then one per operator or punctuation string.

Comments, ENCODING and ENDMARKER are dropped. The keyword and operator lists are
literals here rather than read from the running interpreter, so ids are the same
under Python 3.11, 3.12 and 3.13 (``!`` is an operator from 3.12 on, inside
f-strings only). The vocabulary has 91 entries, so ids fit in int8.

Labels
------
With ``d_0 = 0`` before the file, the label of token ``t`` is the depth after it::

    d_t = d_{t-1} + 1   for ( [ {          (and INDENT if count_indent)
    d_t = d_{t-1} - 1   for ) ] }          (and DEDENT if count_indent)
    d_t = d_{t-1}       otherwise
    label_t = min(d_t, max_depth)

A closing bracket is labelled with the depth after it closes. The running depth is
not capped, so leaving a region deeper than ``max_depth`` lands on the true depth.
Brackets in strings, f-strings and comments are not OP tokens and never count. A
file whose depth goes negative, or that does not tokenize, raises
:class:`CodeTokenError`.

Splits and windows
------------------
A whole file belongs to one split, chosen from the crc32 of its path
(:func:`file_split`), so no code appears in two splits. Models see windows of
``length`` consecutive tokens of one file, starting anywhere in it; labels keep the
file's depth at the window start (they are not reset to 0), so a window that starts
inside brackets begins at a nonzero label. Validation, probe and test windows are
drawn once into data files; training draws fresh windows from the training files at
every step (:class:`Windows`, :mod:`statelayers.tasks.data`).

Corpora
-------
:func:`stdlib_corpus` (default) reads the running interpreter's standard library:
real code on every machine, no network. :func:`codesearchnet_corpus` reads
CodeSearchNet-style rows (one function per row) with Hugging Face ``datasets``.
Both give a frame with columns ``path``, ``source`` and ``origin``.
"""

from __future__ import annotations

import io
import os
import platform
import sysconfig
import token
import tokenize
import zlib
from bisect import bisect_right
from collections.abc import Iterator, Mapping
from itertools import accumulate
from pathlib import Path
from types import MappingProxyType

import numpy as np
import pandas as pd

TOKEN_CLASSES = ("<name>", "<number>", "<string>", "<newline>", "<nl>", "<indent>", "<dedent>", "<other>")

KEYWORDS = (
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class",
    "continue", "def", "del", "elif", "else", "except", "finally", "for", "from", "global",
    "if", "import", "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise",
    "return", "try", "while", "with", "yield",
)  # fmt: skip
"""``keyword.kwlist`` of Python 3.11 to 3.13 (the hard keywords)."""

OPERATORS = (
    "!", "!=", "%", "%=", "&", "&=", "(", ")", "*", "**", "**=", "*=", "+", "+=", ",", "-",
    "-=", "->", ".", "...", "/", "//", "//=", "/=", ":", ":=", ";", "<", "<<", "<<=", "<=",
    "=", "==", ">", ">=", ">>", ">>=", "@", "@=", "[", "]", "^", "^=", "{", "|", "|=", "}",
    "~",
)  # fmt: skip
"""The strings of ``token.EXACT_TOKEN_TYPES`` of Python 3.11 to 3.13, sorted."""

VOCAB: tuple[str, ...] = TOKEN_CLASSES + KEYWORDS + OPERATORS
"""Input vocabulary of Code-Depth; a token's id is its index here."""

_ID = {entry: i for i, entry in enumerate(VOCAB)}
_KEYWORD_SET = frozenset(KEYWORDS)
_CLASS_OF_TYPE = {
    token.NUMBER: "<number>",
    token.STRING: "<string>",
    token.NEWLINE: "<newline>",
    token.NL: "<nl>",
    token.INDENT: "<indent>",
    token.DEDENT: "<dedent>",
}
_DROPPED = frozenset({token.COMMENT, token.ENCODING, token.ENDMARKER})
# Python >= 3.12 splits f-strings (3.14 also t-strings) into START ... END; both empty on 3.11.
_STRING_STARTS = frozenset(
    getattr(token, f"{k}STRING_START") for k in "FT" if hasattr(token, f"{k}STRING_START")
)
_STRING_ENDS = frozenset(getattr(token, f"{k}STRING_END") for k in "FT" if hasattr(token, f"{k}STRING_END"))
_STEP = {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}

SPLIT_FRACTIONS: Mapping[str, float] = MappingProxyType(
    {"train": 0.7, "validation": 0.1, "probe": 0.1, "test": 0.1}
)


class CodeTokenError(ValueError):
    """A source file that cannot be tokenized or whose brackets do not balance."""


def _token_id(tok: tokenize.TokenInfo) -> int:
    if tok.type == token.NAME:
        return _ID[tok.string] if tok.string in _KEYWORD_SET else _ID["<name>"]
    if tok.type == token.OP:
        return _ID.get(tok.string, _ID["<other>"])
    return _ID[_CLASS_OF_TYPE.get(tok.type, "<other>")]


def _stream(source: str, count_indent: bool) -> Iterator[tuple[int, int]]:
    """``(id, uncapped depth after the token)`` for every kept token of ``source``."""
    depth = 0
    open_strings = 0  # f-strings entered but not yet ended; their tokens are one <string>
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type in _STRING_STARTS:
            open_strings += 1
            if open_strings == 1:
                yield _ID["<string>"], depth
            continue
        if open_strings:
            open_strings -= tok.type in _STRING_ENDS
            continue
        if tok.type == token.ERRORTOKEN:
            raise CodeTokenError(f"cannot tokenize {tok.string!r} at line {tok.start[0]}")
        if tok.type in _DROPPED:
            continue
        if tok.type == token.OP:
            depth += _STEP.get(tok.string, 0)
        elif count_indent and tok.type in (token.INDENT, token.DEDENT):
            depth += 1 if tok.type == token.INDENT else -1
        if depth < 0:
            raise CodeTokenError(f"unbalanced {tok.string!r} at line {tok.start[0]}")
        yield _token_id(tok), depth


def file_tokens(source: str, max_depth: int, count_indent: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Token ids and depth labels (both int64, one per kept token) of one file.

    Raises :class:`CodeTokenError` for source that Python's tokenizer rejects, that
    contains NUL bytes (the tokenizer's behaviour on them differs across versions), or
    whose brackets close more than they open.
    """
    if max_depth < 1:
        raise ValueError(f"max_depth must be >= 1, got {max_depth}")
    if "\0" in source:
        raise CodeTokenError("source contains NUL bytes")
    try:  # a leading BOM is an error token on 3.11 only; Python ignores it
        pairs = list(_stream(source.removeprefix("\ufeff"), count_indent))
    except (tokenize.TokenError, SyntaxError) as err:  # IndentationError is a SyntaxError
        raise CodeTokenError(f"cannot tokenize: {err}") from err
    ids = np.array([i for i, _ in pairs], dtype=np.int64)
    depths = np.array([d for _, d in pairs], dtype=np.int64)
    return ids, np.minimum(depths, max_depth)


def file_split(path: str, fractions: Mapping[str, float] = SPLIT_FRACTIONS) -> str:
    """The split a whole file belongs to, with probability proportional to ``fractions``.

    crc32 of the path is stable across processes and machines (``hash`` of a str is
    salted), so a file always lands in the same split and never in two.
    """
    names = list(fractions)
    edges = list(accumulate(fractions[name] for name in names))
    if not names or edges[-1] <= 0 or min(fractions.values()) < 0:
        raise ValueError(f"fractions must be >= 0 with a positive total, got {dict(fractions)}")
    u = zlib.crc32(path.encode()) / 2**32 * edges[-1]
    return names[min(bisect_right(edges, u), len(names) - 1)]


def _evenly(corpus: pd.DataFrame, max_files: int | None) -> pd.DataFrame:
    """``max_files`` rows evenly spaced over ``corpus``: a sample of every package, not the first one."""
    if max_files is not None and max_files < 1:
        raise ValueError(f"max_files must be >= 1, got {max_files}")
    if max_files is not None and max_files < len(corpus):
        corpus = corpus.iloc[np.arange(max_files) * len(corpus) // max_files]
    return corpus.reset_index(drop=True)


def stdlib_corpus(max_files: int | None = None) -> pd.DataFrame:
    """Every ``*.py`` of the running interpreter's standard library, sorted by path.

    ``site-packages`` and ``__pycache__`` are left out; files that are not UTF-8 are
    skipped. ``path`` is relative to the stdlib root, in posix form.
    """
    root = sysconfig.get_paths()["stdlib"]
    paths = []
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = [name for name in subfolders if name not in ("site-packages", "__pycache__")]
        paths += [Path(folder, name) for name in names if name.endswith(".py")]
    rows = []
    for path in paths:
        try:
            source = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        rows.append({"path": path.relative_to(root).as_posix(), "source": source})
    origin = f"{platform.python_implementation()} {platform.python_version()} standard library (PSF-2.0)"
    corpus = pd.DataFrame(rows, columns=["path", "source"]).sort_values("path", ignore_index=True)
    return _evenly(corpus.assign(origin=origin), max_files)


def codesearchnet_corpus(
    dataset: str,
    split: str,
    name: str | None = None,
    data_files=None,
    max_files: int | None = None,
) -> pd.DataFrame:
    """Python functions of a dataset in CodeSearchNet's schema, one function per file.

    ``dataset`` is anything :func:`datasets.load_dataset` takes: a hub id (``"code_search_net"``
    with ``name="python"``), a local directory, or ``"parquet"``/``"json"`` with
    ``data_files``. ``path`` is ``repository/file:function``; a repeated path keeps its
    first row so that a path names one source.
    """
    import datasets

    frame = datasets.load_dataset(dataset, name=name, split=split, data_files=data_files).to_pandas()
    if "language" in frame:
        frame = frame[frame["language"] == "python"]
    path = frame["repository_name"] + "/" + frame["func_path_in_repository"] + ":" + frame["func_name"]
    origin = frame.get("func_code_url", dataset)
    corpus = pd.DataFrame({"path": path, "source": frame["whole_func_string"], "origin": origin})
    return _evenly(corpus.drop_duplicates("path"), max_files)


def _tokenized(
    corpus: pd.DataFrame, split: str, max_depth: int, count_indent: bool
) -> tuple[list[str], list[np.ndarray], list[np.ndarray], int]:
    """Paths, token ids and labels of the files of ``split`` that tokenize, and how many did not."""
    paths, ids, labels, skipped = [], [], [], 0
    for path, source in zip(corpus["path"], corpus["source"]):
        if file_split(path) != split:
            continue
        try:
            file_ids, file_labels = file_tokens(source, max_depth, count_indent)
        except CodeTokenError:
            skipped += 1
            continue
        paths.append(path)
        ids.append(file_ids)
        labels.append(file_labels)
    return paths, ids, labels, skipped


class Windows:
    """Every window of ``length`` tokens of the files of ``corpus`` in ``split``, tokenized
    once, to draw from as often as needed (a data file once, training at every step).

    Every start position of every file is equally likely (a file of ``T`` tokens has
    ``T - length + 1``), so long files are not under-sampled. ``stats``: files of the
    split that tokenized, files skipped as :class:`CodeTokenError`, their total tokens,
    and the number of distinct windows.
    """

    def __init__(
        self,
        corpus: pd.DataFrame,
        split: str,
        length: int,
        max_depth: int,
        count_indent: bool = False,
    ):
        if length < 1:
            raise ValueError(f"need length >= 1, got length={length}")
        self.length = length
        self.paths, self.ids, self.labels, skipped = _tokenized(corpus, split, max_depth, count_indent)
        self.starts = np.array([max(len(file_ids) - length + 1, 0) for file_ids in self.ids], dtype=np.int64)
        self.ends = np.cumsum(self.starts)
        total = int(self.starts.sum())
        if total == 0:
            raise ValueError(
                f"no file of split {split!r} has {length} tokens "
                f"({len(self.ids)} files tokenized, {skipped} skipped); "
                "use shorter windows or a larger corpus"
            )
        self.stats = {
            "files": len(self.ids),
            "skipped": skipped,
            "tokens": int(sum(map(len, self.ids))),
            "windows_available": total,
        }

    def draw(self, n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """``n`` windows, distinct unless more are asked for than exist: ``tokens``,
        ``labels`` (int64, ``(n, length)``), ``path`` and ``start`` (first token's index
        in its file)."""
        if n < 1:
            raise ValueError(f"need n >= 1, got n={n}")
        total = self.stats["windows_available"]
        chosen = rng.choice(total, size=n, replace=n > total)
        files = np.searchsorted(self.ends, chosen, side="right")  # never a file without starts
        start = chosen - (self.ends[files] - self.starts[files])
        end = start + self.length
        return {
            "tokens": np.stack([self.ids[f][s:e] for f, s, e in zip(files, start, end)]),
            "labels": np.stack([self.labels[f][s:e] for f, s, e in zip(files, start, end)]),
            "path": np.array([self.paths[f] for f in files], dtype=object),
            "start": start.astype(np.int64),
        }


def windows(
    corpus: pd.DataFrame,
    split: str,
    n: int,
    length: int,
    rng: np.random.Generator,
    max_depth: int,
    count_indent: bool = False,
) -> tuple[dict[str, np.ndarray], dict[str, int]]:
    """``n`` windows of ``length`` tokens from the files of ``corpus`` in ``split``, and
    the split's :attr:`Windows.stats` (see :class:`Windows`)."""
    if n < 1 or length < 1:
        raise ValueError(f"need n >= 1 and length >= 1, got n={n}, length={length}")
    split_windows = Windows(corpus, split, length, max_depth, count_indent)
    return split_windows.draw(n, rng), split_windows.stats


def load_corpus(
    source: str,
    dataset: str,
    name: str | None,
    split: str,
    data_files=None,
    max_files: int | None = None,
) -> pd.DataFrame:
    """The corpus the config names (``corpus`` section): ``stdlib`` or ``codesearchnet``."""
    if source == "stdlib":
        return stdlib_corpus(max_files)
    if source == "codesearchnet":
        return codesearchnet_corpus(
            dataset, split=split, name=name, data_files=data_files, max_files=max_files
        )
    raise ValueError(f"unknown corpus source {source!r}; expected 'stdlib' or 'codesearchnet'")


def corpus_statistics(corpus: pd.DataFrame) -> pd.DataFrame:
    """Per split: files, files that failed to tokenize, tokens, and the bracket depth of
    the tokens (uncapped mean and maximum, share inside brackets).

    Raises ``ValueError`` when no file tokenizes: such a corpus (e.g. not Python) would
    otherwise fail later, once per data file, with a less direct message.
    """
    rows = []
    for split in SPLIT_FRACTIONS:
        paths, _, depths, skipped = _tokenized(corpus, split, max_depth=10**9, count_indent=False)
        depth = np.concatenate(depths) if depths else np.zeros(0, dtype=np.int64)
        rows.append(
            {
                "split": split,
                "files": len(paths),
                "skipped": skipped,
                "tokens": len(depth),
                "mean_depth": float(depth.mean()) if len(depth) else float("nan"),
                "max_depth": int(depth.max()) if len(depth) else 0,
                "inside_brackets": float(np.mean(depth > 0)) if len(depth) else float("nan"),
            }
        )
    table = pd.DataFrame(rows)
    if table["files"].sum() == 0:
        raise ValueError(
            f"the Code-Depth corpus has no tokenizable Python file ({len(corpus)} files, all failed "
            "to tokenize); check corpus.source / corpus.dataset / corpus.data_files in the config"
        )
    return table

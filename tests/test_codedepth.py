"""Code-Depth tokens and labels against an independent character-level bracket scanner."""

import keyword
import token
from collections import Counter
from itertools import count

import numpy as np
import pandas as pd
import pytest

from statelayers.tasks.codedepth import (
    VOCAB,
    CodeTokenError,
    codesearchnet_corpus,
    corpus_statistics,
    file_split,
    file_tokens,
    load_corpus,
    stdlib_corpus,
    windows,
)
from study_config import CONFIG

DEPTH = CONFIG["task_params"]["codedepth"]["max_depth"]
SPLIT = CONFIG["corpus"]["split"]
STRING_PREFIXES = {"r", "u", "b", "f", "br", "rb", "fr", "rf"}
BRACKETS = {VOCAB.index(c): c for c in "()[]{}"}


def skip_string(s: str, i: int, fstring: bool) -> int:
    """Index just past the string literal whose opening quote is at ``s[i]``."""
    quote = s[i : i + 3] if s[i : i + 3] in ('"""', "'''") else s[i]
    i += len(quote)
    while not s.startswith(quote, i):
        if s[i] == "\\" or (fstring and s.startswith(("{{", "}}"), i)):  # escape or literal brace
            i += 2
        elif fstring and s[i] == "{":
            i = skip_field(s, i + 1)
        else:
            i += 1
    return i + len(quote)


def skip_word(s: str, i: int) -> tuple[int, bool]:
    """Past the identifier/number at ``i``, or past the string it prefixes; True if a string."""
    j = i
    while j < len(s) and (s[j].isalnum() or s[j] == "_"):
        j += 1
    prefix = s[i:j].lower()
    if j < len(s) and s[j] in "'\"" and prefix in STRING_PREFIXES:
        return skip_string(s, j, "f" in prefix), True
    return j, False


def skip_field(s: str, i: int) -> int:
    """Past the ``}`` closing an f-string replacement field whose body starts at ``i``."""
    level = 0
    while True:
        c = s[i]
        if c in "'\"":
            i = skip_string(s, i, False)
        elif c.isalpha() or c == "_":
            i, _ = skip_word(s, i)
        elif c == "}" and level == 0:
            return i + 1
        else:
            level += (c in "([{") - (c in ")]}")
            i += 1


def reference(source: str) -> tuple[list[tuple[str, int]], int]:
    """(bracket, depth after it) for every bracket outside strings and comments; string count."""
    brackets, strings, depth, i = [], 0, 0, 0
    while i < len(source):
        c = source[i]
        if c == "#":
            end = source.find("\n", i)
            i = len(source) if end < 0 else end
        elif c.isalnum() or c == "_":
            i, is_string = skip_word(source, i)
            strings += is_string
        elif c in "'\"":
            i = skip_string(source, i, False)
            strings += 1
        else:
            if c in "([{)]}":
                depth += 1 if c in "([{" else -1
                brackets.append((c, depth))
            i += 1
    return brackets, strings


SNIPPETS = {
    "strings_and_comments": """\
x = "(((" + ')' + '[{' + "\\"(\\"" + b"((" + Rb'\\)' + u"{"  # ) ] } in a comment
y = (1, "]", [2, '}'])  # (
""",
    "fstrings": """\
d = {'k': [1, 2]}
x = [3]
s = f"{x[0]} and {d['k'][1]} {{literal ( braces}} {f'{x[0]}'!r:>{len(x)}}"
t = (f'''{ {"a": (1)}["a"] } ((''', rf"[{x}", F'{d["k"]}]')
""",
    "comprehensions": """\
grid = [[(i, j) for j in range(3)] for i in range(3)]
flat = {k: [v for v in (k, k + 1) if v] for k in {1, 2}}
gen = list((a, b) for a in [1] for b in (a, [a]))
""",
    "continuations": """\
total = 1 + \\
    (2 + \\
     3) \\
    + [4][0]
""",
    "decorators": """\
@functools.lru_cache(maxsize=(128))
@register(["a", ("b",)])
def f(a, b=[1]):
    return a[b[0]]
""",
    "multiline": """\
result = call(
    first=1,  # ) closing in a comment
    second={
        "x": [1, 2,
              3],
        "y": (4,),
    },
)
""",
    "triple_quoted": '''\
def g():
    """Docstring with ( and [ and {{ unbalanced."""
    s = \'\'\'
    ] ) }
    \'\'\'
    return (s, r"""(""")
''',
}


def check_against_reference(source: str, max_depth: int = 10) -> None:
    ids, labels = file_tokens(source, max_depth=max_depth)
    expected, strings = reference(source)
    got = [(BRACKETS[i], int(label)) for i, label in zip(ids, labels) if i in BRACKETS]
    assert got == [(c, min(d, max_depth)) for c, d in expected]
    running, pending = 0, iter(expected)
    for i, label in zip(ids, labels):
        if i in BRACKETS:
            running = next(pending)[1]
        assert label == min(running, max_depth)
    assert (ids == VOCAB.index("<string>")).sum() == strings
    assert ids.dtype == labels.dtype == np.int64


@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_labels_match_character_scanner(name):
    check_against_reference(SNIPPETS[name])


def test_reference_sees_brackets_the_tokenizer_ignores():
    """Guard against a vacuous comparison: the snippets do hide brackets in strings."""
    source = SNIPPETS["fstrings"]
    assert sum(source.count(c) for c in "([{") > sum(c in "([{" for c, _ in reference(source)[0])
    assert max(d for _, d in reference(SNIPPETS["multiline"])[0]) == 3


def test_vocabulary_covers_this_python():
    assert len(VOCAB) == len(set(VOCAB)) < 127
    for word in keyword.kwlist:
        assert file_tokens(word, DEPTH)[0][0] == VOCAB.index(word)
    for word in ("match", "case", "type", "_", "print"):
        assert file_tokens(word, DEPTH)[0][0] == VOCAB.index("<name>")
    for op in token.EXACT_TOKEN_TYPES:
        assert op in VOCAB
        if op not in "()[]{}!":  # brackets alone do not balance; '!' only exists in f-strings
            assert file_tokens(f"a {op} b", DEPTH)[0][1] == VOCAB.index(op)


def test_token_classes():
    ids, _ = file_tokens("if x:\n    y = 1.5  # c\n\n    z = 'a'\n", DEPTH)
    assert [VOCAB[i] for i in ids] == [
        "if", "<name>", ":", "<newline>",
        "<indent>", "<name>", "=", "<number>", "<newline>", "<nl>",
        "<name>", "=", "<string>", "<newline>", "<dedent>",
    ]  # fmt: skip


def test_count_indent_adds_indentation_levels():
    source = "def f():\n    if x:\n        return (1)\n"
    _, labels = file_tokens(source, DEPTH, count_indent=True)
    # def f ( ) : NL IND if x : NL IND return ( 1 ) NL DED DED
    assert labels.tolist() == [0, 0, 1, 0, 0, 0, 1, 1, 1, 1, 1, 2, 2, 3, 3, 2, 2, 1, 0]
    ids, plain = file_tokens(SNIPPETS["triple_quoted"] + SNIPPETS["decorators"], DEPTH)
    _, indented = file_tokens(SNIPPETS["triple_quoted"] + SNIPPETS["decorators"], DEPTH, count_indent=True)
    level = np.cumsum((ids == VOCAB.index("<indent>")).astype(int) - (ids == VOCAB.index("<dedent>")))
    assert level.max() == 1
    np.testing.assert_array_equal(indented - plain, level)


def test_labels_cap_at_max_depth_but_depth_is_tracked():
    source = "x = [[[[[[1]]]]]] + (2)\n"
    check_against_reference(source, max_depth=3)
    _, labels = file_tokens(source, max_depth=3)
    assert labels.tolist() == [0, 0, 1, 2, 3, 3, 3, 3, 3, 3, 3, 3, 2, 1, 0, 0, 1, 1, 0, 0]


@pytest.mark.parametrize(
    "source",
    [
        "def f(:\n",  # EOF inside brackets
        "x = )\n",  # depth below zero
        "if x:\n        a\n    b\n",  # dedent to no enclosing level
        "s = 'abc\n",  # unterminated string
        '"""never closed\n',
        "x = $\n",
        "a\0b\n",
    ],
)
def test_untokenizable_sources_raise(source):
    with pytest.raises(CodeTokenError):
        file_tokens(source, DEPTH)


def test_file_split_is_deterministic_and_follows_fractions():
    paths = [f"repo{i}/pkg/module_{i}.py" for i in range(2000)]
    splits = [file_split(p) for p in paths]
    assert splits == [file_split(p) for p in paths]
    assert file_split("os.py") == "train" and file_split("asyncio/tasks.py") == "test"  # pinned
    share = {k: v / len(paths) for k, v in Counter(splits).items()}
    assert set(share) == {"train", "validation", "probe", "test"}
    assert share["train"] == pytest.approx(0.7, abs=0.04)
    for name in ("validation", "probe", "test"):
        assert share[name] == pytest.approx(0.1, abs=0.03)
    halves = Counter(file_split(p, {"a": 1.0, "b": 3.0}) for p in paths)
    assert halves["a"] / len(paths) == pytest.approx(0.25, abs=0.04)


def nested_source(i: int) -> str:
    """A file that is mostly inside brackets, so windows start at nonzero depth."""
    rows = "".join(f"    ({i}, {{'k': [{j}, f(x[{j}])]}}),\n" for j in range(i % 5 + 2))
    return f"def f{i}(x):\n    return [\n{rows}    ]\n"


def path_in(split: str, stem: str) -> str:
    return next(p for p in (f"{stem}{k}.py" for k in count()) if file_split(p) == split)


@pytest.fixture
def corpus():
    frame = pd.DataFrame(
        {"path": [f"pkg/m{i}.py" for i in range(60)], "source": [nested_source(i) for i in range(60)]}
    )
    broken = pd.DataFrame({"path": [path_in("train", "broken")], "source": ["x = (\n"]})
    short = pd.DataFrame({"path": [path_in("train", "short")], "source": ["x = 1\n"]})
    return pd.concat([frame, broken, short], ignore_index=True).assign(origin="test")


def test_windows_are_file_slices_from_one_split(corpus):
    data, stats = windows(corpus, "train", 50, 16, np.random.default_rng(0), DEPTH)
    assert data["tokens"].shape == data["labels"].shape == (50, 16)
    assert data["tokens"].dtype == data["labels"].dtype == data["start"].dtype == np.int64
    assert data["path"].dtype == object and data["path"].shape == (50,)
    source = dict(zip(corpus["path"], corpus["source"]))
    for tokens, labels, path, start in zip(data["tokens"], data["labels"], data["path"], data["start"]):
        assert file_split(path) == "train"
        ids, depths = file_tokens(source[path], DEPTH)
        np.testing.assert_array_equal(tokens, ids[start : start + 16])
        np.testing.assert_array_equal(labels, depths[start : start + 16])
    assert {file_split(p) for p in corpus["path"]} > {"train"}
    assert (data["labels"][:, 0] > 0).mean() > 0.5  # true depth at the start, not reset
    train = [p for p in corpus["path"] if file_split(p) == "train"]
    lengths = [len(file_tokens(source[p], DEPTH)[0]) for p in train if not p.startswith("broken")]
    assert stats == {
        "files": len(train) - 1,
        "skipped": 1,
        "tokens": sum(lengths),
        "windows_available": sum(max(n - 15, 0) for n in lengths),
    }


def test_windows_are_deterministic_and_cover_every_start_once(corpus):
    first, stats = windows(corpus, "validation", 40, 8, np.random.default_rng(3), max_depth=2)
    again, _ = windows(corpus, "validation", 40, 8, np.random.default_rng(3), max_depth=2)
    for name in first:
        np.testing.assert_array_equal(first[name], again[name])
    assert first["labels"].max() <= 2
    total = stats["windows_available"]
    every, _ = windows(corpus, "validation", total, 8, np.random.default_rng(4), DEPTH)
    assert len(set(zip(every["path"], every["start"]))) == total  # uniform over starts, no repeats
    more, _ = windows(corpus, "validation", total + 5, 8, np.random.default_rng(4), DEPTH)
    assert more["tokens"].shape == (total + 5, 8)


def test_windows_longer_than_every_file_fail_clearly(corpus):
    with pytest.raises(ValueError, match="no file of split 'test' has 10000 tokens"):
        windows(corpus, "test", 5, 10_000, np.random.default_rng(0), DEPTH)


def test_corpus_statistics_count_files_tokens_and_failures_per_split(corpus):
    table = corpus_statistics(corpus).set_index("split")
    assert table["files"].sum() + table["skipped"].sum() == len(corpus)
    assert table.loc["train", "skipped"] == 1  # the broken file
    _, stats = windows(corpus, "train", 3, 8, np.random.default_rng(0), DEPTH)
    assert (table.loc["train", "files"], table.loc["train", "tokens"]) == (stats["files"], stats["tokens"])
    assert table.loc["train", "inside_brackets"] > 0.5 and table.loc["train", "max_depth"] >= 3


def test_a_corpus_without_tokenizable_python_is_rejected():
    broken = pd.DataFrame(
        {"path": ["a.go", "b.go"], "source": ["func Main() {$}\n", "x = (\n"], "origin": "x"}
    )
    with pytest.raises(ValueError, match="no tokenizable Python file"):
        corpus_statistics(broken)


def test_stdlib_corpus_samples_across_the_library():
    corpus = stdlib_corpus(max_files=20)
    assert list(corpus.columns) == ["path", "source", "origin"] and len(corpus) == 20
    assert corpus["path"].is_unique and corpus["path"].is_monotonic_increasing
    assert (corpus["source"].str.len() > 0).all()
    assert not corpus["path"].str.contains("site-packages|__pycache__").any()
    assert corpus["path"].str.split("/").str[0].nunique() > 5  # evenly spaced, not one package
    assert corpus["origin"].iloc[0].endswith("standard library (PSF-2.0)")
    tokenized = 0
    for source in corpus["source"]:
        try:
            file_tokens(source, DEPTH)
            tokenized += 1
        except CodeTokenError:
            pass
    assert tokenized >= 17


CSN_ROWS = pd.DataFrame(
    {
        "repository_name": ["octo/alpha", "octo/alpha", "gopher/beta", "octo/gamma", "octo/delta"],
        "func_path_in_repository": ["src/a.py", "src/a.py", "main.go", "g.py", "pkg/d.py"],
        "func_name": ["Parser.parse", "helper", "Main", "run", "D.__init__"],
        "whole_func_string": [
            "def parse(self):\n    return (self.x)\n",
            "def helper():\n    pass\n",
            "func Main() {}\n",
            "def run(a):\n    return [a]\n",
            "def __init__(self):\n    self.x = {}\n",
        ],
        "language": ["python", "python", "go", "python", "python"],
        "func_code_url": [f"https://github.com/x/blob/{i}" for i in range(5)],
        "docstring": ["", "", "", "", ""],
    }
)
CSN_PATHS = ["octo/alpha/src/a.py:Parser.parse", "octo/alpha/src/a.py:helper", "octo/gamma/g.py:run"]


def write_rows(tmp_path, fmt: str, frame: pd.DataFrame = CSN_ROWS) -> str:
    path = tmp_path / f"rows.{fmt}"
    if fmt == "parquet":
        frame.to_parquet(path)
    else:
        frame.to_json(path, orient="records", lines=True)
    return str(path)


@pytest.mark.parametrize("fmt", ["parquet", "json"])
def test_codesearchnet_schema_through_datasets_load_dataset(tmp_path, fmt):
    """Local files in CodeSearchNet's schema, read by the real ``datasets.load_dataset``."""
    files = write_rows(tmp_path, fmt)
    corpus = codesearchnet_corpus(fmt, SPLIT, data_files=files)
    assert list(corpus.columns) == ["path", "source", "origin"]
    assert corpus["path"].tolist() == CSN_PATHS + ["octo/delta/pkg/d.py:D.__init__"]  # go row dropped
    assert corpus["origin"].tolist() == [f"https://github.com/x/blob/{i}" for i in (0, 1, 3, 4)]
    assert corpus["source"].iloc[0] == CSN_ROWS["whole_func_string"].iloc[0]
    assert all(file_tokens(source, DEPTH)[0].size for source in corpus["source"])
    assert codesearchnet_corpus(fmt, SPLIT, data_files=files, max_files=2)["path"].tolist() == CSN_PATHS[::2]


def test_codesearchnet_without_language_or_url_columns(tmp_path):
    rows = CSN_ROWS.drop(columns=["language", "func_code_url"]).iloc[[0, 3]]
    corpus = codesearchnet_corpus("parquet", SPLIT, data_files=write_rows(tmp_path, "parquet", rows))
    assert corpus["path"].tolist() == [CSN_PATHS[0], CSN_PATHS[2]]
    assert (corpus["origin"] == "parquet").all()


def test_load_corpus_follows_the_config_source(tmp_path):
    files = write_rows(tmp_path, "parquet")
    settings = {"dataset": "parquet", "name": None, "split": "train", "data_files": files, "max_files": 3}
    assert load_corpus("codesearchnet", **settings)["path"].tolist() == CSN_PATHS
    assert load_corpus("stdlib", **settings)["origin"].iloc[0].endswith("standard library (PSF-2.0)")
    with pytest.raises(ValueError, match="unknown corpus source"):
        load_corpus("github", **settings)

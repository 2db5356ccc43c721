"""The CUDA kernel packages' upstream sources, made ready for an offline sm_90 build.

``prepare`` (run by tools/gpu_prepare.sh on a machine with the tarballs) copies the
upstream source tarballs of causal-conv1d and mamba-ssm into the git-ignored
``.gpu/sources``, after checking that they take the patches below, so a mismatch shows
here and not on the GPU machine. ``unpack`` (run by tools/gpu_check.sh there) extracts a
copy of each into ``.gpu/build``, patches the copy's setup.py, splits the translation
units that would dominate the build (:class:`Split`) and unzips the einops wheel that
mamba-ssm imports. Standard library only: on the GPU machine it runs before anything is
built or installed.

Usage:
  python3 tools/gpu_sources.py prepare TARBALL_DIR SOURCES_DIR
  python3 tools/gpu_sources.py unpack SOURCES_DIR BUILD_DIR
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Split:
    """A source file compiled as ``parts`` translation units instead of one.

    ninja runs one compiler per translation unit, so a file holding many explicit template
    instantiations keeps one core busy while the others wait: causal-conv1d's backward (18
    instantiations, each a few dozen kernels; 364 s of one core, its parts 6-45 s each,
    docs/cost.md) alone compiled for longer than 330 s on the lent H200. Each part is the
    unmodified file with all but its share of the explicit instantiations commented out
    (the lines keep their numbers, so the compiler's messages point into the upstream file);
    everything else in these files is a template, so the parts define no symbol twice.
    """

    source: str
    """The file, as setup.py lists it (relative to the package directory)."""
    instantiations: int
    """How many explicit instantiations upstream's file holds: another count stops ``prepare``."""
    parts: int


@dataclass(frozen=True)
class Package:
    tarball: str
    """File name of the upstream source tarball."""
    top: str
    """The directory it unpacks to; ``setup.py build_ext --inplace`` builds there."""
    splits: tuple[Split, ...] = ()


PACKAGES = (
    Package(
        "causal-conv1d-1.6.1-src.tar.gz",
        "causal-conv1d",
        (Split("csrc/causal_conv1d_bwd.cu", 18, 18),),  # the forward file: 25 s, no longer than the rest
    ),
    # mamba-ssm's backward files hold one instantiation each, its forward ones two, which
    # compile in about half a backward file's time: no part would shorten the build.
    Package("mamba-ssm-2.3.2.post1-src.tar.gz", "mamba"),
)
EINOPS_WHEEL = "einops-*-py3-none-any.whl"
SITE = "site"
"""Directory of ``BUILD_DIR`` that holds the unzipped einops (a PYTHONPATH entry)."""
UNPACKED_FROM = ".unpacked-from"

ARCH_MARKER = "# HACK: The compiler flag"
HOPPER_ONLY = 'cc_flag = ["-gencode", "arch=compute_90,code=sm_90"]  # patched: sm_90 (Hopper) only'


def patch_setup(text: str) -> str:
    """``text`` (an upstream setup.py) compiling for sm_90 only.

    Both setup.py files append about nine hard-coded architectures to ``cc_flag`` (so
    TORCH_CUDA_ARCH_LIST has no effect) and close the list right before the
    ``# HACK: The compiler flag`` comment: resetting it there, at that line's indentation,
    leaves Hopper alone, and a multi-arch build of 15-90 minutes becomes a few.
    """
    lines = text.splitlines(keepends=True)
    at = [i for i, line in enumerate(lines) if line.lstrip().startswith(ARCH_MARKER)]
    if len(at) != 1:
        raise ValueError(f"expected one line starting with {ARCH_MARKER!r} in setup.py, found {len(at)}")
    marker = lines[at[0]]
    lines.insert(at[0], marker[: len(marker) - len(marker.lstrip())] + HOPPER_ONLY + "\n")
    patched = "".join(lines)
    compile(patched, "setup.py", "exec")  # a broken patch fails here, not in the build
    return patched


INSTANTIATION = re.compile(r"^template void \w+<[^;]*>\([^;]*\);\s*$")
"""An explicit instantiation definition of a function template, alone on its line."""


def part_paths(split: Split) -> list[str]:
    """The paths of ``split``'s parts, beside its file: ``a/b.cu`` -> ``a/b_part01.cu``, ..."""
    stem, dot, suffix = split.source.rpartition(".")
    return [f"{stem}_part{index:02d}{dot}{suffix}" for index in range(1, split.parts + 1)]


def split_text(text: str, split: Split) -> list[str]:
    """The texts of ``split``'s parts made from ``text`` (the upstream file).

    The instantiations are dealt out in turn (with fewer parts than instantiations, each
    part gets a mix of the file's kinds); in each part the lines of the others become
    comments naming the part that compiles them.
    """
    lines = text.splitlines(keepends=True)
    at = [i for i, line in enumerate(lines) if INSTANTIATION.match(line)]
    if len(at) != split.instantiations:
        raise ValueError(
            f"expected {split.instantiations} explicit instantiations in {split.source}, found {len(at)}"
        )
    owner = {line: index % split.parts for index, line in enumerate(at)}
    names = [path.rpartition("/")[2] for path in part_paths(split)]
    return [
        "".join(
            f"// compiled in {names[owner[i]]}: {line}" if owner.get(i, part) != part else line
            for i, line in enumerate(lines)
        )
        for part in range(split.parts)
    ]


def patch_sources(text: str, split: Split) -> str:
    """``text`` (a setup.py) compiling ``split``'s parts in place of its file."""
    listed = f'"{split.source}"'
    if text.count(listed) != 1:
        raise ValueError(f"expected {listed} once in setup.py, found {text.count(listed)}")
    patched = text.replace(listed, ", ".join(f'"{part}"' for part in part_paths(split)))
    compile(patched, "setup.py", "exec")
    return patched


def patched_package(files: dict[str, str], package: Package) -> dict[str, str]:
    """The files to write into ``package``'s directory, from ``files`` (its upstream setup.py
    and the files it splits, by path): setup.py patched, and every part."""
    setup = patch_setup(files["setup.py"])
    written = {}
    for split in package.splits:
        setup = patch_sources(setup, split)
        written |= dict(zip(part_paths(split), split_text(files[split.source], split)))
    return {"setup.py": setup, **written}


def upstream_paths(package: Package) -> tuple[str, ...]:
    """The files of ``package`` that :func:`patched_package` reads: setup.py and the split ones."""
    return ("setup.py", *(split.source for split in package.splits))


def upstream_files(tarball: Path, package: Package) -> dict[str, str]:
    """The texts, by path in the package, of :func:`upstream_paths` inside ``tarball``."""
    texts = {}
    with tarfile.open(tarball) as archive:
        for path in upstream_paths(package):
            try:
                member = archive.extractfile(f"{package.top}/{path}")
            except KeyError:
                member = None
            if member is None:
                raise ValueError(f"{tarball} has no {package.top}/{path}")
            texts[path] = member.read().decode()
    return texts


def prepare(tarball_dir: Path, sources_dir: Path) -> list[Path]:
    """Copy every package's tarball from ``tarball_dir`` to ``sources_dir``; return the copies.

    Each is checked first (present, taking :func:`patched_package`), so a missing or
    changed upstream source stops here with its name.
    """
    missing = [p.tarball for p in PACKAGES if not (tarball_dir / p.tarball).is_file()]
    if missing:
        raise FileNotFoundError(f"{tarball_dir} lacks {', '.join(missing)}")
    for package in PACKAGES:
        patched_package(upstream_files(tarball_dir / package.tarball, package), package)
    sources_dir.mkdir(parents=True, exist_ok=True)
    return [Path(shutil.copyfile(tarball_dir / p.tarball, sources_dir / p.tarball)) for p in PACKAGES]


def unpack(sources_dir: Path, build_dir: Path) -> list[Path]:
    """Extract each tarball of ``sources_dir`` into ``build_dir`` with its setup.py patched
    and its split files' parts beside them, and unzip the einops wheel into
    ``build_dir/site``; return the package directories.

    A package directory already unpacked from the same tarball with the same patches is
    kept, with the objects of an earlier build in it: rerun on the same machine, ninja
    recompiles nothing.
    """
    missing = [p.tarball for p in PACKAGES if not (sources_dir / p.tarball).is_file()]
    wheels = sorted(sources_dir.glob(EINOPS_WHEEL))
    if missing or len(wheels) != 1:
        wanted = missing + ([] if len(wheels) == 1 else [f"exactly one {EINOPS_WHEEL} (found {len(wheels)})"])
        raise FileNotFoundError(
            f"{sources_dir} lacks {', '.join(wanted)}: run tools/gpu_prepare.sh DIR "
            "(DIR: a directory holding the upstream source tarballs) on a machine with pip"
        )
    build_dir.mkdir(parents=True, exist_ok=True)
    directories = []
    for package in PACKAGES:
        target = build_dir / package.top
        stamp = target / UNPACKED_FROM
        if not (stamp.is_file() and stamp.read_text() == repr(package)):
            shutil.rmtree(target, ignore_errors=True)
            with tarfile.open(sources_dir / package.tarball) as archive:
                archive.extractall(build_dir, filter="data")
            upstream = {path: (target / path).read_text() for path in upstream_paths(package)}
            for path, text in patched_package(upstream, package).items():
                (target / path).write_text(text)
            stamp.write_text(repr(package))
        directories.append(target)
    shutil.rmtree(build_dir / SITE, ignore_errors=True)
    with zipfile.ZipFile(wheels[0]) as wheel:  # a pure-Python wheel is its import tree
        wheel.extractall(build_dir / SITE)
    return directories


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    prepare_parser = commands.add_parser("prepare", help="copy and check the tarballs")
    prepare_parser.add_argument("tarball_dir", type=Path)
    prepare_parser.add_argument("sources_dir", type=Path)
    unpack_parser = commands.add_parser("unpack", help="extract and patch a copy for building")
    unpack_parser.add_argument("sources_dir", type=Path)
    unpack_parser.add_argument("build_dir", type=Path)
    args = parser.parse_args()
    try:
        if args.command == "prepare":
            paths = prepare(args.tarball_dir, args.sources_dir)
        else:
            paths = unpack(args.sources_dir, args.build_dir)
    except (OSError, ValueError) as error:
        sys.exit(f"gpu_sources {args.command}: {error}")
    for path in paths:
        print(path)


if __name__ == "__main__":
    main()

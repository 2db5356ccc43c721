"""The CUDA kernel packages' upstream sources, made ready for an offline sm_90 build.

``prepare`` (run by tools/gpu_prepare.sh on a machine with the tarballs) copies the
upstream source tarballs of causal-conv1d and mamba-ssm into the git-ignored
``.gpu/sources``, after checking that their setup.py takes the patch below, so a
mismatch shows here and not on the GPU machine. ``unpack`` (run by tools/gpu_check.sh
there) extracts a copy of each into ``.gpu/build``, patches the copy's setup.py and
unzips the einops wheel that mamba-ssm imports. Standard library only: on the GPU
machine it runs before anything is built or installed.

Usage:
  python3 tools/gpu_sources.py prepare TARBALL_DIR SOURCES_DIR
  python3 tools/gpu_sources.py unpack SOURCES_DIR BUILD_DIR
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Package:
    tarball: str
    """File name of the upstream source tarball."""
    top: str
    """The directory it unpacks to; ``setup.py build_ext --inplace`` builds there."""


PACKAGES = (
    Package("causal-conv1d-1.6.1-src.tar.gz", "causal-conv1d"),
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


def upstream_setup(tarball: Path, package: Package) -> str:
    """The text of ``package``'s setup.py inside ``tarball``."""
    with tarfile.open(tarball) as archive:
        member = archive.extractfile(f"{package.top}/setup.py")
        if member is None:
            raise ValueError(f"{tarball} has no {package.top}/setup.py")
        return member.read().decode()


def prepare(tarball_dir: Path, sources_dir: Path) -> list[Path]:
    """Copy every package's tarball from ``tarball_dir`` to ``sources_dir``; return the copies.

    Each is checked first (present, with a setup.py that takes :func:`patch_setup`), so a
    missing or changed upstream source stops here with its name.
    """
    missing = [p.tarball for p in PACKAGES if not (tarball_dir / p.tarball).is_file()]
    if missing:
        raise FileNotFoundError(f"{tarball_dir} lacks {', '.join(missing)}")
    for package in PACKAGES:
        patch_setup(upstream_setup(tarball_dir / package.tarball, package))
    sources_dir.mkdir(parents=True, exist_ok=True)
    return [Path(shutil.copyfile(tarball_dir / p.tarball, sources_dir / p.tarball)) for p in PACKAGES]


def unpack(sources_dir: Path, build_dir: Path) -> list[Path]:
    """Extract each tarball of ``sources_dir`` into ``build_dir`` with its setup.py patched,
    and unzip the einops wheel into ``build_dir/site``; return the package directories.

    A package directory already unpacked from the same tarball is kept, with the objects
    of an earlier build in it: rerun on the same machine, ninja recompiles nothing.
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
        if not (stamp.is_file() and stamp.read_text() == package.tarball):
            shutil.rmtree(target, ignore_errors=True)
            with tarfile.open(sources_dir / package.tarball) as archive:
                archive.extractall(build_dir, filter="data")
            setup = target / "setup.py"
            setup.write_text(patch_setup(setup.read_text()))
            stamp.write_text(package.tarball)
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

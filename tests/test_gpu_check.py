"""The GPU check's CPU side (issues 21, 27 and 38): the prepare step, the sm_90 patch of
the upstream setup.py files, the paper-scale estimates (one job at a time, and K at once),
the benchmarks' exit status when their rows fail, and tools/gpu_check.sh's control flow
and deadline in dry runs where the packages the GPU machine lacks cannot be imported; the
dry run runs the throughput benchmark at K = 1 and 2.

The upstream tarballs are not part of the repository: the tests on the real sources run
where tools/gpu_prepare.sh has filled .gpu/sources; the others use small stand-ins made
here. The last two tests build a venv holding only the GPU machine's packages (a few
minutes, a package index needed) and run only with STATELAYERS_GPU_ENV=1.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import pytest
from conftest import CUDA_SKIP

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tools"), str(REPO / "benchmarks")]
import gpu_sources  # noqa: E402
import gpu_step  # noqa: E402
import gpu_throughput  # noqa: E402

ABSENT_ON_THE_GPU_MACHINE = ("snakemake", "concept_erasure", "datasets", "numba")
GPU_MACHINE_PACKAGES = (  # README of the lent machine; torch is this machine's local CPU wheel
    "torch==2.13.0",
    "transformers==5.17.0",
    "triton==3.6.*",
    "numpy",
    "pandas",
    "pyarrow",
    "scikit-learn",
    "scipy",
    "matplotlib",
    "pytest",
)
STAND_IN_SETUP = """import os
if not os.getenv("SKIP_CUDA_BUILD"):
    cc_flag = []
    cc_flag.append("-gencode")
    cc_flag.append("arch=compute_80,code=sm_80")
    cc_flag.append("-gencode")
    cc_flag.append("arch=compute_90,code=sm_90")

    # HACK: The compiler flag -D_GLIBCXX_USE_CXX11_ABI is set to be the same as
    extra_compile_args = {"nvcc": ["-O3"] + cc_flag}
    sources = ["csrc/main.cpp", "csrc/causal_conv1d_fwd.cu", "csrc/causal_conv1d_bwd.cu"]
"""
SPLITS = [split for package in gpu_sources.PACKAGES for split in package.splits]
SM90 = ["-gencode", "arch=compute_90,code=sm_90"]
BLOCKER = f"""import importlib.abc, sys

class Absent(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {ABSENT_ON_THE_GPU_MACHINE!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}} (not on the GPU machine)")

sys.meta_path.insert(0, Absent())
"""
# Runs each setup.py given with setuptools.setup() recording its arguments, under a CUDA
# 13.0 that a fake nvcc reports (this CPU torch has no CUDA); prints the extension's nvcc
# flags and sources.
EXTENSION = """import json, os, runpy, sys, setuptools, torch, torch.utils.cpp_extension as cpp
torch.version.cuda, cpp.CUDA_HOME = "13.0", sys.argv[1]
for directory in sys.argv[2:]:
    os.chdir(directory)
    arguments = {}
    setuptools.setup = lambda **kwargs: arguments.update(kwargs)
    sys.argv = ["setup.py", "build_ext"]
    runpy.run_path("setup.py", run_name="__main__")
    [extension] = arguments["ext_modules"]
    print(json.dumps({"nvcc": extension.extra_compile_args["nvcc"], "sources": extension.sources}))
"""


def add(archive: tarfile.TarFile, name: str, text: str) -> None:
    data = text.encode()
    info = tarfile.TarInfo(name)
    info.size = len(data)
    archive.addfile(info, io.BytesIO(data))


def stand_in_source(instantiations: int) -> str:
    """A kernel file laid out as causal-conv1d's: templates, then their explicit instantiations."""
    signature = "(Params &params, cudaStream_t stream)"
    template = f"#include \"kernel.h\"\n\ntemplate<int k>\nvoid launch{signature} {{}}\n\n"
    return template + "".join(f"template void launch<{i}>{signature};\n" for i in range(instantiations))


def instantiations(text: str) -> list[str]:
    return [line for line in text.splitlines() if gpu_sources.INSTANTIATION.match(line)]


def stand_in_tarballs(directory: Path, setup: str = STAND_IN_SETUP) -> Path:
    """``directory`` holding a tarball per package, named and laid out as upstream's."""
    directory.mkdir(parents=True, exist_ok=True)
    for package in gpu_sources.PACKAGES:
        with tarfile.open(directory / package.tarball, "w:gz") as archive:
            add(archive, f"{package.top}/setup.py", setup)
            for split in package.splits:
                add(archive, f"{package.top}/{split.source}", stand_in_source(split.instantiations))
    return directory


def stand_in_sources(directory: Path) -> Path:
    """What tools/gpu_prepare.sh leaves: the tarballs and an einops wheel."""
    gpu_sources.prepare(stand_in_tarballs(directory / "upstream"), directory / "sources")
    with zipfile.ZipFile(directory / "sources" / "einops-0.8.2-py3-none-any.whl", "w") as wheel:
        wheel.writestr("einops/__init__.py", "")
    return directory / "sources"


def test_the_patch_leaves_sm90_alone_in_the_arch_list_just_before_the_marker():
    patched = gpu_sources.patch_setup(STAND_IN_SETUP)
    namespace: dict = {}
    exec(patched, namespace)
    assert namespace["extra_compile_args"] == {"nvcc": ["-O3", *SM90]}
    assert patched.splitlines()[8] == "    " + gpu_sources.HOPPER_ONLY  # the marker's indentation


@pytest.mark.parametrize("marker_lines", [0, 2])
def test_the_patch_refuses_a_setup_py_without_exactly_one_marker(marker_lines):
    marker = "    # HACK: The compiler flag -D_GLIBCXX_USE_CXX11_ABI is set to be the same as\n"
    text = STAND_IN_SETUP.replace(marker, marker * marker_lines)
    with pytest.raises(ValueError, match=f"found {marker_lines}"):
        gpu_sources.patch_setup(text)


def test_prepare_copies_checked_tarballs_and_stops_at_a_missing_or_unpatchable_one(tmp_path):
    upstream = stand_in_tarballs(tmp_path / "upstream")
    copies = gpu_sources.prepare(upstream, tmp_path / "sources")
    assert [p.read_bytes() for p in copies] == [
        (upstream / p.tarball).read_bytes() for p in gpu_sources.PACKAGES
    ]
    (upstream / gpu_sources.PACKAGES[1].tarball).unlink()
    with pytest.raises(FileNotFoundError, match=re.escape(gpu_sources.PACKAGES[1].tarball)):
        gpu_sources.prepare(upstream, tmp_path / "elsewhere")
    changed = stand_in_tarballs(tmp_path / "changed", setup="cc_flag = []\n")
    with pytest.raises(ValueError, match="found 0"):
        gpu_sources.prepare(changed, tmp_path / "elsewhere")
    assert not (tmp_path / "elsewhere").exists()


def test_each_part_is_the_file_with_its_share_of_the_instantiations_and_together_they_hold_each_once():
    split = gpu_sources.Split("csrc/kernels.cu", instantiations=7, parts=3)
    upstream = stand_in_source(7)
    parts = gpu_sources.split_text(upstream, split)
    assert [instantiations(part) for part in parts] == [instantiations(upstream)[i::3] for i in range(3)]
    for index, part in enumerate(parts, start=1):
        assert len(part.splitlines()) == len(upstream.splitlines())  # messages keep upstream's line numbers
        for kept, line in zip(part.splitlines(), upstream.splitlines()):
            other = rf"// compiled in kernels_part0[^{index}]\.cu: {re.escape(line)}"  # another part's
            assert kept == line or re.fullmatch(other, kept)
    with pytest.raises(ValueError, match="expected 7 explicit instantiations in csrc/kernels.cu, found 6"):
        gpu_sources.split_text(stand_in_source(6), split)


def test_setup_py_compiles_the_parts_in_place_of_the_split_file_and_refuses_another_listing():
    split = gpu_sources.Split("csrc/kernels.cu", instantiations=4, parts=2)
    setup = 'sources = ["csrc/main.cpp", "csrc/kernels.cu", "csrc/update.cu"]\n'
    namespace: dict = {}
    exec(gpu_sources.patch_sources(setup, split), namespace)
    assert namespace["sources"] == ["csrc/main.cpp", *gpu_sources.part_paths(split), "csrc/update.cu"]
    assert gpu_sources.part_paths(split) == ["csrc/kernels_part01.cu", "csrc/kernels_part02.cu"]
    for listed in (0, 2):
        with pytest.raises(ValueError, match=f"found {listed}"):
            listing = setup.replace('"csrc/kernels.cu", ', '"csrc/kernels.cu", ' * listed)
            gpu_sources.patch_sources(listing, split)


def test_unpack_patches_a_copy_and_keeps_an_earlier_build_of_the_same_tarball(tmp_path):
    sources, build = stand_in_sources(tmp_path), tmp_path / "build"
    directories = gpu_sources.unpack(sources, build)
    assert directories == [build / p.top for p in gpu_sources.PACKAGES]
    for directory, package in zip(directories, gpu_sources.PACKAGES):
        setup = (directory / "setup.py").read_text()
        assert gpu_sources.HOPPER_ONLY in setup
        for split in package.splits:
            parts = gpu_sources.part_paths(split)
            assert all((directory / part).is_file() for part in parts) and f'"{split.source}"' not in setup
            assert ", ".join(f'"{part}"' for part in parts) in setup
        (directory / "built.so").write_text("an earlier build")
    assert (build / "site" / "einops" / "__init__.py").is_file()
    gpu_sources.unpack(sources, build)
    assert all((directory / "built.so").is_file() for directory in directories)
    (directories[0] / gpu_sources.UNPACKED_FROM).write_text(gpu_sources.PACKAGES[0].tarball)  # other patches
    gpu_sources.unpack(sources, build)
    assert not (directories[0] / "built.so").exists() and (directories[1] / "built.so").is_file()
    assert (build / "mamba" / "setup.py").read_text().count(gpu_sources.HOPPER_ONLY) == 1
    for wheel in sources.glob("einops-*.whl"):
        wheel.unlink()
    with pytest.raises(FileNotFoundError, match="run tools/gpu_prepare.sh DIR"):
        gpu_sources.unpack(sources, build)


PREPARED = REPO / ".gpu" / "sources"


needs_prepared = pytest.mark.skipif(
    not all((PREPARED / p.tarball).is_file() for p in gpu_sources.PACKAGES),
    reason="the upstream tarballs: run tools/gpu_prepare.sh DIR first",
)


@needs_prepared
def test_the_patched_upstream_setup_py_files_give_nvcc_sm90_only_and_compile_the_parts(tmp_path):
    """The real setup.py files, run up to setup(); the unpatched ones show the harness sees
    their whole architecture list and their own sources."""
    gpu_sources.unpack(PREPARED, tmp_path / "patched")
    for package in gpu_sources.PACKAGES:
        with tarfile.open(PREPARED / package.tarball) as archive:
            archive.extractall(tmp_path / "upstream", filter="data")
    nvcc = tmp_path / "cuda" / "bin" / "nvcc"
    nvcc.parent.mkdir(parents=True)
    nvcc.write_text("#!/bin/sh\necho 'Cuda compilation tools, release 13.0, V13.0.48'\n")
    nvcc.chmod(0o755)
    directories = [tmp_path / copy / p.top for copy in ("patched", "upstream") for p in gpu_sources.PACKAGES]
    result = subprocess.run(
        [sys.executable, "-c", EXTENSION, str(nvcc.parents[1]), *map(str, directories)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    extensions = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    flags = [extension["nvcc"] for extension in extensions]
    gencodes = [[f for i, f in enumerate(line) if "-gencode" in (f, line[i - 1])] for line in flags]
    assert gencodes[:2] == [SM90, SM90]
    for unpatched in gencodes[2:]:
        assert len(unpatched) >= 2 * 9 and "arch=compute_90,code=sm_90" in unpatched
    packages = len(gpu_sources.PACKAGES)
    for package, patched, upstream in zip(gpu_sources.PACKAGES, extensions, extensions[packages:]):
        split = {s.source: gpu_sources.part_paths(s) for s in package.splits}
        assert set(split) <= set(upstream["sources"])
        assert patched["sources"] == [s for f in upstream["sources"] for s in split.get(f, [f])]
        assert all((tmp_path / "patched" / package.top / source).is_file() for source in patched["sources"])


@needs_prepared
def test_the_upstream_files_split_into_parts_that_hold_each_instantiation_once_and_preprocess(tmp_path):
    """Every part of a split upstream file holds its share of the explicit instantiations,
    together each one once, and the rest of the file unchanged. Where nvcc is installed,
    every part also preprocesses for sm_90 with torch's headers (a CPU wheel of torch lacks
    the one header that CMake generates for c10's CUDA build; it is written here as a CUDA
    build writes it, a single define)."""
    parts = []
    for package, directory in zip(gpu_sources.PACKAGES, gpu_sources.unpack(PREPARED, tmp_path / "build")):
        for split in package.splits:
            upstream = (directory / split.source).read_text()
            paths = [directory / part for part in gpu_sources.part_paths(split)]
            texts = [path.read_text() for path in paths]
            held = [instantiations(text) for text in texts]
            assert all(held) and sorted(sum(held, [])) == sorted(instantiations(upstream))
            assert len(instantiations(upstream)) == split.instantiations == len(set(instantiations(upstream)))
            for text in texts:
                unchanged = [line for line in text.splitlines() if not line.startswith("// compiled in ")]
                assert unchanged == [line for line in upstream.splitlines() if line in unchanged]
                assert len(text.splitlines()) == len(upstream.splitlines())
            parts += paths
    if shutil.which("nvcc") is None:
        pytest.skip("no nvcc here to preprocess the parts with")
    from torch.utils.cpp_extension import include_paths

    generated = tmp_path / "generated" / "c10" / "cuda" / "impl" / "cuda_cmake_macros.h"
    generated.parent.mkdir(parents=True)
    generated.write_text("#pragma once\n#define C10_CUDA_BUILD_SHARED_LIBS\n")
    includes = [f"-I{path}" for path in (*include_paths(), generated.parents[3])]
    for part in parts:
        result = subprocess.run(
            ["nvcc", "-E", "-std=c++17", "-arch=sm_90", *includes, str(part), "-o", os.devnull],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 0, f"{part.name}: {result.stderr[-2000:]}"


def test_the_paper_estimate_sums_every_job_at_its_familys_speed():
    config = {
        "architectures": ["mamba", "mamba_noconv", "gru"],
        "tasks": ["parity", "s3"],
        "seeds": [0, 1, 2],
        "training": {"max_steps": 600, "overrides": {"gru": {"max_steps": 1200}}},
    }
    hours = gpu_step.paper_hours(config, {"mamba": 0.5, "gru": 0.1})
    assert hours == pytest.approx(6 * (600 * 0.5 * 2 + 1200 * 0.1) / 3600)
    with pytest.raises(KeyError):
        gpu_step.paper_hours(config, {"mamba": 0.5})


def test_the_estimate_at_k_divides_the_jobs_steps_by_k_at_each_familys_step_time_beside_the_others():
    config = {
        "architectures": ["mamba", "mamba_noconv", "gru"],
        "tasks": ["parity"],
        "seeds": [0, 1],
        "training": {"max_steps": 100, "overrides": {}},
    }
    results = [  # two processes: 0.3 s per Mamba step and 0.1 s per GRU step over both
        {
            "steps": {"mamba": 10, "gru": 20},
            "spent": {"mamba": 2.0, "gru": 1.0},
            "elapsed": 3.0,
            "rss_mib": 5,
        },
        {
            "steps": {"mamba": 10, "gru": 20},
            "spent": {"mamba": 4.0, "gru": 3.0},
            "elapsed": 7.0,
            "rss_mib": 9,
        },
    ]
    row = gpu_throughput.summary(2, results, config, ["mamba", "gru"], workers=4)
    assert (row["ms_mamba"], row["ms_gru"]) == pytest.approx((300, 100))
    assert row["steps_per_s"] == pytest.approx(30 / 3 + 30 / 7)  # each process's rate, added
    assert row["ms_per_step"] == pytest.approx(1e3 * (3 / 30 + 7 / 30) / 2)
    assert row["paper_hours"] == pytest.approx(2 * 100 * (0.3 * 2 + 0.1) / 3600 / 2)
    assert row["rss_mib"] == 9 and "gpu_reserved_mib" not in row


def test_the_checks_deadline_and_every_step_limit_fit_in_nine_minutes():
    """Every command runs under ``limited``, which cuts its limit to the time left before
    the deadline; a stopped command may take 5 s more to die (``timeout --kill-after=5``)."""
    text = (REPO / "tools" / "gpu_check.sh").read_text()
    limits = {
        name: int(value)
        for name, value in re.findall(r"^(LIMIT_\w+)=(?:\$\{GPU_CHECK_\w+:-)?(\d+)", text, re.MULTILINE)
    }
    [deadline] = map(int, re.findall(r"^DEADLINE=\$\{GPU_CHECK_DEADLINE:-(\d+)\}", text, re.MULTILINE))
    assert set(limits) >= {
        "LIMIT_BUILD",
        "LIMIT_TESTS",
        "LIMIT_BENCHMARK",
        "LIMIT_THROUGHPUT",
        "LIMIT_PROFILE",
    }
    assert max(limits.values()) <= deadline and deadline + 5 + 10 <= 540  # 10 s for the bookkeeping
    assert "timeout --kill-after=5" in text
    commands = re.findall(r'^\s*(?:step \S+ )?limited "\$(LIMIT_\w+)"', text, re.MULTILINE)
    assert len(commands) >= 9  # the tools, python, sources, build, kernels, tests, benchmarks, profile


DRY_RUN_TESTS = ["tests/test_backends.py", "tests/test_cuda_scan.py", "tests/test_cuda_smoke.py"]
"""The tests step's files in the suite's dry runs: every CUDA test, and torch-backend tests
beside them. The check's other files (test_conv1d, test_mamba_scan) run on CPU in the
suite itself; on the GPU machine they run within the check."""


def dry_run(
    tmp_path: Path, sources: Path, python: str = sys.executable, deadline: int | None = None
) -> tuple[int, dict[str, str], Path]:
    """Run ``tools/gpu_check.sh --dry-run`` with the GPU machine's missing packages blocked
    (and ``deadline`` seconds, if given); return its exit status, the status of each step
    and its output directory."""
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(BLOCKER)
    out = tmp_path / "out"
    env = {
        **os.environ,
        "PYTHON": python,
        "OUT": str(out),
        "GPU_SOURCES": str(sources),
        "GPU_BUILD": str(tmp_path / "build"),
        "PYTHONPATH": str(blocker),
        "GPU_CHECK_TESTS": " ".join(DRY_RUN_TESTS),
        **({"GPU_CHECK_DEADLINE": str(deadline)} if deadline else {}),
    }
    blocked = subprocess.run([python, "-c", "import datasets"], env=env, capture_output=True, text=True)
    assert "not on the GPU machine" in blocked.stderr  # the blocker is in force
    result = subprocess.run(
        [str(REPO / "tools" / "gpu_check.sh"), "--dry-run"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    summary = (out / "summary.txt").read_text().splitlines()
    steps = dict(re.match(r"(\S+)\s+(.*?)\s+\d+ s$", line).groups() for line in summary)
    return result.returncode, steps, out


def test_a_dry_run_builds_nothing_and_runs_every_other_step_without_the_missing_packages(tmp_path):
    status, steps, out = dry_run(tmp_path, stand_in_sources(tmp_path))
    assert status == 0, steps
    assert steps == {
        "machine": "ok",
        "sources": "ok",
        "build-causal-conv1d": "dry run: not built",
        "build-mamba": "dry run: not built",
        "no-kernels": "ok",
        "tests": "ok",
        "throughput": "ok",
        "benchmark": "ok",
        "profile": "skipped: no snakemake",  # as on the GPU machine
        "total": "0 step(s) failed",
    }
    for package in gpu_sources.PACKAGES:
        build = tmp_path / "build" / package.top
        assert f"would run in {build}: MAX_JOBS=" in (out / f"build-{package.top}.log").read_text()
        assert "setup.py build_ext --inplace" in (out / f"build-{package.top}.log").read_text()
        assert gpu_sources.HOPPER_ONLY in (build / "setup.py").read_text()
    kernels = (out / "no-kernels.log").read_text()
    assert "FAILED import selective_scan_cuda: ModuleNotFoundError" in kernels
    assert "modeling_mamba2.mamba2_split_conv1d_scan_combined: transformers" in kernels
    suite = ET.parse(out / "tests.xml").getroot().find("testsuite")
    assert suite.get("errors") == suite.get("failures") == "0"
    skips = [case.find("skipped") for case in suite.iter("testcase") if case.find("skipped") is not None]
    assert len(skips) >= 14 and all(skip.get("message").startswith(CUDA_SKIP) for skip in skips)
    assert int(suite.get("tests")) > len(skips)  # the torch-backend tests ran
    rows = list(csv.DictReader((out / "gpu_step.csv").open()))
    assert [(r["arch"], r["backend"]) for r in rows] == [(a, b or "") for a, b in gpu_step.ROWS]
    for row in rows:
        assert (
            row["status"].startswith("unavailable")
            if row["backend"] == "cuda"
            else float(row["ms_per_step"]) > 0
        )
    assert "h on one GPU with Mamba and Mamba-2 on torch" in (out / "benchmark.log").read_text()
    concurrent = list(csv.DictReader((out / "gpu_throughput.csv").open()))
    assert [int(row["k"]) for row in concurrent] == [1, 2][: len(os.sched_getaffinity(0))]
    for row in concurrent:
        assert float(row["steps_per_s"]) > 0 and float(row["paper_hours"]) > 0
        assert all(
            float(row[f"ms_{family}"]) > 0 for family in ("transformer", "mamba", "mamba2", "lstm", "gru")
        )
    assert "best K = " in (out / "throughput.log").read_text()


RECORDING_PYTHON = """#!/usr/bin/env bash
# The tests step's pytest and the two benchmarks: recorded, not run (the first dry run runs
# them for real); every other command runs in {python}.
case " $* " in
    *" -m pytest "* | *" benchmarks/gpu_step.py "* | *" benchmarks/gpu_throughput.py "*)
        echo "$*" >>"{record}"; exit 0 ;;
esac
exec "{python}" "$@"
"""


def test_a_dry_run_without_sources_fails_those_steps_and_still_runs_the_tests_and_the_benchmarks(tmp_path):
    """Control flow: the source and build steps fail, every later step still starts. The
    machine, source and kernel-import steps run for real; the tests and benchmarks, which
    the dry run above runs, are recorded by a stand-in python."""
    (tmp_path / "empty").mkdir()
    python, record = tmp_path / "python", tmp_path / "recorded.txt"
    python.write_text(RECORDING_PYTHON.format(python=sys.executable, record=record))
    python.chmod(0o755)
    status, steps, out = dry_run(tmp_path, tmp_path / "empty", python=str(python))
    assert status == 1
    assert steps["sources"] == "FAILED (exit 1)" and steps["build"] == "FAILED (no sources)"
    assert "run tools/gpu_prepare.sh DIR" in (out / "sources.log").read_text()
    assert "FAILED import selective_scan_cuda: ModuleNotFoundError" in (out / "no-kernels.log").read_text()
    assert steps["no-kernels"] == steps["tests"] == steps["throughput"] == steps["benchmark"] == "ok"
    assert steps["total"] == "2 step(s) failed"
    started = record.read_text().splitlines()
    assert [line.split()[0:2] for line in started] == [
        ["-m", "pytest"],
        ["benchmarks/gpu_step.py", "--device"],
        ["benchmarks/gpu_throughput.py", "--device"],
    ]
    assert all(name in started[0] for name in DRY_RUN_TESTS)


SLOW_TESTS_PYTHON = """#!/usr/bin/env bash
# The tests step's pytest outlasts any deadline; the machine check's import and the kernel
# check answer at once (the latter as where nothing was built: no kernels); every other
# command (the kernel settings, the sources, the snakemake probe) runs in {python}.
case " $* " in
    *" -m pytest "*) exec sleep 600 ;;
    *" tools/gpu_kernels.py "*) exit 3 ;;
    *"import sys, torch, transformers"*) echo "a stand-in for the machine's python"; exit 0 ;;
esac
exec "{python}" "$@"
"""


def test_at_the_deadline_the_running_step_is_stopped_and_the_later_ones_fail_at_once(tmp_path):
    """The steps before the tests take well under a second even on a busy machine (none
    imports torch here), the tests step runs until the deadline stops it: the same steps
    fail however loaded the machine is, with 20 s of slack either side."""
    python = tmp_path / "python"
    python.write_text(SLOW_TESTS_PYTHON.format(python=sys.executable))
    python.chmod(0o755)
    deadline = 20
    status, steps, out = dry_run(tmp_path, stand_in_sources(tmp_path), python=str(python), deadline=deadline)
    assert status == 1
    summary = (out / "summary.txt").read_text()
    order = [line.split()[0] for line in summary.splitlines()]
    seconds = {name: int(s) for name, s in re.findall(r"^(\S+)\s.*?(\d+) s$", summary, re.MULTILINE)}
    assert order[-2:] == ["profile", "total"] and steps["profile"] == "skipped: no snakemake"
    assert seconds["total"] <= deadline + 5 + 3  # the kill's grace period, and the bookkeeping
    stopped = [name for name in order if steps[name] == "FAILED (timed out)"]
    assert stopped == ["tests", "benchmark", "throughput"]
    assert all(steps[name] in ("ok", "dry run: not built") for name in order[: order.index("tests")])
    assert seconds["tests"] >= deadline - 5  # it ran until the deadline stopped it
    for name in stopped[1:]:
        assert f"no time left before the {deadline} s deadline" in (out / f"{name}.log").read_text()
    assert steps["total"] == "3 step(s) failed"


def junit_report(tmp_path: Path, *tests: str) -> Path:
    """The JUnit report of pytest running ``tests`` with numba, absent on the GPU machine, blocked."""
    blocker = tmp_path / "blocker"
    blocker.mkdir(exist_ok=True)
    (blocker / "sitecustomize.py").write_text(BLOCKER)
    report = tmp_path / "report.xml"
    subprocess.run(
        [sys.executable, "-m", "pytest", "-o", "addopts=", "-p", "no:cacheprovider", "-q",
         f"--junitxml={report}", *tests],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(blocker)},
        capture_output=True,
        timeout=300,
        check=True,
    )  # fmt: skip
    return report


def cuda_skips(report: Path) -> subprocess.CompletedProcess:
    """The tests step's verdict on ``report``: tools/gpu_check.sh --cuda-skips."""
    return subprocess.run(
        [str(REPO / "tools" / "gpu_check.sh"), "--cuda-skips", str(report)],
        capture_output=True,
        text=True,
        timeout=60,
    )


NUMBA_TEST = "tests/test_mamba_scan.py::test_mamba2_chunk_scan_matches_reference_and_picks_its_form_by_length"
CUDA_TEST = "tests/test_cuda_scan.py"


def test_the_tests_step_fails_on_a_skip_for_want_of_cuda_and_not_on_one_for_want_of_numba(tmp_path):
    """A real pytest report: the numba test skips (numba blocked, as on the GPU machine) beside
    a CUDA test that skips here for want of a GPU. With the CUDA test in it the step fails
    and names that test alone; with only the numba skip left it passes."""
    report = junit_report(tmp_path, NUMBA_TEST, CUDA_TEST)
    tree = ET.parse(report)
    suite = tree.getroot().find("testsuite")
    skipped = {
        case.get("classname"): case.find("skipped").get("message")
        for case in suite.iter("testcase")
        if case.find("skipped") is not None
    }
    assert set(skipped) == {"tests.test_mamba_scan", "tests.test_cuda_scan"}
    assert "numba" in skipped["tests.test_mamba_scan"]
    result = cuda_skips(report)
    assert result.returncode == 1
    assert result.stdout.startswith("1 test(s) skipped for want of CUDA or the kernels")
    assert "test_cuda_scan" in result.stdout and "numba" not in result.stdout
    for case in list(suite.iter("testcase")):
        if case.get("classname") == "tests.test_cuda_scan":
            suite.remove(case)
    tree.write(report)
    result = cuda_skips(report)
    assert result.returncode == 0
    assert result.stdout.strip() == "0 test(s) skipped for want of CUDA or the kernels"


def raising(*args, **kwargs):
    raise RuntimeError("pin_memory on a CUDA tensor")


def test_the_step_benchmark_exits_nonzero_when_every_row_fails(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(gpu_step, "step_seconds", raising)
    assert gpu_step.main(["--device", "cpu", "--csv", str(tmp_path / "rows.csv")]) == 1
    rows = list(csv.DictReader((tmp_path / "rows.csv").open()))
    assert all(row["status"].startswith(("failed: RuntimeError", "unavailable")) for row in rows)
    assert capsys.readouterr().err.strip() == "FAILED: mamba torch, mamba2 torch, transformer, lstm, gru"


def test_the_step_benchmark_exits_nonzero_when_one_row_fails_and_times_the_others(monkeypatch, capsys):
    def step_seconds(arch, backend, *args):
        if arch == "lstm":
            raise RuntimeError("cuDNN")
        return 1000, 0.01

    monkeypatch.setattr(gpu_step, "step_seconds", step_seconds)
    assert gpu_step.main(["--device", "cpu"]) == 1
    out, err = capsys.readouterr()
    assert "failed: RuntimeError: cuDNN" in out and "h on one GPU with Mamba and Mamba-2 on torch" not in out
    assert err.strip() == "FAILED: lstm"
    monkeypatch.setattr(gpu_step, "step_seconds", lambda *args: (1000, 0.01))
    assert gpu_step.main(["--device", "cpu"]) == 0  # the cuda rows are unavailable here, not failed


def test_the_throughput_benchmark_exits_nonzero_when_its_processes_fail(tmp_path, capsys):
    """Every process fails building its models (a family that does not exist): the benchmark
    stops them all and says why, with exit status 1, rather than hanging or reporting."""
    arguments = ["--device", "cpu", "--ks", "1", "--seconds", "0", "--block", "1", "--warmup", "0"]
    assert gpu_throughput.main([*arguments, "--families", "no-such-family"]) == 1
    err = capsys.readouterr().err
    assert "FAILED (no K measured): process 0 failed:" in err and "no-such-family" in err


needs_gpu_env = pytest.mark.skipif(
    os.environ.get("STATELAYERS_GPU_ENV") != "1",
    reason="builds a venv of the GPU machine's packages (minutes): set STATELAYERS_GPU_ENV=1",
)


@pytest.fixture(scope="module")
def gpu_machine_python(tmp_path_factory) -> str:
    """The python of a venv holding only the GPU machine's packages (statelayers not among them)."""
    venv = tmp_path_factory.mktemp("gpu-machine") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    subprocess.run(
        [python, "-m", "pip", "install", "--quiet", *GPU_MACHINE_PACKAGES], check=True, timeout=1200
    )
    names = (*ABSENT_ON_THE_GPU_MACHINE, "statelayers")
    present = subprocess.run(
        [python, "-c", f"import importlib.util as u; print([m for m in {names!r} if u.find_spec(m)])"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert present.stdout.strip() == "[]"  # statelayers too: only src/ on PYTHONPATH provides it
    return python


@needs_gpu_env
def test_the_dry_run_passes_in_a_venv_holding_only_the_gpu_machines_packages(gpu_machine_python, tmp_path):
    status, steps, _ = dry_run(tmp_path, stand_in_sources(tmp_path), python=gpu_machine_python)
    assert status == 0, steps


@needs_gpu_env
@needs_prepared
def test_with_the_gpu_machines_packages_every_kernel_function_binds_once_the_compiled_modules_import(
    gpu_machine_python, tmp_path
):
    """The packages from the prepared sources, with their two compiled modules stubbed by
    empty ones: everything else mamba-ssm and causal-conv1d import is on that machine
    (einops from .gpu/sources), and transformers binds each function to them."""
    directories = gpu_sources.unpack(PREPARED, tmp_path / "build")
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    for module in ("selective_scan_cuda", "causal_conv1d_cuda"):
        (stubs / f"{module}.py").write_text("")
    path = [REPO / "src", *directories, tmp_path / "build" / gpu_sources.SITE, stubs]
    result = subprocess.run(
        [gpu_machine_python, str(REPO / "tools" / "gpu_kernels.py")],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(map(str, path))},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "modeling_mamba2.mamba2_split_conv1d_scan_combined: mamba_ssm" in result.stdout

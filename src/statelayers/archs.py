"""Architecture names, importable without torch (the Snakefile reads them at parse time)."""

FAMILIES = ("transformer", "mamba", "mamba2", "lstm", "gru")
"""The study's five architecture families."""

NO_CONV = {"mamba_noconv": "mamba", "mamba2_noconv": "mamba2"}
"""Conv1D-ablated twins: the base family with every block's Conv1D fixed to identity,
built with the base family's options and trained with its settings."""

ARCHS = (*FAMILIES, *NO_CONV)


def base_arch(arch: str) -> str:
    """The family an architecture is built from (itself for the five families)."""
    return NO_CONV.get(arch, arch)

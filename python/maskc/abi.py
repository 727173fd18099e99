"""The generated kernels' ABI as this package reads it.

The one definition of the ABI lives in Go (package hipsrc) and reaches Python
only through the manifest that `maskc compile` writes beside the kernels
(schema: hipsrc/MANIFEST.md); nothing here restates a struct layout, a grid
rule or a shared-memory size. Until that manifest exists, a block that needs
the generated kernel raises NotImplementedError naming it.
"""
from .diagnostics import MaskcError

__all__ = ["BufferSpec", "MANIFEST_FILE", "manifest_missing"]

#: The ABI manifest's file name in a compile output directory.
MANIFEST_FILE = "manifest.json"


class BufferSpec:
    """One captured tensor of a kernel: its .flex name, its MaskcBuffers
    slot, element type, declared extents (.flex expressions over B, H, HKV,
    Q, KV) and whether it is a `segments` buffer."""

    __slots__ = ("name", "slot", "dtype", "dims", "segments")

    def __init__(self, name, slot, dtype, dims, segments=False):
        if not dims:
            raise MaskcError("buffer %s has no extents" % name)
        self.name, self.slot, self.dtype, self.dims, self.segments = name, int(slot), dtype, list(dims), bool(segments)

    def __repr__(self):
        return "BufferSpec(%s: %s%s slot %d)" % (self.name, self.dtype, self.dims, self.slot)


def manifest_missing(entry_dir):
    """The NotImplementedError raised when a compile output has no ABI
    manifest: the launcher cannot know the kernel's argument layout."""
    return NotImplementedError(
        "the generated-kernel launcher reads the ABI manifest %s/%s (hipsrc/MANIFEST.md), which this maskc "
        "binary does not write yet; only Turbo and SDPA dispatch can run" % (entry_dir, MANIFEST_FILE))

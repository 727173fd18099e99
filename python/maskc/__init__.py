"""maskc for Python: compile .flex attention masks and run them from PyTorch.

The torch-facing API is maskc.torch (`import maskc.torch as mt`);
maskc.transformers registers attn_implementation="maskc" with Hugging Face
transformers. This top-level package imports no torch and holds the parts
a build step needs: running the maskc binary through the content-addressed
cache (maskc.cache.compile_flex), reading its plan (maskc.plan) and its
diagnostics (maskc.diagnostics.MaskcError).
"""
from .diagnostics import Diagnostic, MaskcError

__all__ = ["Diagnostic", "MaskcError", "__version__"]

#: The package version; the wheel builder writes the same one into the wheel's metadata.
__version__ = "0.1.0"

"""A GPU script's run log: one JSON object per line, printed and appended to a file.

gpu/bench.py, bench_ext.py, bwd_bench.py and dense_bench.py write their
results through it, so each line on the terminal is the line in the log that
gpu/NOTES.md's figures are read from.
"""
import json


class JsonLog:
    """Writes emit(**fields) as one JSON line to stdout and to a file, flushed at once.

    mode is open()'s: "w" starts the file afresh, "a" appends to it.
    """

    def __init__(self, path, mode="w"):
        if mode not in ("w", "a"):
            raise ValueError("JsonLog mode must be 'w' or 'a', not %r" % (mode,))
        self._file = open(path, mode)

    def __call__(self, **fields):
        line = json.dumps(fields)
        print(line, flush=True)
        self._file.write(line + "\n")
        self._file.flush()

    def close(self):
        """Closes the file; later calls raise."""
        self._file.close()

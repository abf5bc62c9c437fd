"""convbench analysis: validate result records, apply the checks, report ratios or refuse."""

__version__ = "0.1.0"

"""convbench analysis: validate result records, apply the gates, report ratios or refuse."""

__version__ = "0.1.0"

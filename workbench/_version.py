"""The workbench's version, in the one low module every layer may read."""

__version__ = "0.1.0"

"""report-claims: the quantified claims of large-model training reports, checked, with sources."""

__version__ = "0.1.0"

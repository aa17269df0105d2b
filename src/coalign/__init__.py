"""coalign: optimize compound AI systems with locally aligned rewards."""

__version__ = "0.1.0"

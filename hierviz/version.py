"""hierviz's version, said once: the package facade and the HTML report's generator tag read it."""

__version__ = "0.1.0"

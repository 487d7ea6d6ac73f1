"""pi-server: sees and steers pi's session trees from inside an editor."""

__version__ = "0.1.0"

"""llamon Playground daemon: owns history, background runs, event fan-out and the Host."""

__version__ = "0.1.0"

"""eventfold core: settings, the run config, the LLM client and packaged models; imports nothing above it."""

__version__ = "0.1.0"

"""eventfold core: settings, the LLM client, packaged models and the CLI wiring shared by all packages."""

__version__ = "0.1.0"

"""CLI sub-commands, one module per command group; `app.py` assembles them."""

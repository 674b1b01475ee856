"""Built-in tools for tether."""

"""Model Context Protocol for tether."""

"""File tools confined to a workspace root: read, write, edit, list, glob, grep."""

from __future__ import annotations

from .files import edit_file, read_file, write_file
from .listing import glob, list_dir
from .search import grep
from .workspace import Workspace

__all__ = ["Workspace", "edit_file", "glob", "grep", "list_dir", "read_file", "write_file"]

"""The names a turn checks without loading the skills themselves (docs/architecture.md, "The
first run")."""

from __future__ import annotations

__all__ = ["READ_SKILL_TOOL", "SKILL_FILE"]

SKILL_FILE = "SKILL.md"
"""The file that makes a folder a skill (its front matter names and describes it)."""
READ_SKILL_TOOL = "read_skill"
"""The tool a turn with skills offers to read them."""

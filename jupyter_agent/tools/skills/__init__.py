"""Agent skills: folders in the Agent Skills layout, read by the agent when it needs them.

A skill is a folder with a ``SKILL.md`` whose front matter names it and says what it is for::

    ---
    name: pdf-forms
    description: Fill PDF forms with pypdf; use when the task mentions a PDF form.
    ---
    (the instructions, then any files beside SKILL.md: scripts, references, templates)

Only the names and descriptions go into the system prompt (:func:`skills_prompt`); the agent
reads a skill's full text, and its files, with the read-only ``read_skill`` tool
(:func:`read_skill_tool`). A file is read without following a symlink out of the skill's
folder (``tools/builtin/_safeopen.py``), at most :data:`MAX_SKILL_FILE_CHARS` characters of it,
and its text is secret-masked like every tool output (docs/behaviour.md §5.5).

Importing this package loads none of its modules (PEP 562): a turn loads the skill folders'
code only when it has skills.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...base.lazy import lazy_exports

if TYPE_CHECKING:
    from .folders import (
        MAX_SKILL_FILE_CHARS,
        MAX_SKILL_FILES_LISTED,
        MAX_SKILLS_LISTED,
        MAX_SKILLS_PROMPT_CHARS,
        Skill,
        listed_skills,
        load_skills,
        read_skill_tool,
        skills_left_out_notice,
        skills_prompt,
    )
    from .names import READ_SKILL_TOOL, SKILL_FILE

__all__ = ["Skill", "load_skills", "skills_prompt", "read_skill_tool", "READ_SKILL_TOOL",
           "MAX_SKILL_FILE_CHARS", "MAX_SKILL_FILES_LISTED", "SKILL_FILE", "MAX_SKILLS_LISTED",
           "MAX_SKILLS_PROMPT_CHARS", "listed_skills", "skills_left_out_notice"]

_LAZY = {
    "MAX_SKILL_FILE_CHARS": "folders",
    "MAX_SKILL_FILES_LISTED": "folders",
    "Skill": "folders",
    "load_skills": "folders",
    "read_skill_tool": "folders",
    "skills_prompt": "folders",
    "MAX_SKILLS_LISTED": "folders",
    "MAX_SKILLS_PROMPT_CHARS": "folders",
    "listed_skills": "folders",
    "skills_left_out_notice": "folders",
    "READ_SKILL_TOOL": "names",
    "SKILL_FILE": "names",
}

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)

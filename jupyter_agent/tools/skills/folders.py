"""Skill folders read from disk, the system prompt's list of them, and the ``read_skill``
tool (the package doc says what a skill is)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ...base.errors import ParameterError, ToolError
from ...base.secrets import mask
from ..builtin import SNIFF_BYTES, looks_binary, open_regular
from ..builtin.workspace import Workspace, WorkspaceError
from ..registry import AnyTool, Tool
from .names import READ_SKILL_TOOL, SKILL_FILE

__all__ = ["Skill", "load_skills", "skills_prompt", "read_skill_tool", "MAX_SKILL_FILE_CHARS",
           "MAX_SKILL_FILES_LISTED", "MAX_SKILLS_LISTED", "MAX_SKILLS_PROMPT_CHARS",
           "listed_skills", "skills_left_out_notice"]

MAX_SKILL_FILE_CHARS = 60_000
"""Characters of one skill file the agent gets (the rest is cut, and it is told so)."""
MAX_SKILL_FILES_LISTED = 200
"""Files of one skill listed with its text."""
MAX_SKILLS_LISTED = 100
"""Skills named in the system prompt at most (the others can still be read by name)."""
MAX_SKILLS_PROMPT_CHARS = 20_000
"""Characters of the system prompt's skill listing at most (3,000 skills made 3.1 MB)."""
_NAMES_SHOWN = 5
_MAX_FRONT_MATTER_BYTES = 16_384
_NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
_MAX_NAME = 64
_MAX_DESCRIPTION = 1024


@dataclass(frozen=True)
class Skill:
    """One skill folder: its name and description (from ``SKILL.md``) and where it is."""

    name: str
    description: str
    folder: Path
    explicit: bool = False
    """Named by its own folder (not found inside a folder of skills): listed first."""


def _bad(path: Path, why: str) -> ParameterError:
    return ParameterError(f"skills: {path}: {why}", parameters=("skills",))


def _front_matter(path: Path) -> dict[str, str]:
    """The ``key: value`` lines between the leading ``---`` lines of ``SKILL.md`` (indented
    lines continue the value before them; one pair of outer quotes is removed)."""
    with open(path, "rb") as fh:
        head = fh.read(_MAX_FRONT_MATTER_BYTES).decode("utf-8", errors="replace")
    lines = head.splitlines()
    if not lines or lines[0].strip() != "---":
        raise _bad(path, "has no front matter (a first line '---', then name: and "
                         "description:, then '---').")
    fields: dict[str, str] = {}
    last: str | None = None
    for line in lines[1:]:
        if line.strip() == "---":
            return {k: _unquote(v.strip()) for k, v in fields.items()}
        if line[:1] in (" ", "\t") and last is not None:
            fields[last] = (fields[last] + " " + line.strip()).strip()
            continue
        key, sep, value = line.partition(":")
        if sep and key.strip():
            last = key.strip().lower()
            fields[last] = "" if value.strip() in (">", "|", ">-", "|-") else value.strip()
    raise _bad(path, "its front matter never ends (no closing '---' line).")


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def _skill(folder: Path) -> Skill:
    path = folder / SKILL_FILE
    fields = _front_matter(path)
    name, description = fields.get("name", ""), fields.get("description", "")
    if not name:
        raise _bad(path, "its front matter has no name:.")
    if not _NAME.match(name) or len(name) > _MAX_NAME:
        raise _bad(path, f"name {name!r} must be lowercase letters, digits and hyphens "
                         f"(at most {_MAX_NAME}).")
    if not description:
        raise _bad(path, "its front matter has no description: (it tells the agent when to "
                         "use the skill).")
    return Skill(name=name, description=description[:_MAX_DESCRIPTION], folder=folder.resolve())


def _folders(root: Path) -> list[Path]:
    """``root`` when it is a skill, else its subfolders that are (sorted by name)."""
    if (root / SKILL_FILE).is_file():
        return [root]
    found = sorted(p for p in root.iterdir() if p.is_dir() and (p / SKILL_FILE).is_file())
    if not found:
        raise _bad(root, f"is neither a skill folder (with {SKILL_FILE}) nor a folder of them.")
    return found


def load_skills(paths: Iterable[str | os.PathLike[str]] | str | None) -> list[Skill]:
    """The skills of ``paths``: skill folders, or folders holding skill folders (a
    comma-separated string is split).

    Raises:
        ParameterError: a path that is missing or holds no skill, a ``SKILL.md`` without front
            matter, name or description, or two skills with the same name (one line each).
    """
    if paths is None:
        return []
    if isinstance(paths, str):
        paths = [p for p in (s.strip() for s in paths.split(",")) if p]
    skills: dict[str, Skill] = {}
    for raw in paths:
        root = Path(os.path.expanduser(os.fspath(raw)))
        if not root.is_dir():
            raise _bad(root, "no such folder.")
        for folder in _folders(root):
            skill = _skill(folder)
            if folder == root:
                skill = Skill(skill.name, skill.description, skill.folder, explicit=True)
            other = skills.get(skill.name)
            if other is not None and other.folder != skill.folder:
                raise _bad(folder, f"the name {skill.name!r} is taken by {other.folder} too; "
                                   "rename one (names must be unique).")
            skills[skill.name] = skill
    return list(skills.values())


def _entry(skill: Skill) -> str:
    return f"- {skill.name}: {skill.description}"


def listed_skills(skills: Sequence[Skill]) -> tuple[list[Skill], list[Skill]]:
    """The skills the system prompt lists and those it leaves out: skills named by their own
    folder first, then the others in order, up to :data:`MAX_SKILLS_LISTED` skills and
    :data:`MAX_SKILLS_PROMPT_CHARS` characters."""
    ordered = [s for s in skills if s.explicit] + [s for s in skills if not s.explicit]
    listed: list[Skill] = []
    chars = 0
    for i, skill in enumerate(ordered):
        size = len(_entry(skill)) + 1
        if len(listed) >= MAX_SKILLS_LISTED or chars + size > MAX_SKILLS_PROMPT_CHARS:
            return listed, ordered[i:]
        listed.append(skill)
        chars += size
    return listed, []


def skills_prompt(skills: Sequence[Skill]) -> str:
    """The system prompt part: each listed skill's name and description, how to read one,
    and how many were left out (:func:`listed_skills`)."""
    if not skills:
        return ""
    listed, left = listed_skills(skills)
    lines = [f"Skills you can use (call {READ_SKILL_TOOL}(name) to read a skill's "
             "instructions before you use it; read_skill(name, path) reads one of its files):"]
    lines += [_entry(s) for s in listed]
    if left:
        lines.append(f"({len(left)} more skills are installed but not listed; "
                     f"{READ_SKILL_TOOL}(name) reads one the user names.)")
    return "\n".join(lines)


def skills_left_out_notice(skills: Sequence[Skill]) -> str | None:
    """The run's one line when the listing left skills out, or ``None``."""
    listed, left = listed_skills(skills)
    if not left:
        return None
    names = ", ".join(s.name for s in left[:_NAMES_SHOWN]) + (", …" if len(left) > _NAMES_SHOWN
                                                               else "")
    return (f"skills: {len(left)} of {len(skills)} skills are not listed to the model (the "
            f"listing holds at most {MAX_SKILLS_LISTED} skills and {MAX_SKILLS_PROMPT_CHARS:,} "
            f"characters); left out: {names}. Name one by its own folder in --skills (listed "
            f"first), or tell the agent its name ({READ_SKILL_TOOL} reads any of them).")


def _files(folder: Path) -> list[str]:
    out: list[str] = []
    for dirpath, dirnames, filenames in os.walk(folder):  # symlinked folders are not entered
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            out.append(os.path.relpath(os.path.join(dirpath, name), folder))
            if len(out) >= MAX_SKILL_FILES_LISTED:
                return out
    return out


def _read(skill: Skill, path: str) -> str:
    ws = Workspace(skill.folder, read_only=True)
    try:
        real = ws.resolve(path)
        fd = open_regular(ws, real, path)
    except WorkspaceError as exc:
        raise ToolError(f"{skill.name}: {exc}") from None
    with os.fdopen(fd, "rb") as fh:
        data = fh.read(MAX_SKILL_FILE_CHARS * 4 + 1)
        more = bool(fh.read(1)) or len(data) > MAX_SKILL_FILE_CHARS * 4
    if looks_binary(data[:SNIFF_BYTES]):
        raise ToolError(f"{skill.name}: {path} is a binary file; only text files are shown.")
    text = data.decode("utf-8", errors="replace")
    if len(text) > MAX_SKILL_FILE_CHARS or more:
        text = (text[:MAX_SKILL_FILE_CHARS] + f"\n[cut: {path} is longer than "
                f"{MAX_SKILL_FILE_CHARS} characters; the rest was not read]")
    return text


def read_skill_tool(skills: Sequence[Skill]) -> AnyTool:
    """The read-only ``read_skill(name, path=None)`` tool over ``skills`` (not registered)."""
    by_name = {s.name: s for s in skills}

    def read_skill(name: str, path: str | None = None) -> str:
        """Read a skill: its SKILL.md instructions and the list of its files, or one file.

        Args:
            name: The skill's name, as listed in the system prompt.
            path: A file of the skill, relative to its folder (omit for SKILL.md).
        """
        skill = by_name.get(name.strip())
        if skill is None:
            names = list(by_name)
            shown = ", ".join(names[:20]) + (f", … ({len(names)} in all)" if len(names) > 20
                                             else "")
            raise ToolError(f"No skill named {name!r}; skills: {shown or 'none'}.")
        if path is None or not path.strip() or path.strip() in (SKILL_FILE, "./" + SKILL_FILE):
            files = [f for f in _files(skill.folder) if f != SKILL_FILE]
            text = _read(skill, SKILL_FILE)
            if files:
                text += "\n\nFiles of this skill (read one with read_skill(name, path)):\n"
                text += "\n".join(f"- {f}" for f in files)
            return mask(text)
        return mask(_read(skill, path.strip()))

    return Tool(read_skill, name=READ_SKILL_TOOL, batchable=True)

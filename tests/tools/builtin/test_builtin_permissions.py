"""The permission policy: defaults, precedence, approval answers and the denial text."""

from __future__ import annotations

import pytest

from jupyter_agent.session.permissions import (
    APPROVAL_OPTIONS,
    PermissionPolicy,
    denial_message,
)


def test_defaults_follow_the_spec() -> None:
    policy = PermissionPolicy()
    assert policy.evaluate("read_file").decision == "allow"
    assert policy.evaluate("search_files").decision == "allow"
    assert policy.evaluate("glob_files").decision == "allow"
    assert policy.evaluate("bash").decision == "ask"
    assert policy.evaluate("write_file").decision == "ask"
    assert policy.evaluate("web_fetch").decision == "ask"
    assert policy.evaluate("my_function", is_user_tool=True).decision == "allow"
    assert policy.evaluate("my_function", is_user_tool=True, requires_approval=True).decision == "ask"
    assert policy.evaluate("mcp__github__create_issue").decision == "ask"  # not ours, not the user's
    assert policy.evaluate("update_plan").decision == "allow"
    assert policy.evaluate("ask_agent").decision == "allow"


# (tool, is_user_tool, requires_approval, session_memory, agent_overrides, read_only,
#  expected decision, expected reason)
PRECEDENCE = [
    # session memory beats the tool default, both ways
    ("bash", False, False, {"bash": "allow"}, {}, False, "allow", "session memory"),
    ("read_file", False, False, {"read_file": "deny"}, {}, False, "deny", "session memory"),
    # agent override beats the tool default; the exact name beats the wildcard
    ("bash", False, False, {}, {"bash": "allow"}, False, "allow", "agent override 'bash'"),
    ("read_file", False, False, {}, {"*": "ask"}, False, "ask", "agent override '*'"),
    ("bash", False, False, {}, {"*": "ask", "bash": "allow"}, False, "allow",
     "agent override 'bash'"),
    ("f", True, True, {}, {"f": "allow"}, False, "allow", "agent override 'f'"),
    # session memory beats a non-deny agent override
    ("bash", False, False, {"bash": "allow"}, {"bash": "ask"}, False, "allow", "session memory"),
    ("web_fetch", False, False, {"web_fetch": "deny"}, {"*": "allow"}, False, "deny",
     "session memory"),
    # a deny override beats session memory (exact name or wildcard)
    ("bash", False, False, {"bash": "allow"}, {"bash": "deny"}, False, "deny",
     "agent override 'bash'"),
    ("bash", False, False, {"bash": "allow"}, {"*": "deny", "bash": "allow"}, False, "deny",
     "agent override '*'"),
    # the read-only workspace beats everything for tools that write
    ("write_file", False, False, {"write_file": "allow"}, {"write_file": "allow"}, True, "deny",
     "workspace is read-only"),
    ("bash", False, False, {}, {"*": "allow"}, True, "deny", "workspace is read-only"),
    ("read_file", False, False, {}, {}, True, "allow", "tool default"),
    # internal tools are never blocked, not even by a wildcard deny
    ("update_plan", False, False, {}, {"*": "deny"}, True, "allow", "internal tool"),
    # with nothing else, the tool default
    ("glob_files", False, False, {}, {}, False, "allow", "tool default"),
    ("some_mcp_tool", False, False, {}, {}, False, "ask", "tool default"),
]


@pytest.mark.parametrize(
    ("tool", "user", "approval", "memory", "overrides", "read_only", "decision", "reason"),
    PRECEDENCE,
)
def test_precedence(tool: str, user: bool, approval: bool, memory: dict, overrides: dict,
                    read_only: bool, decision: str, reason: str) -> None:
    verdict = PermissionPolicy().evaluate(
        tool, is_user_tool=user, requires_approval=approval, session_memory=memory,
        agent_overrides=overrides, read_only_workspace=read_only,
    )
    assert (verdict.decision, verdict.reason) == (decision, reason)


def test_policy_defaults_can_be_changed_and_round_trip_as_json() -> None:
    policy = PermissionPolicy(builtin_defaults={"bash": "allow"}, other_tools="deny")
    assert policy.evaluate("bash").decision == "allow"
    assert policy.evaluate("write_file").decision == "deny"  # no longer listed: falls to other_tools
    assert PermissionPolicy.model_validate_json(policy.model_dump_json()) == policy


def test_the_workspace_constraint_is_a_hook() -> None:
    class NoNetwork(PermissionPolicy):
        def workspace_constraint(self, tool_name: str, *, read_only: bool) -> str | None:
            if tool_name == "web_fetch":
                return "deny"
            return super().workspace_constraint(tool_name, read_only=read_only)

    policy = NoNetwork()
    assert policy.evaluate("web_fetch", session_memory={"web_fetch": "allow"}).decision == "deny"
    assert policy.evaluate("bash", read_only_workspace=True).decision == "deny"


def test_approval_options_and_outcomes() -> None:
    assert APPROVAL_OPTIONS == ["Allow once", "Allow for this session", "Deny"]


def test_denial_text_told_to_the_model() -> None:
    assert denial_message("bash") == "Permission denied by the user: bash was not run."
    assert denial_message("bash", by_user=False, reason="workspace is read-only") == (
        "Permission denied by policy (workspace is read-only): bash was not run."
    )

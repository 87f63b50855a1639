"""Tool catalog and internal tool schemas (docs/behaviour.md §6.1, §6.5, §6.10, §14.31)."""

from __future__ import annotations

from jupyter_agent.agents.plan import (
    ASK_AGENT_DESCRIPTION,
    UPDATE_PLAN_DESCRIPTION,
    apply_plan_update,
    ask_agent_tool_schema,
    normalize_catalog,
    update_plan_tool_schema,
)


def test_simplest_catalog_orders_runtime_then_ask_then_plan():
    catalog = normalize_catalog(["search"])
    assert catalog.names == ["search", "ask_agent", "update_plan"]
    assert catalog.has_runtime_tools


def _fn(name: str) -> dict:
    return {"type": "function", "function": {"name": name, "description": "", "parameters": {}}}


# §14.31
def test_runtime_tool_named_like_internal_is_dropped_with_warning():
    catalog = normalize_catalog([_fn("a"), _fn("update_plan"), _fn("b"), _fn("ask_agent")])
    names = [t["function"]["name"] for t in catalog.schemas()]
    assert names == ["a", "b", "ask_agent", "update_plan"]
    assert names.count("update_plan") == 1 and names[-1] == "update_plan"
    assert catalog.schemas()[-1]["function"]["description"] == UPDATE_PLAN_DESCRIPTION
    assert catalog.warnings == [
        'Runtime tool "update_plan" conflicts with internal agent tool.',
        'Runtime tool "ask_agent" conflicts with internal agent tool.',
    ]


def test_catalog_accepts_bare_functions_and_tool_objects():
    class FakeRegistryTool:
        name = "calc"

        def schema(self) -> dict:
            return _fn("calc")

    catalog = normalize_catalog([{"name": "bare", "parameters": {}}, FakeRegistryTool()])
    assert [t["function"]["name"] for t in catalog.schemas()] == [
        "bare",
        "calc",
        "ask_agent",
        "update_plan",
    ]
    assert catalog.is_internal("ask_agent") and not catalog.is_internal("calc")


def test_only_internal_tools_means_no_runtime_tools():
    catalog = normalize_catalog([_fn("update_plan")])
    assert not catalog.has_runtime_tools
    assert catalog.names == ["ask_agent", "update_plan"]
    assert normalize_catalog([], ask_name=None).names == ["update_plan"]


def test_update_plan_schema_shape():
    schema = update_plan_tool_schema()
    assert schema["type"] == "function"
    fn = schema["function"]
    assert fn["name"] == "update_plan" and fn["description"] == UPDATE_PLAN_DESCRIPTION
    params = fn["parameters"]
    assert params["required"] == ["updates"] and params["properties"]["updates"]["minItems"] == 1
    ops = params["properties"]["updates"]["items"]["anyOf"]
    assert [op["properties"]["action"]["enum"] for op in ops] == [
        ["set_plan"],
        ["update_step"],
        ["replace_plan"],
    ]
    assert all(op["additionalProperties"] is False for op in ops)
    plan = ops[0]["properties"]["plan"]
    assert plan["required"] == ["task", "description", "steps"]
    assert plan["properties"]["steps"]["items"]["required"] == [
        "id",
        "title",
        "description",
        "acceptanceCriteria",
        "status",
    ]
    step_id = ops[1]["properties"]["stepId"]["description"]
    assert step_id.startswith("Required when action is update_step.")
    assert "changes exactly one step" in step_id
    # A fresh copy each call: editing one does not leak into the next.
    plan["required"].append("x")
    assert (
        "x"
        not in update_plan_tool_schema()["function"]["parameters"]["properties"]["updates"][
            "items"
        ]["anyOf"][0]["properties"]["plan"]["required"]
    )


def test_ask_schema_shape():
    fn = ask_agent_tool_schema()["function"]
    assert fn["name"] == "ask_agent" and fn["description"] == ASK_AGENT_DESCRIPTION
    params = fn["parameters"]
    assert params["required"] == ["reason", "blockerType", "question", "options"]
    assert params["properties"]["blockerType"]["enum"] == [
        "missing_required_input",
        "tool_unavailable",
        "ambiguous_goal",
    ]
    options = params["properties"]["options"]
    assert (options["minItems"], options["maxItems"]) == (3, 5)
    assert "descriptions" in params["properties"] and "allowOther" in params["properties"]


def test_renamed_internal_tools():
    catalog = normalize_catalog([_fn("plan")], update_plan_name="plan")
    assert catalog.names == ["ask_agent", "plan"]
    assert catalog.warnings == ['Runtime tool "plan" conflicts with internal agent tool.']


def test_schema_example_args_validate():
    """Arguments shaped exactly like the schema are accepted by the state machine."""
    args = {
        "updates": [
            {
                "action": "set_plan",
                "reason": "start",
                "plan": {
                    "task": "T",
                    "description": "D",
                    "background": "B",
                    "steps": [
                        {
                            "id": "1",
                            "title": "t",
                            "description": "d",
                            "acceptanceCriteria": ["c"],
                            "status": "pending",
                            "evidence": [{"kind": "manual", "ref": "r", "summary": "s"}],
                            "outputSummary": "o",
                            "blocker": "b",
                            "needsReplan": False,
                        }
                    ],
                },
            }
        ],
        "reason": "why",
    }
    assert apply_plan_update(None, args).ok

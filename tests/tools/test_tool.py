"""``@tool``: schemas from signatures, validated calls, results as text, the registry."""

from __future__ import annotations

import asyncio
import enum
import json
import threading
from typing import Any, Literal, Optional

import pytest
from pydantic import BaseModel

from jupyter_agent import StopRun, Tool, tool
from jupyter_agent.base.errors import ToolError
from jupyter_agent.tools.registry import REGISTRY

pytestmark = pytest.mark.timeout(60)


def test_simplest_tool() -> None:
    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    assert add(2, 3) == 5  # still callable like the function
    assert REGISTRY.get("add") is add
    assert add.schema() == {
        "type": "function",
        "function": {
            "name": "add",
            "description": "Add two integers.",
            "parameters": {"type": "object", "additionalProperties": False,
                           "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                           "required": ["a", "b"]},
        },
    }
    result = add.invoke('{"a": 17, "b": 25}')
    assert (result.output, result.value, result.error, result.stop) == ("42", 42, None, False)


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Point(BaseModel):
    x: int
    y: int = 0


def test_schema_from_type_hints() -> None:
    @tool
    def draw(p: Point, mode: Literal["fill", "line"], label: Optional[str],  # noqa: UP045
             sizes: list[int], color: Color = Color.RED, width: float = 1.5, note=None,
             tag: str | None = None) -> str:
        """Draw a point."""
        return f"{p.x},{p.y} {mode} {label} {sizes} {color.value} {width} {note}"

    params = draw.parameters
    props = params["properties"]
    assert params["required"] == ["p", "mode", "label", "sizes"]
    assert params["additionalProperties"] is False
    point = params["$defs"]["Point"]
    assert props["p"] == {"$ref": "#/$defs/Point"}
    assert point["properties"] == {"x": {"type": "integer"}, "y": {"type": "integer", "default": 0}}
    assert point["required"] == ["x"]
    assert props["mode"] == {"type": "string", "enum": ["fill", "line"]}
    assert props["label"] == {"anyOf": [{"type": "string"}, {"type": "null"}]}
    assert props["sizes"] == {"type": "array", "items": {"type": "integer"}}
    assert props["color"]["default"] == "red"
    assert params["$defs"]["Color"] == {"type": "string", "enum": ["red", "blue"]}
    assert props["width"] == {"type": "number", "default": 1.5}
    assert props["note"] == {"default": None}  # unannotated: any JSON value
    assert props["tag"] == {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None}
    assert not any("title" in json.dumps(v) for v in props.values())
    # The call gets real Python objects: a Point instance and a Color member.
    r = draw.invoke('{"p": {"x": 1}, "mode": "fill", "label": null, "sizes": [1, 2], '
                    '"color": "blue"}')
    assert r.error is None
    assert r.value == "1,0 fill None [1, 2] blue 1.5 None"


def test_google_docstring_descriptions() -> None:
    @tool
    def search(query: str, limit: int = 5) -> list[str]:
        """Search the notes.

        Matches whole words only.

        Args:
            query: What to look for.
            limit (int): How many results
                to return at most.

        Returns:
            The matching lines.
        """
        return []

    assert search.description == "Search the notes.\n\nMatches whole words only."
    props = search.parameters["properties"]
    assert props["query"]["description"] == "What to look for."
    assert props["limit"]["description"] == "How many results to return at most."


def test_numpy_docstring_descriptions() -> None:
    @tool
    def scale(values: list[float], factor: float = 2.0) -> list[float]:
        """Scale values.

        Parameters
        ----------
        values : list of float
            The numbers.
        factor : float
            Multiplier applied
            to each number.

        Returns
        -------
        list of float
        """
        return [v * factor for v in values]

    props = scale.parameters["properties"]
    assert scale.description == "Scale values."
    assert props["values"]["description"] == "The numbers."
    assert props["factor"]["description"] == "Multiplier applied to each number."


def test_options_override_the_defaults() -> None:
    @tool(name="lookup", description="Find a value.", batchable=False, timeout=3,
          requires_approval=True)
    def find(key: str) -> str:
        """Docstring that is not used."""
        return key

    assert REGISTRY.get("lookup") is find and REGISTRY.get("find") is None
    assert (find.name, find.description, find.batchable, find.timeout,
            find.requires_approval) == ("lookup", "Find a value.", False, 3, True)
    assert find.schema()["function"]["name"] == "lookup"


def test_validation_errors_field_by_field() -> None:
    @tool
    def book(room: int, day: Literal["mon", "tue"], guests: list[str]) -> str:
        """Book a room."""
        return "booked"

    r = book.invoke('{"room": "twelve", "day": "sun", "extra": 1}')
    assert r.value is None and r.error == r.output
    lines = r.output.splitlines()
    assert lines[0] == "Invalid arguments:"
    assert any(line.startswith("- room: ") and "integer" in line for line in lines)
    assert any(line.startswith("- day: ") and "'mon' or 'tue'" in line for line in lines)
    assert "- guests: Field required" in lines
    assert any(line.startswith("- extra: ") and "not permitted" in line for line in lines)


def test_arguments_are_parsed_leniently() -> None:
    @tool
    def echo(text: str, n: int = 1) -> str:
        """Echo."""
        return text * n

    assert echo.invoke("{text: 'ab', n: 2,}").output == "abab"  # JSON5: what models often send
    assert echo.invoke('  {"text": "x"}  ').output == "x"
    assert "not valid JSON" in (echo.invoke("text=ab").error or "")
    assert echo.invoke('["ab"]').error == "Arguments must be a JSON object."
    assert echo.invoke("").error is not None  # {} is missing `text`


def test_no_arguments_tool_accepts_empty_text() -> None:
    @tool
    def now() -> str:
        """The time."""
        return "noon"

    assert now.parameters == {"type": "object", "properties": {}, "additionalProperties": False}
    assert now.invoke("").output == "noon"
    assert now.invoke("{}").output == "noon"


def test_async_tool() -> None:
    @tool
    async def fetch(url: str) -> dict[str, Any]:
        """Fetch."""
        await asyncio.sleep(0)
        return {"url": url, "status": 200}

    assert fetch.is_async
    r = fetch.invoke('{"url": "x"}')
    assert r.value == {"url": "x", "status": 200}
    assert json.loads(r.output) == {"url": "x", "status": 200}


def test_async_tool_called_inside_a_running_event_loop() -> None:
    # A notebook kernel runs cells inside an asyncio loop: the tool must not need that loop.
    @tool
    async def double(x: int) -> int:
        """Double."""
        await asyncio.sleep(0)
        return 2 * x

    async def cell() -> Any:
        assert asyncio.get_running_loop() is not None
        return double.invoke('{"x": 21}')

    loop = asyncio.new_event_loop()
    try:
        r = loop.run_until_complete(cell())
    finally:
        loop.close()
    assert (r.output, r.value, r.error) == ("42", 42, None)


def test_async_tool_error_and_timeout() -> None:
    @tool
    async def fails() -> None:
        """Fails."""
        raise ValueError("bad input")

    @tool(timeout=0.05)
    async def stalls() -> None:
        """Never ends."""
        await asyncio.Event().wait()

    assert fails.invoke("{}").output == "Tool error: ValueError: bad input"
    r = stalls.invoke("{}")
    assert r.error == r.output == (
        "Tool error: timed out after 0.05 s (stalls did not finish and was cancelled; "
        "raise @tool(timeout=...) or JUPYTER_AGENT_TOOL_TIMEOUT)")


def test_sync_timeout_reports_and_moves_on() -> None:
    release = threading.Event()

    @tool(timeout=0.05)
    def slow() -> str:
        """Waits until released."""
        release.wait(10)
        return "late"

    try:
        r = slow.invoke("{}")
    finally:
        release.set()
    assert r.output == (
        "Tool error: timed out after 0.05 s (slow did not finish and was interrupted; "
        "raise @tool(timeout=...) or JUPYTER_AGENT_TOOL_TIMEOUT)")
    assert r.error == r.output and r.value is None


def test_raising_tool_keeps_the_exception() -> None:
    @tool
    def divide(a: float, b: float) -> float:
        """Divide."""
        return a / b

    r = divide.invoke('{"a": 1, "b": 0}')
    assert r.output == "Tool error: ZeroDivisionError: float division by zero"
    assert isinstance(r.exception, ZeroDivisionError)


class City(BaseModel):
    name: str
    population: int


@pytest.mark.parametrize(("value", "expected"), [
    ("plain text", "plain text"),
    ({"a": 1, "b": [1, 2]}, '{"a": 1, "b": [1, 2]}'),
    ([1, "two", None], '[1, "two", null]'),
    (City(name="Oslo", population=700_000), '{"name":"Oslo","population":700000}'),
    ([City(name="A", population=1)], '[{"name": "A", "population": 1}]'),
    (None, "none"),
    (3, "3"),
    (2.5, "2.5"),
    (True, "true"),
    (b"bytes", "bytes"),
    ({3}, "[3]"),
    (complex(1, 2), "(1+2j)"),
])
def test_results_become_text_and_keep_the_value(value: Any, expected: str) -> None:
    @tool
    def give() -> Any:
        """Give the value."""
        return value

    r = give.invoke("{}")
    assert r.output == expected
    assert r.value is value


def test_pandas_results_are_compact_text() -> None:
    pd = pytest.importorskip("pandas")

    @tool
    def table() -> Any:
        """A table."""
        return pd.DataFrame({"a": range(1000), "b": ["x"] * 1000})

    r = table.invoke("{}")
    assert isinstance(r.value, pd.DataFrame)
    assert "a" in r.output and len(r.output.splitlines()) < 100


def test_rerunning_the_defining_cell_replaces_the_tool() -> None:
    @tool
    def greet(name: str) -> str:
        """Old."""
        return f"hello {name}"

    first = greet

    @tool  # noqa: F811 - redefined on purpose, as re-running a cell does
    def greet(name: str, loud: bool = False) -> str:
        """New."""
        return f"HELLO {name}" if loud else f"hi {name}"

    assert REGISTRY.names() == ["greet"]
    assert REGISTRY.get("greet") is greet and greet is not first
    assert REGISTRY.get("greet").invoke('{"name": "Ann"}').output == "hi Ann"


def test_lambda_needs_a_name() -> None:
    with pytest.raises(ToolError, match="name"):
        tool(lambda x: x)
    named = tool(lambda x: x, name="identity")
    assert named.invoke('{"x": 5}').output == "5"


def test_star_args_are_refused() -> None:
    def many(*values: int) -> int:
        return sum(values)

    def options(**kw: Any) -> None:
        return None

    with pytest.raises(ToolError, match="many"):
        tool(many)
    with pytest.raises(ToolError, match="options"):
        tool(options)
    assert REGISTRY.names() == []


def test_unknown_names_on_selection_are_a_user_error() -> None:
    @tool
    def a() -> None:
        """A."""

    with pytest.raises(ToolError, match="Unknown tool 'b'. Registered tools: a"):
        REGISTRY.select(["a", "b"])
    assert REGISTRY.select(None) == [a]


def test_stop_run_raised_or_returned() -> None:
    @tool
    def finish(summary: str) -> str:
        """Finish the task."""
        raise StopRun(f"Final: {summary}")

    @tool
    def halt() -> StopRun:
        """Stop quietly."""
        return StopRun()

    r = finish.invoke('{"summary": "done"}')
    assert (r.stop, r.output, r.error) == (True, "Final: done", None)
    r = halt.invoke("{}")
    assert (r.stop, r.output) == (True, "Stopped.")


def test_tool_object_wraps_an_unregistered_function() -> None:
    def square(x: int) -> int:
        """Square."""
        return x * x

    t = Tool(square)
    assert REGISTRY.get("square") is None
    assert t.invoke('{"x": 4}').value == 16
    assert tool(register=False)(square).name == "square" and REGISTRY.names() == []

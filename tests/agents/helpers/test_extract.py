"""extract: fill a pydantic model or a JSON schema from text (docs/behaviour.md §7.3)."""

from __future__ import annotations

import json
from datetime import date
from typing import Literal

import pytest
from pydantic import BaseModel

from jupyter_agent.agents.helpers import EmptyInputError, ExtractResult, extract
from jupyter_agent.base.errors import ModelBehaviorError
from jupyter_agent.llm.usage_context import usage_sink
from tests.fakes.openai_server import text


class Invoice(BaseModel):
    number: str
    total: float
    due: date | None = None


INVOICE_TEXT = "Invoice A-17, total 12.50 EUR, due 1 May 2024."


def test_extract_fills_a_pydantic_model(srv, client):
    srv.enqueue(text('{"number": "A-17", "total": 12.5, "due": "2024-05-01"}'))
    inv = extract(INVOICE_TEXT, Invoice, client=client)
    assert isinstance(inv.value, Invoice)
    assert inv.value.total == 12.5 and inv.value.due == date(2024, 5, 1)
    assert inv.unwrap() is inv.value
    assert inv.success is True and inv.errors == [] and inv.attempts == 1
    assert inv.data == {"number": "A-17", "total": 12.5, "due": "2024-05-01"}
    assert inv.cost == pytest.approx(client.cost(inv.usage)) and inv.cost > 0
    assert json.loads(str(inv)) == inv.data
    assert len(srv.requests) == 1


def test_request_shows_the_schema_and_rules(srv, client):
    srv.enqueue(text('{"number": "A-17", "total": 12.5}'))
    extract(INVOICE_TEXT, Invoice, client=client, description="Amounts in EUR.",
            history=[{"role": "user", "content": "I will paste an invoice."},
                     {"role": "assistant", "content": "Go ahead."}])
    msgs = srv.requests[0]["messages"]
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "user"]
    system = msgs[0]["content"]
    for heading in ("## Background", "## Basic requirements", "## Specific requirements",
                    "## JSON Schema", "## Output requirements"):
        assert heading in system
    assert "Amounts in EUR." in system
    schema = json.loads(system.split("## JSON Schema\n\n")[1].split("\n\n## Output")[0])
    assert set(schema["properties"]) == {"number", "total", "due"}
    assert schema["required"] == ["number", "total"]
    assert "## Previous extraction result" not in system
    assert msgs[-1] == {"role": "user", "content": INVOICE_TEXT}


def test_retry_sends_the_validation_errors_once(srv, client):
    srv.enqueue(text('{"number": "A-17", "total": "twelve"}'),
                text('{"number": "A-17", "total": 12.5}'))
    seen: list[tuple] = []
    with usage_sink(lambda *a: seen.append(a)):
        inv = extract(INVOICE_TEXT, Invoice, client=client)
    assert len(srv.requests) == 2
    assert inv.success and inv.value.total == 12.5 and inv.attempts == 2
    retry = srv.requests[1]["messages"]
    assert retry[:-2] == srv.requests[0]["messages"]
    assert retry[-2] == {"role": "assistant", "content": '{"number": "A-17", "total": "twelve"}'}
    assert retry[-1]["role"] == "user"
    assert "`total`" in retry[-1]["content"] and "valid number" in retry[-1]["content"]
    assert '"twelve"' in retry[-1]["content"]
    # Both calls are counted, each priced on its own.
    assert [s[0] for s in seen] == ["extract", "extract"]
    assert inv.usage.input_tokens == seen[0][2].input_tokens + seen[1][2].input_tokens
    assert inv.cost == pytest.approx(seen[0][3] + seen[1][3])


def test_still_invalid_after_the_retry_gives_the_field_errors(srv, client):
    srv.enqueue(text('{"total": 3}'), text('{"total": 3, "number": ""}'))
    inv = extract(INVOICE_TEXT, Invoice, client=client)
    assert len(srv.requests) == 2 and inv.attempts == 2
    assert inv.success is False and inv.value is None
    assert [(e.field, e.type) for e in inv.errors] == [("number", "missing")]
    assert inv.data == {"total": 3}
    with pytest.raises(ModelBehaviorError, match="number"):
        inv.unwrap()
    assert str(inv).startswith("Extraction failed:")


def test_no_retry_when_disabled(srv, client):
    srv.enqueue(text('{"total": 3}'))
    inv = extract(INVOICE_TEXT, Invoice, client=client, retry=False)
    assert len(srv.requests) == 1 and inv.attempts == 1 and not inv.success


def test_scenario_46_required_default_fills_and_missing_optional_is_fine(srv, client):
    schema = {"type": "object",
              "properties": {"name": {"type": "string", "default": "N/A"},
                             "age": {"type": "integer"}},
              "required": ["name"]}
    srv.enqueue(text('{"name":""}'))
    res = extract("someone", schema, client=client)
    assert res.value == {"name": "N/A"}
    # §7.3: a missing optional key does not fail.
    assert res.success is True and res.attempts == 1


def test_scenario_47_chatty_fenced_json5(srv, client):
    schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    srv.enqueue(text("Sure! ```json {'name': 'Bob', /* c */ }``` done"))
    res = extract("Bob wrote this", schema, client=client)
    assert res.value == {"name": "Bob"} and res.success and res.attempts == 1


def test_edge_29_empty_strings_and_unknown_keys_are_dropped(srv, client):
    schema = {"type": "object",
              "properties": {"name": {"type": "string"}, "city": {"type": "string"}},
              "required": ["name"]}
    srv.enqueue(text('{"name": "Ann", "city": "", "invented": 1}'))
    res = extract("Ann", schema, client=client)
    assert res.value == {"name": "Ann"} and res.success


def test_unparseable_answers_extract_nothing(srv, client):
    srv.enqueue(text("I cannot help with that."), text("[1, 2]"))
    res = extract(INVOICE_TEXT, Invoice, client=client)
    assert res.attempts == 2 and res.success is False and res.value is None
    assert res.errors[0].type == "json_invalid"
    assert {e.field for e in res.errors[1:]} == {"number", "total"}
    assert "no JSON object" in srv.requests[1]["messages"][-1]["content"]


def test_optional_field_still_invalid_is_dropped(srv, client):
    srv.enqueue(text('{"number": "A-17", "total": 1, "due": "next week"}'),
                text('{"number": "A-17", "total": 1, "due": "soon"}'))
    inv = extract(INVOICE_TEXT, Invoice, client=client)
    assert inv.success is True and inv.value == Invoice(number="A-17", total=1)
    assert [e.field for e in inv.errors] == ["due"]


class Line(BaseModel):
    item: str
    qty: int


class Order(BaseModel):
    status: Literal["open", "paid"]
    lines: list[Line]


def test_nested_pydantic_model(srv, client):
    srv.enqueue(text('{"status": "paid", "lines": [{"item": "pen", "qty": "2"}]}'))
    order = extract("Paid: 2 pens", Order, client=client).value
    assert order == Order(status="paid", lines=[Line(item="pen", qty=2)])


ORDER_SCHEMA = {
    "type": "object",
    "properties": {
        "status": {"type": "string", "enum": ["open", "paid"]},
        "lines": {"type": "array", "items": {
            "type": "object",
            "properties": {"item": {"type": "string"}, "qty": {"type": "integer"},
                           "when": {"type": "string", "format": "date"}},
            "required": ["item", "qty"]}},
        "note": {"type": ["string", "null"]},
    },
    "required": ["status", "lines"],
}


def test_json_schema_with_enum_array_nested_object(srv, client):
    srv.enqueue(text('{"status": "paid", "lines": [{"item": "pen", "qty": "2", '
                     '"when": "2024-05-01"}]}'))
    res = extract("Paid: 2 pens on 1 May", ORDER_SCHEMA, client=client)
    assert res.success
    assert res.value == {"status": "paid",
                         "lines": [{"item": "pen", "qty": 2, "when": "2024-05-01"}]}


def test_json_schema_errors_point_at_the_field(srv, client):
    srv.enqueue(text('{"status": "shipped", "lines": [{"item": "pen"}]}'),
                text('{"status": "shipped", "lines": [{"item": "pen"}]}'))
    res = extract("Shipped a pen", ORDER_SCHEMA, client=client)
    assert not res.success
    assert {e.field for e in res.errors} == {"status", "lines.0.qty"}
    assert "`status`" in srv.requests[1]["messages"][-1]["content"]


def test_field_description_dict_and_odd_names(srv, client):
    srv.enqueue(text('{"full name": "Ann Lee", "schema": "v2"}'))
    res = extract("Ann Lee, v2", {"full name": "the person's name", "schema": "version"},
                  client=client)
    assert res.value == {"full name": "Ann Lee", "schema": "v2"} and res.success


def test_previous_result_enters_the_prompt(srv, client):
    srv.enqueue(text('{"number": "A-17", "total": 12.5}'),
                text('{"number": "A-17", "total": 13}'))
    first = extract(INVOICE_TEXT, Invoice, client=client)
    second = extract("Correction: the total is 13.", Invoice, client=client, previous=first)
    system = srv.requests[1]["messages"][0]["content"]
    prev = system.split("## Previous extraction result\n\n")[1].split("\n\n##")[0]
    assert json.loads(prev)["number"] == "A-17"
    assert second.value.total == 13


def test_empty_input_and_bad_schema_make_no_request(srv, client):
    with pytest.raises(EmptyInputError):
        extract("", Invoice, client=client)
    with pytest.raises(TypeError, match="pydantic model class"):
        extract("x", 42, client=client)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="at least one property"):
        extract("x", {"type": "object", "properties": {}}, client=client)
    assert srv.requests == []


def test_result_round_trips_as_json(srv, client):
    srv.enqueue(text('{"number": "A-17", "total": 12.5}'))
    inv = extract(INVOICE_TEXT, Invoice, client=client)
    dumped = json.loads(inv.model_dump_json())
    assert dumped["value"] == {"number": "A-17", "total": 12.5, "due": None}
    assert isinstance(inv, ExtractResult)


def test_json_schema_with_refs_from_another_tool(srv, client):
    # A schema exported elsewhere (here by pydantic) uses $defs and $ref.
    schema = Order.model_json_schema()
    srv.enqueue(text('{"status": "open", "lines": [{"item": "ink", "qty": 1}]}'))
    res = extract("Open order: 1 ink", schema, client=client)
    assert res.value == {"status": "open", "lines": [{"item": "ink", "qty": 1}]}

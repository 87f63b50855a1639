"""Every browser test fails when a page it opened logged a console error or threw (a card that
breaks quietly in the browser is the bug users meet first)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.browser.render_harness import CONSOLE_ERRORS


@pytest.fixture(autouse=True)
def no_console_errors() -> Iterator[None]:
    """Fail the test if any page logged a console error or an uncaught exception (pages a
    module-scoped fixture opened count for the first test that uses them)."""
    yield
    errors, CONSOLE_ERRORS[:] = list(CONSOLE_ERRORS), []
    assert not errors, "console errors on the page:\n" + "\n".join(errors)

"""Summaries of real pandas, polars and numpy objects, containers, strings and others."""

from __future__ import annotations

import datetime as dt
import inspect
import time

import numpy as np
import pandas as pd
import polars as pl
import pytest

from jupyter_agent.tools.notebook import summarize, summary_line
from jupyter_agent.tools.notebook._frame_text import SAMPLE_ROWS

pytestmark = pytest.mark.timeout(120)

BUDGET = 4000  # the bound on one inspection


def row(text: str, name: str) -> list[str]:
    """The column table's row for ``name`` (the first line starting with it), split."""
    return next(line for line in text.splitlines() if line.split()[:1] == [name]).split()


# ------------------------------------------------------------------------------ pandas
def test_small_dataframe_is_exact() -> None:
    df = pd.DataFrame({"price": [1.5, 2.5, np.nan, 10.0], "qty": [1, 2, 3, 4],
                       "city": ["Oslo", "Lima", "Oslo", None],
                       "when": pd.to_datetime(["2024-01-01", "2024-02-01", None, "2024-03-05"])})
    text = summarize(df)
    assert text.startswith("pandas.DataFrame: 4 rows × 4 columns")
    assert "sample" not in text  # small: every statistic is exact
    price = row(text, "price")
    assert price[:3] == ["price", "float64", "1"]  # one null, counted exactly
    assert price[3:8] == ["1.5", "2.5", "10", "4.667", "4.646"]  # min p50 max mean std
    assert row(text, "qty")[:3] == ["qty", "int64", "0"]
    assert row(text, "city")[2:] == ["1", "2", "Oslo", "(2×)"]  # 1 null, 2 distinct, top
    assert row(text, "when")[2:] == ["1", "2024-01-01", "00:00:00", "2024-03-05", "00:00:00"]
    assert "First 4 rows:" in text and "Lima" in text and "Last" not in text


def test_series_and_categorical() -> None:
    s = pd.Series(pd.Categorical(["a", "b", "a", "c"] * 10), name="grade")
    text = summarize(s)
    assert text.startswith("pandas.Series 'grade': 40 rows")
    assert "3 categories" in text and "a (20×)" in text
    assert summary_line(s) == "Series 'grade': 40 values, dtype category"


def test_unhashable_object_column_is_summarised_without_error() -> None:
    df = pd.DataFrame({"items": [[1, 2], [3], {"a": 1}, None], "n": [1, 2, 3, 4]})
    text = summarize(df)
    assert row(text, "items")[:3] == ["items", "object", "1"]
    assert row(text, "n")[:4] == ["n", "int64", "0", "1"]  # the other column is intact


def test_long_dataframe_is_sampled_bounded_and_close_to_the_truth() -> None:
    n = 600_000
    rng = np.random.default_rng(7)
    df = pd.DataFrame({"x": rng.normal(100.0, 15.0, n), "k": rng.integers(0, 10, n),
                       "tag": pd.array(rng.choice(["red", "blue"], n), dtype="str")})
    df.loc[df.index % 10 == 0, "x"] = np.nan  # 10% nulls
    text = summarize(df)
    assert len(text) < BUDGET
    assert f"Statistics from a sample of {SAMPLE_ROWS:,} of {n:,} rows" in text
    x = row(text, "x")
    assert x[2].startswith("~") and 8.0 <= float(x[2][1:-1]) <= 12.0  # ~10.0% nulls
    assert abs(float(x[6]) - 100.0) < 1.0 and abs(float(x[7]) - 15.0) < 1.0  # mean, std
    assert "First 3 rows:" in text and "Last 3 rows:" in text
    assert f"{n - 1}" in text  # the index range reaches the last row


def test_ten_thousand_columns_stay_bounded_and_quick() -> None:
    df = pd.DataFrame(np.zeros((5, 10_000)), columns=[f"col{i}" for i in range(10_000)])
    start = time.perf_counter()
    text = summarize(df)
    assert time.perf_counter() - start < 20  # generous: seconds, not minutes
    assert len(text) < BUDGET
    assert "5 rows × 10,000 columns" in text and "dtypes: float64 ×10,000" in text
    assert "9,960 more columns not described (pass columns=[...])" in text
    assert "col9999" in text and "col5000" not in text


def test_columns_selects_and_an_unknown_column_lists_the_real_ones() -> None:
    df = pd.DataFrame({"a": [1, 2], "b": [3.0, 4.0], "c": ["x", "y"]})
    text = summarize(df, columns=["c"])
    assert "\nc " in text and "\na " not in text
    with pytest.raises(KeyError, match="No column 'zz'. Columns: a, b, c"):
        summarize(df, columns=["zz"])


def test_hostile_cells_are_bounded() -> None:
    class Boom:
        def __repr__(self) -> str:
            raise RuntimeError("no repr for you")

    df = pd.DataFrame({"obj": [Boom(), "x" * 100_000, Boom()]})
    text = summarize(df)
    assert "<Boom object: repr raised…" in text and len(text) < BUDGET  # cut to fit
    assert "xxxx…" in text


# ------------------------------------------------------------------------------ polars
def test_polars_dataframe_exact_nulls_and_stats() -> None:
    df = pl.DataFrame({"v": [1.0, None, 3.0, 5.0], "s": ["a", "b", "a", None],
                       "d": [dt.date(2024, 1, i) for i in (1, 2, 3, 4)]})
    text = summarize(df)
    assert text.startswith("polars.DataFrame: 4 rows × 3 columns")
    v = row(text, "v")
    assert v[:3] == ["v", "Float64", "1"] and v[3:6] == ["1", "3", "5"]
    assert "a (2×)" in text and "2024-01-01" in text and "2024-01-04" in text


def test_long_polars_frame_is_sampled_with_exact_nulls() -> None:
    n = 400_000
    df = pl.DataFrame({"x": np.arange(n, dtype=np.float64)}).with_columns(
        pl.when(pl.col("x") % 4 == 0).then(None).otherwise(pl.col("x")).alias("x"))
    text = summarize(df)
    assert f"sample of {SAMPLE_ROWS:,} of {n:,} rows" in text and "nulls are exact" in text
    assert row(text, "x")[2] == f"{n // 4:,}"
    assert len(text) < BUDGET


def test_polars_series_and_lazyframe_is_never_collected() -> None:
    calls: list[int] = []

    def boom(x: int) -> int:
        calls.append(x)
        raise RuntimeError("collected!")

    lazy = pl.LazyFrame({"a": [1, 2]}).with_columns(
        pl.col("a").map_elements(boom, return_dtype=pl.Int64).alias("b"))
    text = summarize(lazy)
    assert "LazyFrame (not collected)" in text and "b: Int64" in text and calls == []
    assert summary_line(lazy) == "polars LazyFrame (not collected): 2 columns"
    s = pl.Series("n", [1, 2, 3])
    assert summarize(s).startswith("polars.Series 'n': 3 rows")


# ------------------------------------------------------------------------------ numpy
def test_small_array_exact() -> None:
    arr = np.array([[1.0, np.nan], [3.0, 4.0]])
    text = summarize(arr)
    assert text.startswith("numpy.ndarray: shape (2, 2), dtype float64, 32 B")
    assert "stats (all values): min 1, p50 3, max 4" in text and "nan: 1" in text
    assert summary_line(arr) == "ndarray shape (2, 2), dtype float64"


def test_big_array_is_sampled() -> None:
    arr = np.arange(3_000_000, dtype=np.int64).reshape(1000, 3000)
    text = summarize(arr)
    assert "a random sample of" in text and "of 3,000,000 values" in text
    assert "..." in text and len(text) < BUDGET  # numpy's own summarised print


def test_object_and_structured_arrays_never_call_every_repr() -> None:
    class Slow:
        def __repr__(self) -> str:
            time.sleep(60)
            return "slow"

    arr = np.array([Slow() for _ in range(100)], dtype=object)
    start = time.perf_counter()
    text = summarize(arr)
    assert time.perf_counter() - start < 30  # 8 previews at most, each cut after 1 s
    assert "repr took over" in text
    rec = np.zeros(3, dtype=[("x", "i4"), ("y", "f8")])
    assert "fields: x: int32, y: float64" in summarize(rec)
    assert "shape ()" in summarize(np.array(5.0)) and "shape (0,)" in summarize(np.array([]))


# ------------------------------------------------------------------------------ builtins
def test_containers_preview_and_recursion() -> None:
    rec: list = [1, "two"]
    rec.append(rec)
    text = summarize(rec)
    assert text.startswith("list: 3 items (types: int ×1, str ×1, list ×1)")
    assert "[2] [1, 'two', [...]]" in text
    d: dict = {"a": 1}
    d["self"] = d
    assert "{...}" in summarize(d) and "{...}" in summary_line(d)
    big = list(range(1_000_000))
    text = summarize(big)
    assert len(text) < BUDGET and "[999999] 999999" in text and "more items" in text
    assert summary_line({1, 2, 3}).startswith("3 items: {")


def test_container_subclass_overrides_are_not_called() -> None:
    class Sneaky(list):
        def __len__(self) -> int:
            raise RuntimeError("len")

        def __iter__(self):  # type: ignore[no-untyped-def]
            raise RuntimeError("iter")

        def __repr__(self) -> str:
            raise RuntimeError("repr")

    text = summarize(Sneaky([1, 2, 3]))
    assert "3 items" in text and "[2] 3" in text


def test_strings() -> None:
    s = "head-" + "m" * 100_000 + "-tail"
    text = summarize(s)
    assert text.startswith("str: 100,010 characters, 1 lines")
    assert "head-" in text and "-tail" in text and "characters cut" in text
    assert len(text) < BUDGET
    assert summarize("short") == "str: 5 characters, 1 lines\nshort"


def test_functions_classes_numbers() -> None:
    def area(w: float, h: float = 1.0) -> float:
        """Area of a rectangle."""
        return w * h

    sig = str(inspect.signature(area))
    assert summarize(area) == (f"function test_functions_classes_numbers.<locals>.area{sig}\n"
                               "Area of a rectangle.")
    assert summary_line(area) == f"def area{sig}"
    text = summarize(pd.DataFrame)
    assert text.startswith("class DataFrame(") and "bases: NDFrame" in text
    assert summarize(3.5) == "float: 3.5"
    assert "digits" in summarize(10 ** 20_000)  # no ValueError from the int-to-str limit


# ------------------------------------------------------------------------------ hostile
class RaisingRepr:
    def __repr__(self) -> str:
        raise ValueError("broken")


class HangingRepr:
    def __repr__(self) -> str:
        time.sleep(600)
        return "never"


class HugeRepr:
    def __repr__(self) -> str:
        return "x" * 10_000_000


class NotAStringRepr:
    def __repr__(self):  # type: ignore[no-untyped-def]
        return 42


@pytest.mark.parametrize("obj, expected", [
    (RaisingRepr(), "repr raised ValueError"),
    (HangingRepr(), "repr took over 1 s"),
    (NotAStringRepr(), "repr raised TypeError"),
])
def test_hostile_reprs(obj: object, expected: str) -> None:
    start = time.perf_counter()
    assert expected in summarize(obj)
    assert expected.replace(" 1 s", "") in summary_line(obj)
    assert time.perf_counter() - start < 10  # bounded, never 600 s


def test_a_ten_megabyte_repr_is_cut() -> None:
    text = summarize(HugeRepr())
    assert len(text) < BUDGET and "more characters" in text
    assert len(summary_line(HugeRepr())) <= 120

"""Tests of the ``streams`` package (readers of files, stdin, sockets and arrays)."""

from __future__ import annotations

import bz2
import contextlib
import gzip
import io
import itertools
import json
import lzma
import pathlib
import re
import socket
import subprocess
import sys
import threading
import time
import warnings

import numpy as np
import pytest

import streams
from streams import (StreamError, StreamWarning, iter_array, open_source, read_csv,
                     read_jsonl, read_libsvm)

OPENERS = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open, "": open}


def write(path: pathlib.Path, text, suffix: str = "") -> pathlib.Path:
    """Write ``text`` (str or bytes) to ``path`` + suffix, compressed by suffix."""
    path = path.with_name(path.name + suffix)
    data = text.encode("utf-8") if isinstance(text, str) else text
    with OPENERS[suffix](path, "wb") as fh:
        fh.write(data)
    return path


# ---------------------------------------------------------------------------
# package hygiene
# ---------------------------------------------------------------------------

def test_public_api_and_no_onlinemkl_import():
    code = ("import sys, streams; "
            "assert 'onlinemkl' not in sys.modules, 'streams imported onlinemkl'; "
            "assert 'pandas' not in sys.modules, 'streams imported pandas eagerly'; "
            "print(sorted(streams.__all__))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=30, cwd=pathlib.Path(streams.__file__).parent.parent)
    assert out.returncode == 0, out.stderr
    for name in ("read_csv", "read_libsvm", "read_jsonl", "iter_array", "open_source",
                 "StreamError", "StreamWarning"):
        assert name in streams.__all__
        assert getattr(streams, name) is not None
    assert issubclass(StreamError, ValueError)
    assert streams.__doc__
    for name in ("read_csv", "read_libsvm", "read_jsonl", "iter_array", "open_source"):
        doc = getattr(streams, name).__doc__
        assert "Parameters" in doc and "Examples" in doc and ">>>" in doc, name


def test_no_import_of_onlinemkl_in_source():
    pkg = pathlib.Path(streams.__file__).parent
    for path in pkg.glob("*.py"):
        text = path.read_text()
        assert "import onlinemkl" not in text and "from onlinemkl" not in text, path


# ---------------------------------------------------------------------------
# CSV
# ---------------------------------------------------------------------------

def test_csv_default_target_is_last_column_and_labels_stay_strings(tmp_path):
    path = write(tmp_path / "d.csv", "a,b,label\n1,2.5,yes\n-3,1e2,0\n")
    assert list(read_csv(path)) == [({"a": 1.0, "b": 2.5}, "yes"), ({"a": -3.0, "b": 100.0}, "0")]


def test_labels_of_every_reader_are_one_class_per_label():
    """A CSV file's text labels, JSON numbers and text, and LIBSVM's numbers name the same classes:
    a model learning from all three readers keeps the CSV file's two classes."""
    from onlinemkl.features import label_key
    from onlinemkl.river import ProximalMKLClassifier

    csv_rows = list(read_csv(io.StringIO("a,label\n0.5,1\n-0.5,2\n0.7,1.0\n")))
    jsonl_rows = list(read_jsonl(io.StringIO('{"x": {"a": 0.4}, "y": 1}\n{"x": {"a": -0.2}, "y": "2"}\n'
                                             '{"x": {"a": 0.1}, "y": 2.0}\n')))
    libsvm_rows = list(read_libsvm(io.StringIO("+1 1:0.3\n2.0 1:-0.6\n")))
    assert [y for _, y in csv_rows] == ["1", "2", "1.0"]  # the readers keep the labels as written
    assert [y for _, y in jsonl_rows] == [1, "2", 2.0] and [y for _, y in libsvm_rows] == [1, 2]
    for rows in (csv_rows, jsonl_rows, libsvm_rows):
        assert [label_key(y) for _, y in rows] in ([1, 2, 1], [1, 2, 2], [1, 2])
    model = ProximalMKLClassifier(budget=20)
    for x, y in csv_rows + jsonl_rows:
        model.learn_one(x, y)
    for x, y in libsvm_rows:
        model.learn_one({"a": x[0]}, y)
    assert model._labels.labels == ["1", "2"]
    assert set(model.predict_proba_one({"a": 0.5})) == {"1", "2"}


def test_csv_target_by_name_and_str_path(tmp_path):
    path = write(tmp_path / "d.csv", "a,y,b\n1,cat,2\n")
    records = list(read_csv(str(path), "y"))
    assert records == [({"a": 1.0, "b": 2.0}, "cat")]
    assert all(type(v) is float for v in records[0][0].values())


def test_csv_unlabelled_input():
    records = list(read_csv(io.StringIO("a,b\n1,2\n3,4\n"), has_target=False))
    assert records == [({"a": 1.0, "b": 2.0}, None), ({"a": 3.0, "b": 4.0}, None)]
    with pytest.raises(ValueError, match="has_target"):
        read_csv(io.StringIO("a\n1\n"), "a", has_target=False)


def test_csv_empty_fields_are_left_out_of_x():
    data = io.StringIO("a,b,c,y\n1,,3,p\n,,,q\n1, ,2,r\n")
    assert list(read_csv(data)) == [({"a": 1.0, "c": 3.0}, "p"), ({}, "q"),
                                    ({"a": 1.0, "c": 2.0}, "r")]


def test_csv_custom_missing_markers():
    data = io.StringIO("a,b,y\nNA,2,p\n?,nan,q\n")
    assert list(read_csv(data, missing=["", "NA", "?", "nan"])) == [({"b": 2.0}, "p"), ({}, "q")]


def test_csv_non_numeric_column_is_bad_line_unless_categorical(tmp_path):
    path = write(tmp_path / "people.csv", "age,city,y\n31,Paris,1\n42,Oslo,0\n")
    with pytest.raises(StreamError) as info:
        list(read_csv(path))
    msg = str(info.value)
    assert "people.csv line 2" in msg
    assert "'city' = 'Paris' is not a number" in msg
    assert "categorical=" in msg and "on_error='skip'" in msg
    assert info.value.line_no == 2 and info.value.source == str(path)
    assert list(read_csv(path, categorical=["city"])) == [
        ({"age": 31.0, "city": "Paris"}, "1"), ({"age": 42.0, "city": "Oslo"}, "0")]
    assert list(read_csv(path, drop=["city"])) == [({"age": 31.0}, "1"), ({"age": 42.0}, "0")]


def test_csv_decimal_comma_hint():
    with pytest.raises(StreamError, match="decimal separator"):
        list(read_csv(io.StringIO("a;y\n1,5;0\n"), delimiter=";"))


@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-Infinity", "1e999"])
def test_csv_non_finite_values_are_bad_lines(value):
    data = f"a,y\n1,p\n{value},q\n2,r\n"
    with pytest.raises(StreamError, match=r"line 3: column 'a' = .* is not a finite number"):
        list(read_csv(io.StringIO(data)))
    reader = read_csv(io.StringIO(data), on_error="skip")
    assert list(reader) == [({"a": 1.0}, "p"), ({"a": 2.0}, "r")]
    assert [n for n, _ in reader.skipped] == [3]


def test_csv_wrong_field_count_is_bad_line():
    data = "a,b,y\n1,2,p\n1,2\n1,2,3,4\n5,6,q\n"
    with pytest.raises(StreamError, match="line 3: has 2 fields, the header has 3"):
        list(read_csv(io.StringIO(data)))
    reader = read_csv(io.StringIO(data), on_error="skip")
    assert list(reader) == [({"a": 1.0, "b": 2.0}, "p"), ({"a": 5.0, "b": 6.0}, "q")]
    assert reader.n_read == 2 and reader.n_skipped == 2
    assert [n for n, _ in reader.skipped] == [3, 4]
    assert "has 4 fields" in reader.skipped[1][1]


def test_csv_quoted_fields():
    data = ('name,note,x,y\n'
            '"Smith, J","said ""hi""",1,a\n'
            '"multi\nline",plain,2,b\n'
            'z,w,3,c\n')
    records = list(read_csv(io.StringIO(data), categorical=["name", "note"]))
    assert records == [({"name": "Smith, J", "note": 'said "hi"', "x": 1.0}, "a"),
                       ({"name": "multi\nline", "note": "plain", "x": 2.0}, "b"),
                       ({"name": "z", "note": "w", "x": 3.0}, "c")]


def test_csv_malformed_quote_reported_at_record_start():
    data = 'a,y\n1,p\n"2"x,q\n3,r\n'
    reader = read_csv(io.StringIO(data), on_error="skip")
    assert list(reader) == [({"a": 1.0}, "p"), ({"a": 3.0}, "r")]
    assert reader.skipped[0][0] == 3 and "malformed CSV" in reader.skipped[0][1]


def test_csv_line_numbers_after_multiline_record():
    data = 'a,y\n"1\n",1\nbad,q\n'
    with pytest.raises(StreamError, match="line 4:"):
        list(read_csv(io.StringIO(data), categorical=["a"], target_type=int))


@pytest.mark.parametrize("delimiter", ["\t", ";", "|"])
def test_csv_delimiters(delimiter):
    data = delimiter.join(["a", "b", "y"]) + "\n" + delimiter.join(["1", "2", "z"]) + "\n"
    assert list(read_csv(io.StringIO(data), delimiter=delimiter)) == [({"a": 1.0, "b": 2.0}, "z")]


def test_csv_target_types():
    data = "a,y\n1,2\n2,3.0\n"
    assert [y for _, y in read_csv(io.StringIO(data), target_type=int)] == [2, 3]
    assert [y for _, y in read_csv(io.StringIO(data), target_type=float)] == [2.0, 3.0]
    assert [y for _, y in read_csv(io.StringIO(data))] == ["2", "3.0"]
    assert [y for _, y in read_csv(io.StringIO(data), target_type=lambda s: s + "!")] == \
        ["2!", "3.0!"]
    with pytest.raises(StreamError, match="line 2: target column 'y' = '2.5' is not an integer"):
        list(read_csv(io.StringIO("a,y\n1,2.5\n"), target_type=int))
    with pytest.raises(StreamError, match="line 2: target column 'y' = 'nan' is not a finite"):
        list(read_csv(io.StringIO("a,y\n1,nan\n"), target_type=float))
    with pytest.raises(TypeError):
        read_csv(io.StringIO(data), target_type="int")


def test_csv_empty_label_is_bad_line():
    reader = read_csv(io.StringIO("a,y\n1,\n2,q\n"), on_error="skip")
    assert list(reader) == [({"a": 2.0}, "q")]
    assert reader.skipped == [(2, "the target column 'y' is empty")]


def test_csv_converters():
    def size(value):
        return {"S": 1.0, "M": 2.0, "L": 3.0}[value]

    def maybe(value):
        return None if value == "n/a" else float(value) * 10

    data = "size,v,y\nS,1,a\nL,n/a,b\nXL,2,c\n"
    reader = read_csv(io.StringIO(data), converters={"size": size, "v": maybe,
                                                     "y": str.upper}, on_error="skip")
    assert list(reader) == [({"size": 1.0, "v": 10.0}, "A"), ({"size": 3.0}, "B")]
    assert reader.skipped[0][0] == 4
    assert "converters['size'] failed on 'XL' (KeyError" in reader.skipped[0][1]
    with pytest.raises(ValueError, match="not both"):
        read_csv(io.StringIO(data), "y", converters={"y": str}, target_type=int)


def test_csv_header_problems_always_raise():
    with pytest.raises(StreamError, match="target column 'z' is not in the header"):
        list(read_csv(io.StringIO("a,y\n1,2\n"), "z", on_error="skip"))
    with pytest.raises(StreamError, match="column 'a' twice"):
        list(read_csv(io.StringIO("a,a,y\n1,2,3\n"), on_error="skip"))
    with pytest.raises(StreamError, match="header column 2 has no name"):
        list(read_csv(io.StringIO("a,,y\n1,2,3\n"), on_error="skip"))
    with pytest.raises(StreamError, match="no header row"):
        list(read_csv(io.StringIO(""), on_error="skip"))
    with pytest.raises(StreamError, match="drop= column 'q'"):
        list(read_csv(io.StringIO("a,y\n1,2\n"), drop=["q"]))
    with pytest.raises(StreamError, match="categorical= column 'q'"):
        list(read_csv(io.StringIO("a,y\n1,2\n"), categorical=["q"]))
    with pytest.raises(StreamError, match="also in drop"):
        list(read_csv(io.StringIO("a,y\n1,2\n"), drop=["y"]))
    with pytest.raises(TypeError, match="categorical=\\['city'\\]"):
        read_csv(io.StringIO("a\n"), categorical="city")


def test_csv_blank_lines_whitespace_bom_and_columns():
    raw = "\ufeff a , b ,y\n\n 1 , 2 , yes \n   \n3,4,no\n".encode("utf-8")
    reader = read_csv(io.BytesIO(raw))
    assert list(reader) == [({"a": 1.0, "b": 2.0}, "yes"), ({"a": 3.0, "b": 4.0}, "no")]
    assert reader.columns == ["a", "b", "y"]
    assert reader.n_skipped == 0


def test_csv_header_only_gives_no_records():
    reader = read_csv(io.StringIO("a,b,y\n"))
    assert list(reader) == [] and reader.n_read == 0


# ---------------------------------------------------------------------------
# LIBSVM
# ---------------------------------------------------------------------------

def test_libsvm_edge_cases(tmp_path):
    text = ("# header comment\r\n"
            "\r\n"
            "+1 1:0.5   3:2\t\t4:-1 # trailing\r\n"
            "   \t \r\n"
            "-1 qid:7 2:1e-3\r\n"
            "2.5   # no features\r\n"
            "3.0 10:0\n"
            "-2 5:1")
    path = write(tmp_path / "d.svm", text)
    records = list(read_libsvm(path))
    assert records == [({0: 0.5, 2: 2.0, 3: -1.0}, 1), ({1: 0.001}, -1), ({}, 2.5),
                       ({9: 0.0}, 3), ({4: 1.0}, -2)]
    labels = [y for _, y in records]
    assert [type(v) for v in labels] == [int, int, float, int, int]
    assert all(type(k) is int for x, _ in records for k in x)
    assert all(type(v) is float for x, _ in records for v in x.values())


def test_libsvm_zero_based():
    data = "1 0:1 2:3\n"
    assert list(read_libsvm(io.StringIO(data), zero_based=True)) == [({0: 1.0, 2: 3.0}, 1)]
    with pytest.raises(StreamError, match="line 1: feature index 0 in a 1-based file; pass "
                                          "zero_based=True"):
        list(read_libsvm(io.StringIO(data)))
    with pytest.raises(TypeError):
        read_libsvm(io.StringIO(data), zero_based="yes")


@pytest.mark.parametrize("line, reason", [
    ("1 1:abc", "feature 1 = 'abc' is not a number"),
    ("1 1:nan", "feature 1 = 'nan' is not a finite number"),
    ("1 1:inf", "is not a finite number"),
    ("1 1:", "feature 1 = '' is not a number"),
    ("1 7", "token '7' is not index:value"),
    ("1 x:2", "feature index 'x'"),
    ("1 -1:2", "feature index -1"),
    ("1 2:1 2:3", "feature index 2 appears twice"),
    ("yes 1:2", "label 'yes' is not a number"),
    ("1,2 1:2", "multilabel"),
    ("1:2 3:4", "not with a label"),
    ("nan 1:2", "label 'nan' is not a finite number"),
])
def test_libsvm_bad_lines(line, reason):
    data = f"1 1:1\n{line}\n-1 2:2\n"
    with pytest.raises(StreamError) as info:
        list(read_libsvm(io.StringIO(data)))
    assert "line 2:" in str(info.value) and reason in str(info.value)
    reader = read_libsvm(io.StringIO(data), on_error="skip")
    assert list(reader) == [({0: 1.0}, 1), ({1: 2.0}, -1)]
    assert reader.n_skipped == 1 and reader.skipped[0][0] == 2 and reason in reader.skipped[0][1]


# ---------------------------------------------------------------------------
# JSONL
# ---------------------------------------------------------------------------

def test_jsonl_nested_flat_and_array_forms(tmp_path):
    lines = [{"x": {"a": 1, "c": "red"}, "y": 1},
             {"a": 2.5, "b": None, "y": "dog"},
             {"x": [1, 2.5], "y": 0.5, "id": 3},
             {"x": 4, "y": False},          # x is a plain feature here (flat form)
             {"x": {"t": True, "f": False}, "y": True}]
    path = write(tmp_path / "d.jsonl", "\n".join(json.dumps(o) for o in lines) + "\n\n")
    assert list(read_jsonl(path)) == [
        ({"a": 1.0, "c": "red"}, 1), ({"a": 2.5}, "dog"), ({0: 1.0, 1: 2.5}, 0.5),
        ({"x": 4.0}, False), ({"t": 1.0, "f": 0.0}, True)]


def test_jsonl_custom_keys_and_unlabelled():
    data = '{"features": {"a": 1}, "label": 3}\n{"a": 2, "label": 4}\n'
    assert list(read_jsonl(io.StringIO(data), target="label", features="features")) == [
        ({"a": 1.0}, 3), ({"a": 2.0}, 4)]
    data = '{"x": {"a": 1}}\n{"a": 2, "b": "u"}\n'
    assert list(read_jsonl(io.StringIO(data), has_target=False)) == [
        ({"a": 1.0}, None), ({"a": 2.0, "b": "u"}, None)]
    data = '{"x": {"a": 1}, "y": 0}\n'  # features=None: flat form only
    with pytest.raises(StreamError, match="feature 'x' is an object"):
        list(read_jsonl(io.StringIO(data), features=None))


@pytest.mark.parametrize("line, reason", [
    ('{"x": {"a": 1}, "y": 1', "not valid JSON"),
    ("[1, 2]", "the line is an array, not a JSON object"),
    ('"text"', "the line is a string"),
    ('{"x": {"a": 1}}', "no 'y' key"),
    ('{"x": {"a": 1}, "y": null}', "the label 'y' is null"),
    ('{"x": {"a": 1}, "y": [1]}', "the label 'y' is an array"),
    ('{"x": {"a": NaN}, "y": 1}', "feature 'a' = nan is not a finite number"),
    ('{"a": Infinity, "y": 1}', "is not a finite number"),
    ('{"a": 1e999, "y": 1}', "is not a finite number"),
    ('{"x": {"a": 1}, "y": NaN}', "not a finite number"),
    ('{"x": {"a": {"b": 1}}, "y": 1}', "feature 'a' is an object"),
])
def test_jsonl_bad_lines(line, reason, tmp_path):
    path = write(tmp_path / "bad.jsonl", '{"a": 1, "y": 0}\n' + line + '\n{"a": 2, "y": 1}\n')
    with pytest.raises(StreamError) as info:
        list(read_jsonl(path))
    assert str(info.value).startswith(f"{path} line 2: ")
    assert reason in str(info.value)
    reader = read_jsonl(path, on_error="skip")
    assert list(reader) == [({"a": 1.0}, 0), ({"a": 2.0}, 1)]
    assert reader.n_skipped == 1 and reader.skipped[0][0] == 2


# ---------------------------------------------------------------------------
# sources: paths, compression, stdin, file objects, iterables
# ---------------------------------------------------------------------------

CSV_TEXT = "a,b,y\n1,2,é\n3,,ü\n"
CSV_RECORDS = [({"a": 1.0, "b": 2.0}, "é"), ({"a": 3.0}, "ü")]
SVM_TEXT = "1 1:1 2:2\n-1 3:0.5\n"
SVM_RECORDS = [({0: 1.0, 1: 2.0}, 1), ({2: 0.5}, -1)]
JSONL_TEXT = '{"x": {"a": 1}, "y": "é"}\n{"b": 2, "y": 0}\n'
JSONL_RECORDS = [({"a": 1.0}, "é"), ({"b": 2.0}, 0)]
FORMATS = {"csv": (read_csv, CSV_TEXT, CSV_RECORDS),
           "libsvm": (read_libsvm, SVM_TEXT, SVM_RECORDS),
           "jsonl": (read_jsonl, JSONL_TEXT, JSONL_RECORDS)}


@pytest.mark.parametrize("fmt", sorted(FORMATS))
@pytest.mark.parametrize("suffix", ["", ".gz", ".bz2", ".xz"])
def test_every_reader_every_compression(tmp_path, fmt, suffix):
    reader_fn, text, expected = FORMATS[fmt]
    path = write(tmp_path / f"data.{fmt}", text, suffix)
    if suffix:  # really compressed on disk
        assert path.read_bytes() != text.encode("utf-8")
    assert list(reader_fn(path)) == expected          # pathlib.Path
    assert list(reader_fn(str(path))) == expected     # str


def test_compressed_bad_line_names_the_file(tmp_path):
    path = write(tmp_path / "d.csv", "a,y\n1,p\nx,q\n", ".gz")
    with pytest.raises(StreamError, match=r"d\.csv\.gz line 3: column 'a' = 'x'"):
        list(read_csv(path))


def test_corrupt_compressed_file_raises(tmp_path):
    path = tmp_path / "broken.csv.gz"
    path.write_bytes(b"this is not gzip data\n")
    with pytest.raises(StreamError, match=r"broken\.csv\.gz line 1: cannot read"):
        list(read_csv(path, on_error="skip"))
    path = tmp_path / "trunc.libsvm.xz"
    path.write_bytes(lzma.compress(SVM_TEXT.encode() * 100)[:-20])
    with pytest.raises(StreamError, match="trunc.libsvm.xz"):
        list(read_libsvm(path))


def test_missing_file_raises_naming_it(tmp_path):
    path = tmp_path / "nope.csv"
    reader = read_csv(path)  # lazy: nothing opened yet
    with pytest.raises(StreamError, match=r"cannot open .*nope\.csv: No such file"):
        list(reader)


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_stdin_text(monkeypatch, fmt):
    reader_fn, text, expected = FORMATS[fmt]
    monkeypatch.setattr(sys, "stdin", io.StringIO(text))
    assert list(reader_fn("-")) == expected


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_stdin_binary_buffer(monkeypatch, fmt):
    reader_fn, text, expected = FORMATS[fmt]
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode("utf-8")),
                                                       encoding="ascii"))
    # bytes are read from sys.stdin.buffer and decoded as UTF-8 by the reader,
    # whatever the (here wrong) encoding of the text wrapper
    assert list(reader_fn("-")) == expected


def test_stdin_bad_line_names_stdin(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO("1 1:1\n1 1:x\n"))
    with pytest.raises(StreamError, match="<stdin> line 2: feature 1 = 'x' is not a number"):
        list(read_libsvm("-"))


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_file_objects_text_and_binary(tmp_path, fmt):
    reader_fn, text, expected = FORMATS[fmt]
    assert list(reader_fn(io.StringIO(text))) == expected
    assert list(reader_fn(io.BytesIO(text.encode("utf-8")))) == expected
    path = write(tmp_path / f"d.{fmt}", text)
    with open(path, encoding="utf-8") as fh:
        assert list(reader_fn(fh)) == expected
        assert not fh.closed  # a file object passed in is left open
    with open(path, "rb") as fh:
        assert list(reader_fn(fh)) == expected
    with gzip.open(write(tmp_path / f"e.{fmt}", text, ".gz"), "rt", encoding="utf-8") as fh:
        assert list(reader_fn(fh)) == expected


def test_named_file_object_appears_in_errors(tmp_path):
    path = write(tmp_path / "named.svm", "1 1:1\n\n1 1:?\n")
    with open(path, "rb") as fh, pytest.raises(StreamError, match=r"named\.svm line 3:"):
        list(read_libsvm(fh))


def test_iterable_of_lines_source():
    assert list(read_libsvm(["1 1:1", "-1 2:2\n"])) == [({0: 1.0}, 1), ({1: 2.0}, -1)]
    assert list(read_csv(iter([b"a,y\r\n", b"1,z\r\n"]))) == [({"a": 1.0}, "z")]
    with pytest.raises(TypeError, match="str or bytes"):
        list(read_libsvm([1, 2]))


def test_bad_source_types():
    with pytest.raises(TypeError, match="io.BytesIO"):
        read_csv(b"a,y\n1,2\n")
    with pytest.raises(TypeError, match="cannot read from"):
        read_csv(42)
    with pytest.raises(ValueError, match="on_error"):
        read_csv(io.StringIO(""), on_error="ignore")
    with pytest.raises(StreamError, match="bad TCP address"):
        read_csv("tcp://127.0.0.1")
    with pytest.raises(StreamError, match="bad TCP address"):
        read_csv("tcp://127.0.0.1:99999")
    with pytest.raises(ValueError, match="max_line_bytes"):
        read_csv(io.StringIO(""), max_line_bytes=0)
    with pytest.raises(LookupError):
        read_csv(io.StringIO(""), encoding="no-such-codec")


def test_path_reader_can_be_iterated_twice_and_counters_reset(tmp_path):
    path = write(tmp_path / "d.svm", "1 1:1\nbad\n-1 2:2\n")
    reader = read_libsvm(path, on_error="skip")
    first = list(reader)
    assert (reader.n_read, reader.n_skipped) == (2, 1)
    assert list(reader) == first
    assert (reader.n_read, reader.n_skipped) == (2, 1)


def test_undecodable_bytes(tmp_path):
    path = write(tmp_path / "latin.csv", "a,y\n1,p\n".encode() + b"2,caf\xe9\n3,q\n")
    with pytest.raises(StreamError) as info:
        list(read_csv(path))
    msg = str(info.value)
    assert "latin.csv line 3: bytes are not valid utf-8" in msg and "encoding=" in msg
    reader = read_csv(path, on_error="skip")
    assert list(reader) == [({"a": 1.0}, "p"), ({"a": 3.0}, "q")]
    assert reader.skipped[0][0] == 3
    assert list(read_csv(path, encoding="latin-1")) == [({"a": 1.0}, "p"), ({"a": 2.0}, "café"),
                                                        ({"a": 3.0}, "q")]


def test_max_line_bytes_guard():
    long = "1 " + " ".join(f"{i}:1" for i in range(1, 2000))
    data = ("1 1:1\n" + long + "\n-1 2:2\n").encode()
    with pytest.raises(StreamError, match="line 2: line is longer than max_line_bytes=100"):
        list(read_libsvm(io.BytesIO(data), max_line_bytes=100))
    reader = read_libsvm(io.BytesIO(data), max_line_bytes=100, on_error="skip")
    assert list(reader) == [({0: 1.0}, 1), ({1: 2.0}, -1)]
    assert reader.skipped == [(2, "line is longer than max_line_bytes=100")]
    # text sources are limited in characters, iterables of lines too
    reader = read_libsvm(io.StringIO(data.decode()), max_line_bytes=100, on_error="skip")
    assert len(list(reader)) == 2 and reader.n_skipped == 1
    reader = read_libsvm(data.decode().splitlines(), max_line_bytes=100, on_error="skip")
    assert len(list(reader)) == 2 and reader.n_skipped == 1


@pytest.mark.parametrize("ending", ["\n", "\r\n", ""])
def test_max_line_bytes_exact_limit_is_accepted(ending):
    line = "1 1:" + "1" * 6  # 10 characters
    for source in (io.StringIO(line + ending), io.BytesIO((line + ending).encode())):
        assert list(read_libsvm(source, max_line_bytes=10)) == [({0: 111111.0}, 1)]
    with pytest.raises(StreamError, match="longer than max_line_bytes=9"):
        list(read_libsvm(io.BytesIO((line + ending).encode()), max_line_bytes=9))


# ---------------------------------------------------------------------------
# bad-line policies
# ---------------------------------------------------------------------------

def make_bad_csv(tmp_path, n_bad=15):
    rows = ["a,y"]
    bad_lines = []
    for i in range(1, 41):
        if len(bad_lines) < n_bad and i % 2 == 0:
            rows.append(f"oops{i},x")
            bad_lines.append(len(rows))
        else:
            rows.append(f"{i},x")
    return write(tmp_path / "many.csv", "\n".join(rows) + "\n"), bad_lines


def test_policy_raise_message(tmp_path):
    path, bad = make_bad_csv(tmp_path)
    with pytest.raises(StreamError) as info:
        list(read_csv(path))
    err = info.value
    assert isinstance(err, ValueError)
    assert str(err).startswith(f"{path} line {bad[0]}: column 'a' = 'oops2' is not a number;")
    assert "fix the value" in str(err) and "on_error='skip'" in str(err)
    assert (err.source, err.line_no) == (str(path), bad[0])
    assert err.reason == "column 'a' = 'oops2' is not a number"


def test_policy_raise_keeps_records_before_the_bad_line(tmp_path):
    path, bad = make_bad_csv(tmp_path)
    reader = read_csv(path)
    got = []
    with pytest.raises(StreamError):
        for record in reader:
            got.append(record)
    assert len(got) == bad[0] - 2 == reader.n_read


def test_policy_skip_counts_and_first_line_numbers(tmp_path):
    path, bad = make_bad_csv(tmp_path, n_bad=15)
    reader = read_csv(path, on_error="skip")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # skip must not warn
        records = list(reader)
    assert len(records) == 40 - 15 == reader.n_read
    assert reader.n_skipped == 15
    assert len(reader.skipped) == 10
    assert [n for n, _ in reader.skipped] == bad[:10]
    assert all("is not a number" in why for _, why in reader.skipped)
    summary = reader.summary()
    assert "\n" not in summary
    assert summary.startswith(f"{path}: 25 records read, 15 bad lines skipped (first at line "
                              f"{bad[0]}: column 'a' = 'oops2' is not a number;")
    assert ", ".join(map(str, bad[:10])) + ", ...)" in summary


def test_policy_warn_emits_warnings_with_line_numbers(tmp_path):
    path, bad = make_bad_csv(tmp_path, n_bad=3)
    reader = read_csv(path, on_error="warn")
    with pytest.warns(StreamWarning) as record:
        records = list(reader)
    assert len(records) == 37 and reader.n_skipped == 3
    messages = [str(w.message) for w in record]
    assert messages == [f"{path} line {n}: column 'a' = 'oops{n - 1}' is not a number (skipped)"
                        for n in bad]
    assert all(w.filename == __file__ for w in record)  # points at the caller's loop


def test_policy_warn_limits_individual_warnings(tmp_path):
    path, bad = make_bad_csv(tmp_path, n_bad=15)
    reader = read_csv(path, on_error="warn")
    with pytest.warns(StreamWarning) as record:
        list(reader)
    messages = [str(w.message) for w in record]
    assert len(messages) == 10 + 1 + 1
    assert all(f"line {n}:" in m for n, m in zip(bad, messages[:10]))
    assert "more than 10 bad lines" in messages[10]
    assert messages[11] == reader.summary()
    assert reader.n_skipped == 15


def test_summary_without_bad_lines():
    reader = read_libsvm(io.StringIO("1 1:1\n"))
    list(reader)
    assert reader.summary() == "<stream>: 1 record read, no bad lines"
    assert "n_read=1" in repr(reader)


# ---------------------------------------------------------------------------
# laziness / constant memory
# ---------------------------------------------------------------------------

class GeneratorRaw(io.RawIOBase):
    """A raw binary stream fed by a generator of byte lines; counts what it produced."""

    def __init__(self, make_line, n_lines, header=None, chunk=None):
        self.produced = 0
        self.chunk = chunk
        self._pending = b""
        self._lines = self._generate(make_line, n_lines, header)

    def _generate(self, make_line, n_lines, header):
        if header is not None:
            yield header
        for i in range(n_lines):
            self.produced += 1
            yield make_line(i)

    def readable(self):
        return True

    def readinto(self, buffer):
        while not self._pending:
            try:
                self._pending = next(self._lines)
            except StopIteration:
                return 0
        n = min(len(buffer), len(self._pending), self.chunk or len(self._pending))
        buffer[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        return n


LAZY = {
    "csv": (read_csv, lambda i: f"{i},{i % 3}\n".encode(), b"a,y\n"),
    "libsvm": (read_libsvm, lambda i: f"{i % 2} 1:{i}\n".encode(), None),
    "jsonl": (read_jsonl, lambda i: json.dumps({"a": i, "y": i % 2}).encode() + b"\n", None),
}


@pytest.mark.parametrize("fmt", sorted(LAZY))
@pytest.mark.parametrize("mode", ["binary", "text"])
def test_readers_are_lazy(fmt, mode):
    reader_fn, make_line, header = LAZY[fmt]
    raw = GeneratorRaw(make_line, 10**6, header)
    source = io.BufferedReader(raw)
    if mode == "text":
        source = io.TextIOWrapper(source, encoding="utf-8")
    reader = reader_fn(source)
    assert raw.produced == 0  # nothing is read before iteration
    records = iter(reader)
    first = list(itertools.islice(records, 5))
    assert len(first) == 5 and reader.n_read == 5
    assert 5 <= raw.produced < 20_000, raw.produced  # a buffer's worth, not 10**6
    # the same iterator continues where it stopped
    nxt = list(itertools.islice(records, 3))
    assert [x for x, _ in first + nxt] == [
        {"a": float(i)} if fmt != "libsvm" else {0: float(i)} for i in range(8)]
    assert raw.produced < 20_000


def test_open_source_is_lazy_and_closes_files(tmp_path, monkeypatch):
    path = write(tmp_path / "d.txt", "a\nb\nc\n")
    opened = []
    real_open = open

    def spy_open(*args, **kwargs):
        fh = real_open(*args, **kwargs)
        opened.append(fh)
        return fh

    monkeypatch.setattr("builtins.open", spy_open)
    lines = open_source(path)
    assert opened == []
    assert next(lines) == (1, "a")
    assert len(opened) == 1 and not opened[0].closed
    lines.close()
    assert opened[0].closed


def test_split_multibyte_characters_in_tiny_reads():
    text = "a,y\n1,日本語\n2,ünï€ødé\n"
    raw = GeneratorRaw(lambda i: b"", 0, text.encode("utf-8"), chunk=1)  # 1 byte per read
    assert list(read_csv(io.BufferedReader(raw, buffer_size=1))) == [
        ({"a": 1.0}, "日本語"), ({"a": 2.0}, "ünï€ødé")]


# ---------------------------------------------------------------------------
# open_source
# ---------------------------------------------------------------------------

def test_open_source_lines_numbers_and_terminators():
    data = b"\xef\xbb\xbfa\r\nb\n\n\r\nc"
    assert list(open_source(io.BytesIO(data))) == [(1, "a"), (2, "b"), (3, ""), (4, ""),
                                                   (5, "c")]
    assert list(open_source(io.StringIO("\ufeffx\ny\n"))) == [(1, "x"), (2, "y")]


def test_open_source_on_bad_callback():
    seen = []
    data = b"ok\n\xff\xfe\n" + b"z" * 50 + b"\nend\n"
    lines = list(open_source(io.BytesIO(data), max_line_bytes=20,
                             on_bad=lambda n, problem, fix: seen.append((n, problem))))
    assert lines == [(1, "ok"), (4, "end")]
    assert [n for n, _ in seen] == [2, 3]
    assert "not valid utf-8" in seen[0][1] and "max_line_bytes=20" in seen[1][1]
    with pytest.raises(StreamError, match="<stream> line 2: bytes are not valid utf-8"):
        list(open_source(io.BytesIO(data)))


# ---------------------------------------------------------------------------
# TCP
# ---------------------------------------------------------------------------

@contextlib.contextmanager
def tcp_server(chunks, delay=0.01, hold=False):
    """Serve ``chunks`` (bytes) one send() at a time to the first client.

    With ``hold=True`` the connection stays open (silent) until the block exits.
    Yields ``(address, state)``; ``state["client_closed"]`` tells whether the
    client closed the connection.
    """
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    server.settimeout(5)
    port = server.getsockname()[1]
    release = threading.Event()
    state = {"client_closed": False, "error": None}

    def serve():
        try:
            conn, _ = server.accept()
        except OSError as exc:  # pragma: no cover - the test failed to connect
            state["error"] = exc
            return
        with conn:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            try:
                for chunk in chunks:
                    conn.sendall(chunk)
                    time.sleep(delay)
                if hold:
                    conn.settimeout(5)
                    try:
                        state["client_closed"] = conn.recv(1) == b""
                    except OSError:
                        state["client_closed"] = True
                    release.wait(5)
            except OSError as exc:  # the client went away while we were sending
                state["error"] = exc
                state["client_closed"] = True

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"tcp://127.0.0.1:{port}", state
    finally:
        release.set()
        thread.join(5)
        server.close()


def split_awkwardly(data: bytes):
    """Chunks cutting lines mid-way and every multi-byte UTF-8 character in two."""
    chunks, start = [], 0
    for i in range(1, len(data)):
        if data[i] & 0xC0 == 0x80 and data[i - 1] & 0xC0 == 0xC0:  # inside a character
            chunks.append(data[start:i])
            start = i
        elif data[i - 1:i] == b"," and i - start > 1:                # mid-line
            chunks.append(data[start:i])
            start = i
    chunks.append(data[start:])
    return chunks


TCP_CASES = {
    "csv": (read_csv, "name,x,y\ncafé,1.5,naïve\n€uro,-2,日本\nplain,3,z\n",
            [({"name": "café", "x": 1.5}, "naïve"), ({"name": "€uro", "x": -2.0}, "日本"),
             ({"name": "plain", "x": 3.0}, "z")], {"categorical": ["name"]}),
    "libsvm": (read_libsvm, "1 1:0.5 2:1 # ünïcödé comment\r\n-1 3:2,\n\n+1 qid:2 4:4\n",
               None, {}),
    "jsonl": (read_jsonl, '{"x": {"é": 1, "k": "€"}, "y": "日本"}\n{"b": 2, "y": 0}\n',
              [({"é": 1.0, "k": "€"}, "日本"), ({"b": 2.0}, 0)], {}),
}


@pytest.mark.parametrize("fmt", sorted(TCP_CASES))
def test_tcp_split_chunks(fmt):
    reader_fn, text, expected, kwargs = TCP_CASES[fmt]
    data = text.encode("utf-8")
    chunks = split_awkwardly(data)
    assert len(chunks) > 4 and b"".join(chunks) == data
    # at least one chunk boundary falls inside a multi-byte character
    assert any(c[-1] & 0xC0 == 0xC0 for c in chunks[:-1])
    with tcp_server(chunks) as (address, state):
        reader = reader_fn(address, on_error="skip", timeout=5, **kwargs)
        records = list(reader)
    assert state["error"] is None
    if fmt == "libsvm":  # line 2 has a bad value "2," -> skipped and counted
        assert records == [({0: 0.5, 1: 1.0}, 1), ({3: 4.0}, 1)]
        assert reader.skipped == [(2, "feature 3 = '2,' is not a number")]
        assert reader.summary().startswith(f"{address}: 2 records read, 1 bad line skipped")
    else:
        assert records == expected and reader.n_skipped == 0


def test_tcp_bad_line_error_names_address():
    with tcp_server([b"a,y\n1,p\n", b"x,q\n"]) as (address, _):
        with pytest.raises(StreamError, match=rf"^{address} line 3: column 'a' = 'x'"):
            list(read_csv(address))


def free_port():
    probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # never listened: connecting is refused
    return port


@pytest.mark.parametrize("reader_fn", [read_csv, read_libsvm, read_jsonl])
def test_tcp_connection_refused(reader_fn):
    address = f"tcp://127.0.0.1:{free_port()}"
    reader = reader_fn(address, timeout=2, connect_timeout=2)  # lazy: no connection yet
    with pytest.raises(StreamError) as info:
        list(reader)
    assert str(info.value).startswith(f"cannot connect to {address}: ")
    assert "refused" in str(info.value).lower()


def test_tcp_connect_timeout_message(monkeypatch):
    def slow(*args, **kwargs):
        raise TimeoutError("timed out")

    monkeypatch.setattr(streams._source.socket, "create_connection", slow)
    with pytest.raises(StreamError, match=r"cannot connect to tcp://127\.0\.0\.1:5: no answer "
                                          r"within 0\.5 s.*connect_timeout="):
        list(read_libsvm("tcp://127.0.0.1:5", connect_timeout=0.5))


def test_tcp_read_timeout():
    with tcp_server([b"1 1:1\n", b"-1 2:"], hold=True) as (address, _):
        reader = read_libsvm(address, timeout=0.3)
        got = []
        start = time.monotonic()
        with pytest.raises(StreamError) as info:
            for record in reader:
                got.append(record)
        elapsed = time.monotonic() - start
    assert got == [({0: 1.0}, 1)]
    msg = str(info.value)
    assert msg.startswith(f"{address}: read timed out after 0.3 s waiting for line 2")
    assert "timeout=" in msg
    assert 0.25 < elapsed < 4


def test_tcp_endless_line_is_bounded():
    junk = b"9" * 20_000
    chunks = [b"1 1:1\n", b"1 "] + [junk] * 20 + [b"\n", b"-1 2:2\n"]  # a 400 kB line
    with tcp_server(chunks, delay=0) as (address, _):
        reader = read_libsvm(address, max_line_bytes=1000, on_error="skip", timeout=5)
        assert list(reader) == [({0: 1.0}, 1), ({1: 2.0}, -1)]
    assert reader.skipped == [(2, "line is longer than max_line_bytes=1000")]
    with tcp_server(chunks, delay=0) as (address, _):
        with pytest.raises(StreamError, match=f"{address} line 2: line is longer than "
                                              "max_line_bytes=1000"):
            list(read_libsvm(address, max_line_bytes=1000, timeout=5))


def test_tcp_early_stop_closes_the_connection():
    lines = [f"{i % 2} 1:{i}\n".encode() for i in range(50)]
    with tcp_server(lines, delay=0, hold=True) as (address, state):
        reader = read_libsvm(address, timeout=5)
        it = iter(reader)
        assert [y for _, y in itertools.islice(it, 3)] == [0, 1, 0]
        it.close()
        for _ in range(100):
            if state["client_closed"]:
                break
            time.sleep(0.02)
        assert state["client_closed"]


def test_tcp_ipv6_address_syntax():
    reader = read_jsonl("tcp://[::1]:9000")
    assert reader.source_name == "tcp://[::1]:9000"


# ---------------------------------------------------------------------------
# iter_array
# ---------------------------------------------------------------------------

def test_iter_array_numpy():
    X = np.array([[1.0, 2.0, 3.0], [4.0, np.nan, 6.0]])
    y = np.array([0, 1])
    records = list(iter_array(X, y))
    assert records == [({0: 1.0, 1: 2.0, 2: 3.0}, 0), ({0: 4.0, 2: 6.0}, 1)]
    assert type(records[0][1]) is int and type(records[0][0][0]) is float
    assert list(iter_array(X, feature_names=["a", "b", "c"]))[1] == ({"a": 4.0, "c": 6.0}, None)
    assert len(iter_array(X)) == 2
    assert list(iter_array([[1, 2]], ["lbl"])) == [({0: 1, 1: 2}, "lbl")]


def test_iter_array_validation_and_bad_rows():
    with pytest.raises(ValueError, match="2-D"):
        iter_array(np.zeros(3))
    with pytest.raises(ValueError, match="3 rows but y has 2"):
        iter_array(np.zeros((3, 2)), np.zeros(2))
    with pytest.raises(ValueError, match="feature_names has 1 names"):
        iter_array(np.zeros((3, 2)), feature_names=["a"])
    X = np.array([[1.0, np.inf], [2.0, 3.0], [4.0, 5.0]])
    y = np.array([1.0, 2.0, np.nan])
    with pytest.raises(StreamError, match="<array> row 0: column 1 is inf"):
        list(iter_array(X, y))
    reader = iter_array(X, y, on_error="skip")
    assert list(reader) == [({0: 2.0, 1: 3.0}, 2.0)]
    assert [n for n, _ in reader.skipped] == [0, 2]
    assert "bad rows skipped" in reader.summary()


def test_iter_array_many_rows_in_blocks():
    X = np.arange(5000, dtype=float).reshape(2500, 2)
    records = list(iter_array(X, np.arange(2500)))
    assert len(records) == 2500
    assert records[2499] == ({0: 4998.0, 1: 4999.0}, 2499)
    first = next(iter(iter_array(X)))
    assert first == ({0: 0.0, 1: 1.0}, None)


def test_iter_array_pandas():
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"a": [1.0, np.nan, 3.0], "city": ["Oslo", None, "Rio"],
                       "n": pd.array([1, None, 3], dtype="Int64"),
                       "target": ["p", "q", "r"]})
    records = list(iter_array(df, "target"))
    assert records == [({"a": 1.0, "city": "Oslo", "n": 1}, "p"), ({}, "q"),
                       ({"a": 3.0, "city": "Rio", "n": 3}, "r")]
    X, y = df.drop(columns=["target"]), df["target"]
    assert list(iter_array(X, y)) == records
    assert list(iter_array(X[["a"]], y, feature_names=["A"]))[0] == ({"A": 1.0}, "p")
    with pytest.raises(ValueError, match="not a column"):
        iter_array(df, "nope")


def test_iter_array_sparse():
    sparse = pytest.importorskip("scipy.sparse")
    X = sparse.csr_matrix(np.array([[0.0, 1.5, 0.0], [2.0, 0.0, 0.0], [0.0, 0.0, 0.0]]))
    assert list(iter_array(X, [1, 0, 1])) == [({1: 1.5}, 1), ({0: 2.0}, 0), ({}, 1)]
    assert list(iter_array(X.tocoo(), feature_names=["a", "b", "c"]))[1] == ({"a": 2.0}, None)


def test_iter_array_matches_libsvm_keys():
    X = np.array([[0.5, 0.0, 2.0]])
    svm = list(read_libsvm(io.StringIO("1 1:0.5 3:2\n")))
    arr = list(iter_array(X, [1]))
    assert {k: v for k, v in arr[0][0].items() if v} == svm[0][0]


# -- the delimiter: sniffed with delimiter=None, a wrong one refused --------------------------


@pytest.mark.parametrize("delimiter", [",", ";", "\t", "|"])
def test_csv_delimiter_none_sniffs_it(delimiter):
    data = delimiter.join(["a", "b", "y"]) + "\n" + delimiter.join(["1", "2.5", "z"]) + "\n"
    reader = read_csv(io.StringIO(data), delimiter=None)
    assert list(reader) == [({"a": 1.0, "b": 2.5}, "z")]
    assert reader.delimiter_used == delimiter


def test_csv_sniffing_looks_past_the_header_and_keeps_quoted_fields():
    data = 'a,b,y\n1,"x;y",p\n2,"u;v",q\n'
    assert list(read_csv(io.StringIO(data), delimiter=None, categorical=["b"])) == [
        ({"a": 1.0, "b": "x;y"}, "p"), ({"a": 2.0, "b": "u;v"}, "q")]
    # one column: nothing to sniff, a comma
    assert list(read_csv(io.StringIO("y\n1\n"), delimiter=None)) == [({}, "1")]


@pytest.mark.parametrize("data, other", [("a;b;y\n1;2;0\n", "';'"), ("a\tb\ty\n1\t2\t0\n", "'\\t' (tab)")])
def test_csv_one_column_header_holding_another_delimiter_is_refused(data, other):
    with pytest.raises(StreamError, match="line 1: the header is one column, .* containing " + re.escape(other)
                                          + ": the file is not delimited by ','; pass delimiter="):
        list(read_csv(io.StringIO(data)))


# -- zero-based libsvm: zero_based="auto" looks ahead for an index 0 ---------------------------


def test_libsvm_auto_detects_a_zero_based_file_like_scikit_learn(tmp_path):
    from sklearn.datasets import dump_svmlight_file, load_svmlight_file

    X = np.array([[0.0, 1.5, 0.0], [2.0, 0.0, -1.0], [0.0, 0.0, 3.0]])
    path = tmp_path / "sk.svm"
    dump_svmlight_file(X, np.array([1, 0, 1]), str(path))  # zero-based, as scikit-learn writes
    reader = read_libsvm(str(path), zero_based="auto")
    records = list(reader)
    assert reader.index_base == 0
    Xs, ys = load_svmlight_file(str(path), zero_based="auto")
    assert [{k: v for k, v in enumerate(row) if v} for row in Xs.toarray()] == [x for x, _ in records]
    one = read_libsvm(io.StringIO("1 1:2 3:4\n0 2:1\n"), zero_based="auto")
    assert list(one) == [({0: 2.0, 2: 4.0}, 1), ({1: 1.0}, 0)] and one.index_base == 1


def test_libsvm_auto_index_zero_after_the_look_ahead_is_a_bad_line(monkeypatch):
    import streams._libsvm as libsvm

    monkeypatch.setattr(libsvm, "AUTO_LINES", 2)
    data = "1 1:2\n0 2:1\n1 0:5\n"
    with pytest.raises(StreamError, match=r"line 3: feature index 0, but the first 2 lines hold none .* pass "
                                          "zero_based=True"):
        list(read_libsvm(io.StringIO(data), zero_based="auto"))


def test_readers_name_the_missing_values_of_the_last_record():
    reader = read_csv(io.StringIO("a,b,c,y\n1,,3,p\n4,5,NA,q\n"), missing=["", "NA"])
    seen = [(x, reader.last_missing) for x, _ in reader]
    assert seen == [({"a": 1.0, "c": 3.0}, ("b",)), ({"a": 4.0, "b": 5.0}, ("c",))]
    reader = read_jsonl(io.StringIO('{"a": 1, "b": null, "y": 0}\n{"a": 2, "y": 1}\n'))
    assert [reader.last_missing for _ in reader] == [("b",), ()]

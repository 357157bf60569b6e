"""The CoNLL-style sequence reader (``streams.read_conll``): files, compressed files, sockets, bad lines."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma

import numpy as np
import pytest

import streams
from streams import StreamError, StreamWarning, read_conll
from test_streams import tcp_server

TEXT = ("# doc 1\n"
        "0.5 1 B\n"
        "0.25\t-2 I\n"
        "\n"
        "\n"
        "3 4 O\n")


def _seqs(reader):
    return [(xs.tolist(), ys) for xs, ys in reader]


def test_sequences_split_on_blank_lines_with_comments_and_tabs():
    reader = read_conll(io.StringIO(TEXT))
    assert _seqs(reader) == [([[0.5, 1.0], [0.25, -2.0]], ["B", "I"]), ([[3.0, 4.0]], ["O"])]
    assert reader.n_read == 2 and reader.n_skipped == 0
    assert reader.line_no == 6 and reader.n_columns == 3 and reader.labelled is True
    assert "read_conll" in streams.__all__ and "CoNLLReader" in streams.__all__


@pytest.mark.parametrize("suffix,opener", [("", open), (".gz", gzip.open), (".bz2", bz2.open), (".xz", lzma.open)])
def test_plain_and_compressed_files(tmp_path, suffix, opener):
    path = tmp_path / f"d.conll{suffix}"
    with opener(path, "wt") as f:
        f.write(TEXT)
    reader = read_conll(str(path))
    assert _seqs(reader)[1] == ([[3.0, 4.0]], ["O"])
    assert _seqs(reader)[0][1] == ["B", "I"]  # a path is re-read on each pass


def test_socket_source_split_mid_line():
    data = TEXT.encode()
    with tcp_server([data[:9], data[9:20], data[20:]]) as (address, _):
        reader = read_conll(address, timeout=5)
        assert [ys for _, ys in reader] == [["B", "I"], ["O"]]
        assert reader.source_name == address


def test_unlabelled_and_auto_label_column():
    assert [ys for _, ys in read_conll(io.StringIO("1 2\n\n3 4\n"), has_target=False)] == [None, None]
    auto = read_conll(io.StringIO("1 2 B\n"), has_target="auto", n_features=2)
    assert _seqs(auto) == [([[1.0, 2.0]], ["B"])]
    auto = read_conll(io.StringIO("1 2\n"), has_target="auto", n_features=2)
    assert _seqs(auto) == [([[1.0, 2.0]], None)] and auto.labelled is False
    with pytest.raises(StreamError, match=r"line 1: has 4 columns, but n_features=2 means 2 \(unlabelled\) or 3"):
        list(read_conll(io.StringIO("1 2 3 B\n"), has_target="auto", n_features=2))
    with pytest.raises(ValueError, match="has_target='auto' needs n_features="):
        read_conll(io.StringIO(""), has_target="auto")


def test_text_column_error_names_line_column_and_the_fix():
    with pytest.raises(StreamError) as info:
        list(read_conll(io.StringIO("1 B\n\nEU 1 B-ORG\n")))
    msg = str(info.value)
    assert msg.startswith("<stream> line 3: has 3 columns, the first token line (line 1) has 2")
    with pytest.raises(StreamError) as info:
        list(read_conll(io.StringIO("EU 1 B-ORG\n")))
    msg = str(info.value)
    assert "line 1: column 1 = 'EU' is not a number" in msg and "list column 1 in drop= to ignore it" in msg
    assert "on_error='skip'" in msg and info.value.line_no == 1
    assert _seqs(read_conll(io.StringIO("EU 1 B-ORG\nsays 0 O\n"), drop=[1])) == [([[1.0], [0.0]], ["B-ORG", "O"])]


def test_bad_line_skips_its_whole_sequence_and_is_reported():
    text = "1 2 A\n1 nan B\n3 4 C\n\n5 6 D\n\n7 8 E\n9 E\n"
    reader = read_conll(io.StringIO(text), on_error="skip")
    assert _seqs(reader) == [([[5.0, 6.0]], ["D"])]
    assert reader.n_skipped == 2
    assert reader.skipped == [(2, "column 2 = 'nan' is not a finite number (in the sequence starting at line 1)"),
                              (8, "has 2 columns, the first token line (line 1) has 3 (in the sequence starting "
                                  "at line 7)")]
    assert reader.summary().startswith("<stream>: 1 record read, 2 bad lines skipped (first at line 2")
    with pytest.warns(StreamWarning) as caught:
        assert len(list(read_conll(io.StringIO(text), on_error="warn"))) == 1
    assert [str(w.message)[:15] for w in caught] == ["<stream> line 2", "<stream> line 8"]


def test_tab_delimiter_keeps_spaces_in_labels_and_refuses_empty_fields():
    assert [ys for _, ys in read_conll(io.StringIO("1\t2\tNew York\n"), delimiter="\t")] == [["New York"]]
    with pytest.raises(StreamError, match="line 1: column 1 is empty"):
        list(read_conll(io.StringIO("\t2\tB\n"), delimiter="\t"))


def test_limits_sequence_length_and_line_length():
    text = "".join(f"{i} A\n" for i in range(5)) + "\n1 B\n"
    with pytest.raises(StreamError, match=r"line 4: the sequence starting at line 1 is longer than "
                                          r"max_sequence_length=3 tokens; end every sequence with a blank line"):
        list(read_conll(io.StringIO(text), max_sequence_length=3))
    reader = read_conll(io.StringIO(text), max_sequence_length=3, on_error="skip")
    assert [ys for _, ys in reader] == [["B"]] and reader.n_skipped == 1
    # an over-long line (framed by open_source) drops its sequence too, not just the line
    long = "1 A\n" + "1 " * 40 + "A\n2 A\n\n3 C\n"
    reader = read_conll(io.StringIO(long), max_line_bytes=32, on_error="skip")
    assert [ys for _, ys in reader] == [["C"]]
    assert reader.skipped[0][0] == 2 and "max_line_bytes=32" in reader.skipped[0][1]


def test_memory_cap_on_values(monkeypatch):
    monkeypatch.setattr(streams._conll, "MAX_SEQUENCE_VALUES", 5)
    with pytest.raises(StreamError, match="line 3: the sequence starting at line 1 holds more than 5 feature values"):
        list(read_conll(io.StringIO("1 2 A\n1 2 A\n1 2 A\n")))


def test_option_errors():
    with pytest.raises(StreamError, match="drop= column 4 is past the last column"):
        list(read_conll(io.StringIO("1 2 A\n"), drop=[4]))
    with pytest.raises(StreamError, match="column 3, the label .* is also in drop="):
        list(read_conll(io.StringIO("1 2 A\n"), drop=[3]))
    with pytest.raises(ValueError, match="numbered from 1"):
        read_conll(io.StringIO(""), drop=[0])
    with pytest.raises(TypeError, match=r"write drop=\[1\]"):
        read_conll(io.StringIO(""), drop=1)
    with pytest.raises(ValueError, match="max_sequence_length"):
        read_conll(io.StringIO(""), max_sequence_length=0)


def test_arrays_are_what_the_sequence_labeller_takes():
    xs, ys = next(iter(read_conll(io.StringIO(TEXT))))
    assert xs.dtype == np.float64 and xs.shape == (2, 2) and len(ys) == 2

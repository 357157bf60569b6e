"""Readers under hostile input: a line without end stops at the limit under
on_error="raise", and an unterminated CSV quote is reported where it opened without swallowing the
lines after it."""

import io

import pytest

from streams import StreamError, open_source, read_csv, read_jsonl, read_libsvm


class Endless(io.RawIOBase):
    """A binary file: ``head``, then one line that never ends; counts the bytes it served and refuses to
    serve more than ``budget`` (a reader that reads on would fail with RuntimeError, not StreamError)."""

    def __init__(self, head: bytes, budget: int = 50 << 20):
        self.head = head
        self.served = 0
        self.budget = budget

    def readable(self):
        return True

    def readline(self, size=-1):
        if self.head:
            out, self.head = self.head, b""
            return out
        if self.served > self.budget:
            raise RuntimeError(f"the reader kept reading a line without end ({self.served} bytes)")
        n = 65536 if size is None or size < 0 else size
        self.served += n
        return b"7" * n


@pytest.mark.parametrize("make, head", [
    (lambda src: open_source(src, max_line_bytes=1000), b"a,y\n"),
    (lambda src: read_csv(src, max_line_bytes=1000), b"a,y\n"),
    (lambda src: read_libsvm(src, max_line_bytes=1000), b"1 1:0.5\n"),
    (lambda src: read_jsonl(src, max_line_bytes=1000), b'{"x": {"a": 1}, "y": 1}\n'),
], ids=["open_source", "csv", "libsvm", "jsonl"])
def test_a_line_without_end_stops_at_the_limit_under_raise(make, head):
    src = Endless(head)
    with pytest.raises(StreamError, match=r"line 2: line is longer than max_line_bytes=1000") as err:
        list(make(src))
    assert err.value.line_no == 2
    assert src.served <= 2000, f"read {src.served} bytes of a line it had already refused"


def test_a_line_without_end_is_skipped_in_bounded_memory_under_skip():
    data = b"a,y\n1,yes\n" + b"7" * 300_000 + b"\n2,no\n"
    reader = read_csv(io.BytesIO(data), max_line_bytes=1000, on_error="skip")
    assert list(reader) == [({"a": 1.0}, "yes"), ({"a": 2.0}, "no")]
    assert reader.skipped == [(3, "line is longer than max_line_bytes=1000")]


def test_an_unterminated_quote_names_the_line_where_it_opened():
    # line 3 closes the quote line 2 opened, then opens another one that never closes
    data = 'a,b,y\n1,"multi\nline",2,"oops\n3,4,yes\n5,6,no\n'
    with pytest.raises(StreamError, match=r"line 3: unterminated quote: the quote opened at line 3 "
                                          r"\(in the record starting at line 2\) is never closed") as err:
        list(read_csv(io.StringIO(data)))
    assert err.value.line_no == 3
    with pytest.raises(StreamError, match=r"line 1: .*unterminated quote opened at line 1"):
        list(read_csv(io.StringIO('a,"y\n1,2\n')))


def test_the_lines_after_an_unterminated_quote_are_not_lost_under_skip():
    rows = "".join(f"{i},{i % 2}\n" for i in range(5000))  # 5000 good rows after the bad one
    data = 'a,y\n1,0\n2,"1\n' + rows
    reader = read_csv(io.StringIO(data), on_error="skip", target_type=int)
    got = list(reader)
    assert len(got) == 1 + 5000, f"{1 + 5000 - len(got)} good rows lost"
    assert reader.n_skipped == 1 and reader.skipped[0][0] == 3
    assert "unterminated quote" in reader.skipped[0][1]
    big = 'a,y\n2,"1\n' + "9,1\n" * 40_000  # the quoted field passes csv's field size limit first
    reader = read_csv(io.StringIO(big), on_error="skip", target_type=int)
    assert sum(1 for _ in reader) == 40_000 and reader.skipped[0][0] == 2

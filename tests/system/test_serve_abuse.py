"""The server under hostile or careless clients: a client trickling bytes loses its
slot at the line or token deadline, replies leave at once (TCP_NODELAY), and a stop answers every
request already received. Loopback sockets, bounded loops, timeouts on every read."""

import json
import socket
import time

from test_serve import Client, model_file, server  # noqa: F401 - fixtures

from onlinemkl.serve import DEFAULTS


def trickle(address, data: bytes, seconds: float, first: bytes = b""):
    """Send ``first``, then ``data`` one byte every 20 ms for at most ``seconds``; return (replies, closed,
    elapsed) once the server closes the connection or the time is up."""
    sock = socket.create_connection(address, timeout=5)
    sock.settimeout(0.02)
    t0 = time.monotonic()
    got = b""
    closed = False
    try:
        if first:
            sock.sendall(first)
        for i in range(int(seconds / 0.02)):
            try:
                sock.sendall(data[i % len(data): i % len(data) + 1])
            except OSError:  # reset after the server closed
                closed = True
                break
            try:
                chunk = sock.recv(65536)
                if not chunk:
                    closed = True
                    break
                got += chunk
            except socket.timeout:
                pass
            except OSError:
                closed = True
                break
        elapsed = time.monotonic() - t0
    finally:
        sock.close()
    return [json.loads(line) for line in got.splitlines() if line.strip()], closed, elapsed


def test_a_client_sending_one_byte_at_a_time_is_dropped_at_the_line_deadline(server):
    srv = server(line_timeout=0.5, idle_timeout=60)
    # a valid request first, so the deadline is seen to run from the unfinished line's first byte
    replies, closed, elapsed = trickle(srv.address, b'{"x": {"f0": 1.0, "f1": 2.0, ' + b" " * 10000, 6.0,
                                       first=b'{"x": {"f0": 1.0}}\n')
    assert closed, f"a trickling client still held its slot after {elapsed:.1f} s"
    assert "prediction" in replies[0]
    assert "line 2 not finished within 0.5 s" in replies[-1]["error"] and "--line-timeout" in replies[-1]["error"]
    assert elapsed < 5
    assert srv.n_errors == 1
    c = Client(srv.address)  # the server still serves others
    assert "prediction" in c.ask({"x": {"f0": 1.0}})
    c.close()


def test_the_token_has_a_deadline_from_connect(server):
    srv = server(token="s3cret", auth_timeout=0.5, line_timeout=60, idle_timeout=60)
    # whole lines, each a few bytes at a time: no single line is slow, but no token ever completes
    replies, closed, elapsed = trickle(srv.address, b'{"tok' + b" " * 1000, 6.0)
    assert closed and elapsed < 5
    assert "no token within 0.5 s of connecting" in replies[-1]["error"]
    silent = Client(srv.address, timeout=5)  # says nothing at all
    t0 = time.monotonic()
    assert "--auth-timeout" in silent.recv()["error"]
    assert silent.recv() is None and time.monotonic() - t0 < 5
    silent.close()
    ok = Client(srv.address)  # an authenticated client is not bound by the token deadline
    assert ok.ask({"token": "s3cret"}) == {"ok": True}
    time.sleep(0.8)
    assert "prediction" in ok.ask({"x": {"f0": 1.0}})
    ok.close()


def test_defaults_bound_every_deadline():
    assert 0 < DEFAULTS["auth_timeout"] <= DEFAULTS["line_timeout"] < DEFAULTS["idle_timeout"]


def test_replies_are_sent_without_delay(server):
    """TCP_NODELAY on every connection: two pipelined requests do not wait for a delayed ACK."""
    srv = server()
    conns = []
    admit = srv._admit

    def spy(conn, addr):
        conns.append(conn)
        admit(conn, addr)

    srv._admit = spy
    c = Client(srv.address)
    c.send_raw(b'{"x": {"f0": 1.0}}\n{"x": {"f0": 2.0}}\n')
    assert "prediction" in c.recv() and "prediction" in c.recv()
    assert conns and conns[0].getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
    c.close()


def test_stopping_answers_every_request_already_received(server):
    srv = server()
    predict = srv.model.predict_one

    def slow(x):  # the stop arrives while most requests wait in the buffer
        time.sleep(0.02)
        return predict(x)

    srv.model.predict_one = slow
    c = Client(srv.address, timeout=10)
    n = 40
    c.send_raw(b"".join(json.dumps({"x": {"f0": float(i)}, "id": i}).encode() + b"\n" for i in range(n)))
    first = c.recv()
    srv.request_stop()  # what SIGTERM does
    replies = [first]
    for _ in range(n + 1):  # bounded: the server closes after the last reply
        r = c.recv()
        if r is None:
            break
        replies.append(r)
    c.close()
    assert [r.get("id") for r in replies] == list(range(n)), f"{len(replies)} of {n} requests answered"
    assert all("prediction" in r for r in replies)

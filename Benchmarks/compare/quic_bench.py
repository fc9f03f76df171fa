#!/usr/bin/env python3
"""QUIC bulk transfer with aioquic (pure Python QUIC + TLS 1.3, AES-GCM or ChaCha20-Poly1305 via OpenSSL).

    quic_bench.py server --port PORT --dir TMPDIR [--timeout SECONDS]
        Generates a self-signed P-256 certificate in TMPDIR, listens on 127.0.0.1:PORT (0 picks a free port) and
        prints {"listening": PORT} once bound. For every client stream it counts the bytes and, when the stream
        ends, answers "D" and ends its side. Exits after the first connection closes, or after --timeout seconds.

    quic_bench.py client --port PORT --size BYTES [--timeout SECONDS]
        Connects (certificate verification off: the server's certificate is self-signed), opens one stream,
        writes BYTES (random, generated before the clock starts) and ends the stream, and waits for the "D".
        The time runs from the first write to the "D" (the handshake is excluded, as for the other tools).
        Prints {"test":"bulk","bytes":..,"seconds":..,"mb_per_s":..}; MB = 10^6 bytes.

Uses aioquic's defaults otherwise (1 MiB connection and stream flow-control windows, 1200-byte datagrams,
NewReno congestion control). Needs aioquic and cryptography (run.py installs them into .build/pylib).
"""
import argparse
import asyncio
import datetime
import json
import os
import sys
import time

from aioquic.asyncio import connect, serve
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import ConnectionTerminated, StreamDataReceived

ALPN = ["huddle-compare"]


def make_certificate(directory):
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = os.path.join(directory, "cert.pem"), os.path.join(directory, "key.pem")
    with open(cert_path, "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(key_path, "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))
    return cert_path, key_path


class ServerProtocol(QuicConnectionProtocol):
    closed = None  # an asyncio.Event set when a connection terminates

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.received = {}

    def quic_event_received(self, event):
        if isinstance(event, StreamDataReceived):
            self.received[event.stream_id] = self.received.get(event.stream_id, 0) + len(event.data)
            if event.end_stream:
                self._quic.send_stream_data(event.stream_id, b"D", end_stream=True)
                self.transmit()
        elif isinstance(event, ConnectionTerminated):
            ServerProtocol.closed.set()


class ClientProtocol(QuicConnectionProtocol):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.done = asyncio.get_running_loop().create_future()

    def quic_event_received(self, event):
        if isinstance(event, StreamDataReceived) and event.data == b"D" and not self.done.done():
            self.done.set_result(time.monotonic())
        elif isinstance(event, ConnectionTerminated) and not self.done.done():
            self.done.set_exception(ConnectionError(f"connection terminated: {event.reason_phrase}"))


async def run_server(args):
    cert, key = make_certificate(args.dir)
    config = QuicConfiguration(is_client=False, alpn_protocols=ALPN)
    config.load_cert_chain(cert, key)
    ServerProtocol.closed = asyncio.Event()
    server = await serve("127.0.0.1", args.port, configuration=config, create_protocol=ServerProtocol)
    port = server._transport.get_extra_info("sockname")[1]
    print(json.dumps({"listening": port}), flush=True)
    try:
        await asyncio.wait_for(ServerProtocol.closed.wait(), timeout=args.timeout)
    except asyncio.TimeoutError:
        print(f"quic_bench server: timeout after {args.timeout} s", file=sys.stderr)
    server.close()


async def run_client(args):
    config = QuicConfiguration(is_client=True, alpn_protocols=ALPN, server_name="localhost")
    config.verify_mode = 0  # ssl.CERT_NONE: self-signed certificate
    payload = os.urandom(args.size)
    async with connect("127.0.0.1", args.port, configuration=config, create_protocol=ClientProtocol) as client:
        stream_id = client._quic.get_next_available_stream_id()
        start = time.monotonic()
        client._quic.send_stream_data(stream_id, payload, end_stream=True)
        client.transmit()
        end = await asyncio.wait_for(client.done, timeout=args.timeout)
        seconds = end - start
        print(json.dumps({"test": "bulk", "bytes": args.size, "seconds": round(seconds, 6),
                          "mb_per_s": round(args.size / seconds / 1e6, 2)}), flush=True)
        client.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("role", choices=["server", "client"])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--dir", default=".")
    parser.add_argument("--size", type=int, default=100 * 1024 * 1024)
    parser.add_argument("--timeout", type=float, default=120)
    args = parser.parse_args()
    asyncio.run(run_server(args) if args.role == "server" else run_client(args))


if __name__ == "__main__":
    main()

"""moto's S3 server with one request at a time: python3 scripts/moto-s3.py HOST PORT

moto (PyPI moto[server]) emulates S3's API, conditional PUTs included, but its
threaded server checks If-Match / If-None-Match and then writes with no lock
held (moto 5.2.1, s3/responses.py put_object): two conditional PUTs with the
same ETag can both pass, which S3 never allows (tests/js/stores/objects-race.test.mjs
caught a lost update; with the CPU busy, 8 concurrent PUTs on one If-Match had two
winners in 2 of 206 rounds, and 0 of 197 through this script). This runs moto's own WSGI application behind a lock, so each
request, its precondition and its write, is atomic as on S3; connections are
still served by threads (keep-alive clients do not starve each other).
"""
import sys
import threading

from werkzeug.serving import run_simple
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

LOCK = threading.Lock()
APP = DomainDispatcherApplication(create_backend_app)


def serial(environ, start_response):
    with LOCK:
        # the whole response is made under the lock (moto answers with bytes, not a stream)
        return [b"".join(APP(environ, start_response))]


if __name__ == "__main__":
    host, port = sys.argv[1], int(sys.argv[2])
    run_simple(host, port, serial, threaded=True)

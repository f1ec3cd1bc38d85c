#!/usr/bin/env python3
"""An independent AWS SigV4 verifier for srt's re-signing tests.

It checks a received request's signature with botocore (python3-botocore)
against the REAL credentials, as an AWS endpoint would: the access key id
and session token must be the real ones, and the signature recomputed by
botocore's SigV4Auth (S3SigV4Auth for service "s3") over the request's own
SignedHeaders, X-Amz-Date, region and service must match.

Two modes:

  sigv4_server.py check   reads a JSON list of requests on stdin
                          ({"method", "target", "headers": [[k, v]...],
                          "body_b64"}) and writes a JSON list of
                          {"ok", "status", "code", "reason"}.
  sigv4_server.py serve [--cert F --key F] [--log F]
                          an HTTP (or, with --cert/--key, HTTPS) endpoint on
                          127.0.0.1 (port --port, default any) answering
                          S3-like XML: 403 SignatureDoesNotMatch (or another
                          code) for a request that does not verify; else 200
                          and a tiny in-memory S3 (PUT/GET/HEAD/DELETE an
                          object, GET a bucket lists it) and STS
                          GetCallerIdentity. It prints "port N" on stdout
                          once listening; --log appends one JSON line per
                          request ({"method", "path", "ok", "code"}).

The real credentials come from the environment: SIGV4_REAL_AKID,
SIGV4_REAL_SECRET and, when the credential has one, SIGV4_REAL_TOKEN. No
secret is ever printed.
"""

import argparse
import base64
import hashlib
import hmac
import json
import os
import ssl
import sys
import threading
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import quote, unquote, urlsplit
from xml.sax.saxutils import escape

from botocore.auth import S3SigV4Auth, SigV4Auth
from botocore.awsrequest import AWSRequest, HTTPHeaders
from botocore.credentials import Credentials

ALGORITHM = "AWS4-HMAC-SHA256"
UNSIGNED = "UNSIGNED-PAYLOAD"
UNSIGNED_TRAILER = "STREAMING-UNSIGNED-PAYLOAD-TRAILER"


class Reject(Exception):
    """A request the endpoint refuses: HTTP status, AWS error code, why."""

    def __init__(self, status, code, reason):
        super().__init__(reason)
        self.status, self.code, self.reason = status, code, reason


def real_creds():
    return (
        os.environ["SIGV4_REAL_AKID"],
        os.environ["SIGV4_REAL_SECRET"],
        os.environ.get("SIGV4_REAL_TOKEN", ""),
    )


def parse_auth(value):
    """The parts of an AWS4-HMAC-SHA256 Authorization value."""
    if not value.startswith(ALGORITHM + " "):
        raise Reject(400, "InvalidRequest", "not an AWS4-HMAC-SHA256 Authorization")
    parts = {}
    for item in value[len(ALGORITHM) + 1:].split(","):
        k, _, v = item.strip().partition("=")
        parts[k] = v
    try:
        akid, date, region, service, term = parts["Credential"].split("/")
        signed = parts["SignedHeaders"].split(";")
        signature = parts["Signature"]
    except (KeyError, ValueError):
        raise Reject(400, "AuthorizationHeaderMalformed", "malformed Authorization")
    if term != "aws4_request":
        raise Reject(400, "AuthorizationHeaderMalformed", "credential scope terminator")
    return akid, date, region, service, signed, signature


def aws_query(raw):
    """The query as AWS canonicalises it: each name and value decoded and
    strictly re-encoded (botocore's own canonicaliser takes the query as
    its client encoded it)."""
    if not raw:
        return ""
    out = []
    for part in raw.split("&"):
        if part == "":
            continue
        k, eq, v = part.partition("=")
        out.append(quote(unquote(k), safe="-_.~") + "=" + quote(unquote(v), safe="-_.~"))
    return "&".join(out)


class ListedHeaders:
    """Makes a botocore signer sign exactly the request's SignedHeaders."""

    def __init__(self, signed, headers):
        self.signed, self.headers = signed, headers

    def headers_to_sign(self, request):
        m = HTTPHeaders()
        for name in self.signed:
            values = [v for k, v in self.headers if k.lower() == name]
            if not values:
                raise Reject(403, "SignatureDoesNotMatch", "signed header %r is missing" % name)
            m[name] = ",".join(values)
        return m


def verify(method, target, headers, body):
    """Raises Reject unless the request verifies with the real credentials."""
    akid, secret, token = real_creds()
    auths = [v for k, v in headers if k.lower() == "authorization"]
    if len(auths) != 1:
        raise Reject(403, "AccessDenied", "want exactly one Authorization header")
    got_akid, date, region, service, signed, signature = parse_auth(auths[0])
    if not hmac.compare_digest(got_akid, akid):
        raise Reject(403, "InvalidAccessKeyId", "the access key id is not the real one")
    tokens = [v for k, v in headers if k.lower() == "x-amz-security-token"]
    if not hmac.compare_digest(",".join(tokens), token):
        raise Reject(403, "InvalidToken", "the session token is not the real one")
    dates = [v for k, v in headers if k.lower() == "x-amz-date"]
    if len(dates) != 1 or dates[0][:8] != date:
        raise Reject(403, "AccessDenied", "X-Amz-Date missing or not the scope's date")
    if "host" not in signed:
        raise Reject(403, "AccessDenied", "host is not signed")
    sha = [v for k, v in headers if k.lower() == "x-amz-content-sha256"]
    if sha and sha[0].startswith("STREAMING-") and sha[0] != UNSIGNED_TRAILER:
        raise Reject(501, "NotImplemented", "this verifier does not verify streaming (aws-chunked) payloads")
    if sha and sha[0] not in (UNSIGNED, UNSIGNED_TRAILER) and sha[0] != hashlib.sha256(body).hexdigest():
        raise Reject(400, "XAmzContentSHA256Mismatch", "the body is not the declared hash")
    if service == "s3" and not sha:
        raise Reject(400, "InvalidRequest", "S3 wants X-Amz-Content-Sha256")

    path, _, query = target.partition("?")
    host = [v for k, v in headers if k.lower() == "host"]
    url = "https://%s%s" % (host[0] if host else "localhost", path)
    if query:
        url += "?" + aws_query(query)
    req = AWSRequest(method=method, url=url, headers=dict(headers), data=body)
    req.context["timestamp"] = dates[0]
    req.context["payload_signing_enabled"] = True
    cls = S3SigV4Auth if service == "s3" else SigV4Auth
    signer = cls(Credentials(akid, secret, token or None), service, region)
    signer.headers_to_sign = ListedHeaders(signed, headers).headers_to_sign
    canonical = signer.canonical_request(req)
    want = signer.signature(signer.string_to_sign(req, canonical), req)
    if not hmac.compare_digest(want, signature):
        raise Reject(403, "SignatureDoesNotMatch",
                     "the signature does not verify with the real credentials")


def aws_unchunk(body):
    """The data of an aws-chunked body (STREAMING-UNSIGNED-PAYLOAD-TRAILER:
    hex size, CRLF, data, CRLF, ..., a zero chunk and the trailers)."""
    out = b""
    while body:
        line, _, body = body.partition(b"\r\n")
        n = int(line.split(b";")[0], 16)
        if n == 0:
            break
        out, body = out + body[:n], body[n + 2:]
    return out


def check(method, target, headers, body):
    try:
        verify(method, target, headers, body)
    except Reject as e:
        return {"ok": False, "status": e.status, "code": e.code, "reason": e.reason}
    return {"ok": True, "status": 200, "code": "", "reason": ""}


def run_check():
    out = []
    for r in json.load(sys.stdin):
        body = base64.b64decode(r.get("body_b64", ""))
        out.append(check(r["method"], r["target"], [tuple(h) for h in r["headers"]], body))
    json.dump(out, sys.stdout)


class Handler(BaseHTTPRequestHandler):
    objects = {}
    lock = threading.Lock()
    log_path = None
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def read_body(self):
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            body = b""
            while True:
                n = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if n == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return body
                body += self.rfile.read(n)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def reply(self, status, body=b"", ctype="application/xml", extra=()):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Date", formatdate(usegmt=True))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def record(self, ok, code):
        if self.log_path:
            line = json.dumps({"method": self.command, "path": urlsplit(self.path).path, "ok": ok, "code": code})
            with self.lock, open(self.log_path, "a") as f:
                f.write(line + "\n")

    def handle_any(self):
        body = self.read_body()
        result = check(self.command, self.path, list(self.headers.items()), body)
        self.record(result["ok"], result["code"])
        if not result["ok"]:
            xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>%s</Code><Message>%s</Message></Error>" % (
                escape(result["code"]), escape(result["reason"]))
            self.reply(result["status"], xml.encode())
            return
        path = unquote(urlsplit(self.path).path)
        if self.command == "POST" and b"Action=GetCallerIdentity" in body:
            xml = ("<GetCallerIdentityResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">"
                   "<GetCallerIdentityResult><Arn>arn:aws:iam::123456789012:user/srt-test</Arn>"
                   "<UserId>AIDASRTTEST</UserId><Account>123456789012</Account></GetCallerIdentityResult>"
                   "<ResponseMetadata><RequestId>srt-test</RequestId></ResponseMetadata></GetCallerIdentityResponse>")
            self.reply(200, xml.encode(), "text/xml")
            return
        bucket, _, key = path.lstrip("/").partition("/")
        with self.lock:
            if self.command == "PUT" and key:
                if "aws-chunked" in self.headers.get("Content-Encoding", ""):
                    body = aws_unchunk(body)
                self.objects[(bucket, key)] = body
                etag = '"%s"' % hashlib.md5(body).hexdigest()
                self.reply(200, extra=[("ETag", etag)])
            elif self.command in ("GET", "HEAD") and key:
                if (bucket, key) not in self.objects:
                    self.reply(404, b"<Error><Code>NoSuchKey</Code><Message>no such key</Message></Error>")
                    return
                data = self.objects[(bucket, key)]
                self.reply(200, data, "application/octet-stream",
                           [("ETag", '"%s"' % hashlib.md5(data).hexdigest()),
                            ("Last-Modified", formatdate(usegmt=True))])
            elif self.command == "DELETE" and key:
                self.objects.pop((bucket, key), None)
                self.reply(204)
            elif self.command == "GET":
                items = "".join(
                    "<Contents><Key>%s</Key><Size>%d</Size><ETag>\"%s\"</ETag>"
                    "<LastModified>2024-01-01T00:00:00.000Z</LastModified><StorageClass>STANDARD</StorageClass></Contents>"
                    % (escape(k), len(v), hashlib.md5(v).hexdigest())
                    for (b, k), v in sorted(self.objects.items()) if b == bucket)
                xml = ("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                       "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
                       "<Name>%s</Name><Prefix></Prefix><KeyCount>%d</KeyCount><MaxKeys>1000</MaxKeys>"
                       "<IsTruncated>false</IsTruncated>%s</ListBucketResult>"
                       % (escape(bucket), items.count("<Contents>"), items))
                self.reply(200, xml.encode())
            else:
                self.reply(200, b"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Ok/>")

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = do_PATCH = handle_any


def run_serve(args):
    real_creds()  # fail now when the environment lacks them
    Handler.log_path = args.log
    srv = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    if args.cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(args.cert, args.key)
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    print("port %d" % srv.server_address[1], flush=True)
    srv.serve_forever()


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="mode", required=True)
    sub.add_parser("check")
    s = sub.add_parser("serve")
    s.add_argument("--port", type=int, default=0)
    s.add_argument("--cert")
    s.add_argument("--key")
    s.add_argument("--log")
    args = p.parse_args()
    if args.mode == "check":
        run_check()
    else:
        run_serve(args)


if __name__ == "__main__":
    main()

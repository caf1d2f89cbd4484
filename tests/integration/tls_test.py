#!/usr/bin/python3
"""numadir's TLS with real clients, on one server listening on ldap:// and ldaps:// with
verify_client = "allow": ldaps:// and StartTLS (RFC 4511 4.14) from ldap-utils, python-ldap,
ldap3, Python's ssl module and `openssl s_client`; SASL EXTERNAL with client certificates mapped
to DNs; many responses at once over one TLS connection; certificate and CA reload on SIGHUP;
session resumption with tickets and, over TLS 1.2, by session ID; and bad input (plaintext to the ldaps port, garbage
mid-handshake, stalled handshakes, StartTLS twice or with an operation outstanding) that must
leave the server and its other connections unharmed. The other [tls] settings are
tls_settings_test.py's; the PKI, clients and runner are tls_harness.py's.

  tls_test.py --numadir build/release/server/numadir --gen perf/gen_users.py

A throwaway CA and every certificate are made with the openssl CLI in a temporary directory.
Exits 0 when every check passes; otherwise 1 with the failing checks (observed vs expected).
"""
import os
import shutil
import signal
import socket
import ssl
import struct
import subprocess
import sys
import threading
import time

import ldap  # python3-ldap
from ldap3 import EXTERNAL, SASL, SUBTREE, Connection, Server, Tls

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from numadir_harness import (  # noqa: E402
    PEOPLE, ROOT_DN, ROOT_PW, SUFFIX, CheckFailed, ber_children, check, check_equal, fail,
    parse_args, parse_extended_response, parse_ldif, read_ldap_message, search_request, user_dn,
    user_pw, wait_for)
import tls_harness as T  # noqa: E402
from tls_harness import (  # noqa: E402
    BIND_RESPONSE, EXTENDED_RESPONSE, EXTERNAL_MAP, HANDSHAKE_TIMEOUT_S,
    INAPPROPRIATE_AUTHENTICATION, OPERATIONS_ERROR, SEARCH_DONE, SEARCH_ENTRY, STARTTLS_OID,
    SUCCESS, USERS, client_context, exchange, extended_request, ldaps_socket, output,
    python_ldap, read_until_close, result_code, sasl_bind_request, search_uid_raw,
    simple_bind_request, start_tls, starttls_socket, tls_config, tool, uid_of, whoami_raw)


# -- the main server: ldap:// and ldaps://, verify_client = "allow" --------------------------------
def check_root_dse():
    for url in (T.S.url, T.S.ldaps_url):
        rc, out, err = tool("ldapsearch", "-x", "-LLL", "-b", "", "-s", "base",
                            "supportedExtension", "supportedSASLMechanisms", url=url)
        entries = parse_ldif(out)
        check(rc == 0 and len(entries) == 1, f"RootDSE read over {url.split(':')[0]}://",
              output(rc, out, err))
        attributes = entries[0][1]
        check(STARTTLS_OID in attributes.get("supportedextension", []),
              f"supportedExtension lists StartTLS ({STARTTLS_OID})",
              f"observed {attributes.get('supportedextension')}")
        check("EXTERNAL" in attributes.get("supportedsaslmechanisms", []),
              "supportedSASLMechanisms lists EXTERNAL",
              f"observed {attributes.get('supportedsaslmechanisms')}")


def check_ldap_utils():
    rc, out, err = tool("ldapsearch", "-x", "-ZZ", "-LLL", "-b", PEOPLE, "(uid=user1)", "uid",
                        url=T.S.url)
    check(rc == 0 and [dn.lower() for dn, _ in parse_ldif(out)] == [user_dn(1)],
          "ldapsearch -ZZ (StartTLS required, server certificate verified) finds user1",
          output(rc, out, err))
    rc, out, err = tool("ldapsearch", "-x", "-ZZ", "-LLL", "-D", user_dn(2), "-w", user_pw(2),
                        "-b", user_dn(2), "-s", "base", "uid", url=T.S.url)
    check(rc == 0 and "uid: user2" in out, "ldapsearch -ZZ bound as user2 reads its entry",
          output(rc, out, err))
    rc, out, err = tool("ldapsearch", "-x", "-LLL", "-b", PEOPLE, "(uid=user3)", "uid",
                        url=T.S.ldaps_url)
    check(rc == 0 and [dn.lower() for dn, _ in parse_ldif(out)] == [user_dn(3)],
          "ldapsearch -H ldaps:// (LDAPTLS_REQCERT=demand) finds user3", output(rc, out, err))
    rc, out, err = tool("ldapwhoami", "-x", "-D", user_dn(4), "-w", user_pw(4), url=T.S.ldaps_url)
    check(rc == 0 and out.strip().lower() == f"dn:{user_dn(4)}",
          "ldapwhoami -x over ldaps:// bound as user4", output(rc, out, err))
    rc, out, err = tool("ldapsearch", "-x", "-LLL", "-b", "", "-s", "base", url=T.S.ldaps_url,
                        ca=T.PKI.untrusted_crt)
    check(rc != 0 and not out.strip(),
          "a client trusting another CA refuses the server's certificate (it is the test CA's)",
          output(rc, out, err))
    with ldaps_socket() as sock:
        check_equal(sock.getpeercert(binary_form=True), T.PKI.der(T.PKI.server_crt),
                    "the ldaps:// port presents the configured server certificate")


def check_external():
    expected = f"dn:{user_dn(5)}"
    rc, out, err = tool("ldapwhoami", "-Y", "EXTERNAL", "-Q", url=T.S.ldaps_url,
                        cert=T.PKI.user5_crt, key=T.PKI.user5_key)
    check(rc == 0 and out.strip().lower() == expected,
          f"ldapwhoami -Y EXTERNAL over ldaps:// with CN=user5's certificate: {expected}",
          output(rc, out, err))
    rc, out, err = tool("ldapwhoami", "-Y", "EXTERNAL", "-Q", "-ZZ", url=T.S.url,
                        cert=T.PKI.user5_crt, key=T.PKI.user5_key)
    check(rc == 0 and out.strip().lower() == expected,
          "ldapwhoami -Y EXTERNAL -ZZ (StartTLS) with the same certificate", output(rc, out, err))
    # GnuTLS (under ldap-utils) sends a client certificate only when its issuer is among the
    # CAs the server names, so the untrusted one is sent by Python's ssl.
    rc, out, err = tool("ldapwhoami", "-Y", "EXTERNAL", "-Q", url=T.S.ldaps_url,
                        cert=T.PKI.expired_crt, key=T.PKI.expired_key)
    check(rc == INAPPROPRIATE_AUTHENTICATION,
          'verify_client = "allow": ldapwhoami -Y EXTERNAL with an expired client certificate '
          "connects and gets inappropriateAuthentication (48)", output(rc, out, err))
    for name, crt, key in (("an untrusted (self-signed)", T.PKI.untrusted_crt, T.PKI.untrusted_key),
                           ("an expired", T.PKI.expired_crt, T.PKI.expired_key)):
        with ldaps_socket(client_context(crt, key)) as sock:
            buffer = bytearray()
            response = exchange(sock, sasl_bind_request(1, "EXTERNAL"), buffer)
            check(response is not None and response[0] == BIND_RESPONSE and
                  result_code(response[1]) == INAPPROPRIATE_AUTHENTICATION,
                  f'verify_client = "allow": {name} client certificate (Python ssl) connects, '
                  "EXTERNAL gets inappropriateAuthentication (48)", f"observed {response}")
            check_equal(search_uid_raw(sock, buffer, 2, 1), [user_dn(1)],
                        "and the connection can search")

    # libsasl does not offer EXTERNAL without a client certificate, so these go raw.
    with ldaps_socket() as sock:
        buffer = bytearray()
        response = exchange(sock, sasl_bind_request(1, "EXTERNAL"), buffer)
        check(response is not None and response[0] == BIND_RESPONSE and
              result_code(response[1]) == INAPPROPRIATE_AUTHENTICATION,
              "EXTERNAL over ldaps:// without a client certificate: inappropriateAuthentication "
              "(48)", f"observed {response}")
        check_equal(whoami_raw(sock, buffer, 2), "", "and the connection stays anonymous")
        check_equal(search_uid_raw(sock, buffer, 3, 6), [user_dn(6)], "and can still search")
    with T.S.connect_raw() as sock:
        buffer = bytearray()
        response = exchange(sock, sasl_bind_request(1, "EXTERNAL"), buffer)
        check(response is not None and response[0] == BIND_RESPONSE and
              result_code(response[1]) == INAPPROPRIATE_AUTHENTICATION,
              "EXTERNAL over ldap:// without TLS: inappropriateAuthentication (48)",
              f"observed {response}")
    context = client_context(T.PKI.user5_crt, T.PKI.user5_key)
    with ldaps_socket(context) as sock:
        buffer = bytearray()
        response = exchange(sock, sasl_bind_request(1, "EXTERNAL"), buffer)
        check(response is not None and result_code(response[1]) == SUCCESS,
              "EXTERNAL from Python's ssl with CN=user5's certificate", f"observed {response}")
        check_equal(whoami_raw(sock, buffer, 2).lower(), expected, "WhoAmI after it")
        response = exchange(sock, simple_bind_request(3, user_dn(8), user_pw(8)), buffer)
        check_equal(whoami_raw(sock, buffer, 4).lower(), f"dn:{user_dn(8)}",
                    "a simple bind on the same connection switches to user8")
        response = exchange(sock, sasl_bind_request(5, "EXTERNAL"), buffer)
        check_equal(whoami_raw(sock, buffer, 6).lower(), expected,
                    "and EXTERNAL again switches back to user5")

    tls = Tls(ca_certs_file=T.PKI.ca_crt, validate=ssl.CERT_REQUIRED,
              local_certificate_file=T.PKI.user5_crt, local_private_key_file=T.PKI.user5_key)
    server = Server("127.0.0.1", port=T.S.ldaps_port, use_ssl=True, tls=tls, connect_timeout=10)
    conn = Connection(server, authentication=SASL, sasl_mechanism=EXTERNAL, receive_timeout=30,
                      raise_exceptions=False)
    check(conn.bind(), "ldap3 SASL EXTERNAL over ldaps:// with CN=user5's certificate",
          f"{conn.result}")
    check_equal((conn.extend.standard.who_am_i() or "").lower(), expected, "ldap3 who_am_i()")
    conn.unbind()


def check_python_ldap():
    conn = python_ldap(T.S.url)
    conn.start_tls_s()
    check(True, "python-ldap start_tls_s() verifying the server against the test CA")
    conn.simple_bind_s(user_dn(9), user_pw(9))
    check_equal(conn.whoami_s().lower(), f"dn:{user_dn(9)}", "then a simple bind as user9")
    results = conn.search_s(PEOPLE, ldap.SCOPE_ONELEVEL, "(uid=user1*)", ["uid"])
    check_equal(len(results), 111, "then a search (uid=user1*): 111 entries")
    conn.unbind_s()
    conn = python_ldap(T.S.ldaps_url)
    conn.simple_bind_s(user_dn(10), user_pw(10))
    check_equal(uid_of(conn, 10), [b"user10"], "python-ldap over ldaps://: bind and search")
    conn.unbind_s()
    conn = python_ldap(T.S.ldaps_url, T.PKI.user5_crt, T.PKI.user5_key)
    conn.sasl_external_bind_s()
    check_equal(conn.whoami_s().lower(), f"dn:{user_dn(5)}",
                "python-ldap sasl_external_bind_s() with CN=user5's certificate")
    conn.unbind_s()


def check_ldap3():
    tls = Tls(ca_certs_file=T.PKI.ca_crt, validate=ssl.CERT_REQUIRED)
    server = Server("127.0.0.1", port=T.S.ldaps_port, use_ssl=True, tls=tls, connect_timeout=10)
    conn = Connection(server, user=user_dn(11), password=user_pw(11), receive_timeout=30,
                      raise_exceptions=False)
    check(conn.bind(), "ldap3 over ldaps:// (Tls(validate=CERT_REQUIRED)): bind as user11",
          f"{conn.result}")
    conn.search(PEOPLE, "(uid=user12)", SUBTREE, attributes=["uid"])
    check_equal([entry.entry_dn.lower() for entry in conn.entries], [user_dn(12)],
                "ldap3 over ldaps://: search")
    conn.unbind()
    server = Server("127.0.0.1", port=T.S.port, tls=tls, connect_timeout=10)
    conn = Connection(server, user=user_dn(13), password=user_pw(13), receive_timeout=30,
                      raise_exceptions=False)
    conn.open()
    check(not conn.closed, "ldap3 connects to ldap://")
    check(conn.start_tls(), "ldap3 start_tls()", f"{conn.result}")
    check(conn.bind(), "ldap3 bind as user13 after start_tls()", f"{conn.result}")
    conn.search(PEOPLE, "(uid=user14)", SUBTREE, attributes=["uid"])
    check_equal([entry.entry_dn.lower() for entry in conn.entries], [user_dn(14)],
                "ldap3 search after start_tls()")
    conn.unbind()


def pipelined(sock, what: str):
    """Many requests at once over one TLS connection: two workers answer them concurrently, so
    their responses are encrypted by different threads into the same TLS stream."""
    buffer = bytearray()
    response = exchange(sock, simple_bind_request(1, ROOT_DN, ROOT_PW), buffer)
    if response is None or result_code(response[1]) != SUCCESS:
        fail(f"{what}: bind as the rootdn: {response}")
    count = 300
    requests = [search_request(10 + n, user_dn(n + 1), scope=0, attributes=("*",))
                for n in range(count)]
    requests.insert(count // 2, search_request(5, PEOPLE, scope=1, attributes=("*", "+")))
    sock.sendall(b"".join(requests))
    entries, done = {}, {}
    while len(done) < count + 1:
        message = read_ldap_message(sock, buffer, timeout=30)
        if message is None:
            fail(f"{what}: closed after {len(done)} of {count + 1} searches")
        message_id, tag, content = message[0], message[1], message[2]
        if tag == SEARCH_ENTRY:
            entries.setdefault(message_id, []).append(ber_children(content)[0][1].decode())
        elif tag == SEARCH_DONE:
            done[message_id] = result_code(content)
    check(all(code == SUCCESS for code in done.values()) and
          all(entries.get(10 + n) == [user_dn(n + 1)] for n in range(count)),
          f"{what}: {count} pipelined base searches each get their own entry",
          f"results {sorted(set(done.values()))}, "
          f"wrong: {[n for n in range(count) if entries.get(10 + n) != [user_dn(n + 1)]][:10]}")
    check_equal(len(entries.get(5, [])), USERS,
                f"{what}: and a one-level search among them returns all {USERS} users")


def check_concurrent_responses():
    with ldaps_socket() as sock:
        pipelined(sock, "ldaps://")
    with starttls_socket() as sock:
        pipelined(sock, "StartTLS")
    # Handshakes at once: the listener thread advances them all as their bytes come.
    errors = []

    def one_client(n: int):
        try:
            with (ldaps_socket() if n % 2 else starttls_socket()) as sock:
                buffer = bytearray()
                if search_uid_raw(sock, buffer, 1, 100 + n) != [user_dn(100 + n)]:
                    errors.append(f"client {n}: wrong entry")
        except (CheckFailed, OSError, ValueError) as error:
            errors.append(f"client {n}: {type(error).__name__}: {error}")

    threads = [threading.Thread(target=one_client, args=(n,)) for n in range(40)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    check(not errors and not any(thread.is_alive() for thread in threads),
          "40 clients handshaking at once (half ldaps://, half StartTLS) each find their entry",
          f"{errors[:5]}")

    conn = python_ldap(T.S.ldaps_url)
    conn.simple_bind_s(ROOT_DN, ROOT_PW)
    results = conn.search_s(PEOPLE, ldap.SCOPE_ONELEVEL, "(objectClass=*)", ["*", "+"])
    check_equal(len(results), USERS, f"python-ldap over ldaps:// reads all {USERS} users")
    conn.unbind_s()


def check_starttls_twice():
    raw = T.S.connect_raw()
    buffer = bytearray()
    code, diagnostic = start_tls(raw, buffer)
    check_equal(code, SUCCESS, "a first StartTLS: success")
    with client_context().wrap_socket(raw, server_hostname="127.0.0.1") as sock:
        check(True, f"TLS handshake after it ({sock.version()}, {sock.cipher()[0]})")
        response = exchange(sock, extended_request(2, STARTTLS_OID), buffer)
        check(response is not None and response[0] == EXTENDED_RESPONSE,
              "a second StartTLS inside TLS is answered", f"observed {response}")
        code, _, diagnostic, _ = parse_extended_response(response[1])
        check_equal(code, OPERATIONS_ERROR, f"with operationsError (1) ({diagnostic!r})")
        check_equal(search_uid_raw(sock, buffer, 3, 15), [user_dn(15)],
                    "the TLS connection goes on working")
    with ldaps_socket() as sock:
        buffer = bytearray()
        response = exchange(sock, extended_request(1, STARTTLS_OID), buffer)
        code = parse_extended_response(response[1])[0] if response else None
        check_equal(code, OPERATIONS_ERROR, "StartTLS over ldaps://: operationsError (1)")
        check_equal(search_uid_raw(sock, buffer, 2, 16), [user_dn(16)], "and the connection "
                    "goes on working")


def check_starttls_outstanding():
    """A search of the whole tree and a StartTLS sent in one segment: the StartTLS is decoded
    while the search is running. If the search happens to finish first (its SearchResultDone
    arrives before the StartTLS response), the attempt proves nothing and is repeated."""
    root = python_ldap(T.S.url)
    root.simple_bind_s(ROOT_DN, ROOT_PW)
    expected_entries = len(root.search_s(SUFFIX, ldap.SCOPE_SUBTREE, "(objectClass=*)", ["1.1"]))
    root.unbind_s()
    for attempt in range(1, 6):
        sock = T.S.connect_raw()
        buffer = bytearray()
        response = exchange(sock, simple_bind_request(1, ROOT_DN, ROOT_PW), buffer)
        if response is None or result_code(response[1]) != SUCCESS:
            fail(f"bind as the rootdn: {response}")
        sock.sendall(search_request(2, SUFFIX, scope=2, attributes=("*", "+")) +
                     extended_request(3, STARTTLS_OID))
        entries = 0
        done = None
        starttls = None
        while done is None or starttls is None:
            message = read_ldap_message(sock, buffer, timeout=30)
            if message is None:
                fail(f"the connection was closed after {entries} entries")
            if message[0] == 2 and message[1] == SEARCH_ENTRY:
                entries += 1
            elif message[0] == 2 and message[1] == SEARCH_DONE:
                done = (result_code(message[2]), starttls is not None)
            elif message[0] == 3 and message[1] == EXTENDED_RESPONSE:
                code, _, diagnostic, _ = parse_extended_response(message[2])
                starttls = (code, diagnostic, done is not None)
                if code == SUCCESS and done is None:
                    fail("StartTLS answered success while the search was outstanding (its "
                         f"SearchResultDone had not come; {entries} entries so far)")
                if code == SUCCESS:
                    break  # What follows is TLS.
            else:
                fail(f"unexpected message id {message[0]} tag 0x{message[1]:02x}")
        if starttls[0] == SUCCESS:
            print(f"  (attempt {attempt}: the search finished before the StartTLS was read; "
                  "again)", flush=True)
            sock.close()
            continue
        check_equal(starttls[0], OPERATIONS_ERROR,
                    f"StartTLS with a search outstanding: operationsError (1) ({starttls[1]!r})")
        check_equal((done[0], entries), (SUCCESS, expected_entries),
                    f"the search still returns all its {expected_entries} entries and succeeds")
        code, diagnostic = start_tls(sock, buffer, 4)
        check_equal(code, SUCCESS, "with nothing outstanding, StartTLS on the same connection "
                    "then succeeds")
        with client_context().wrap_socket(sock, server_hostname="127.0.0.1") as tls:
            check_equal(whoami_raw(tls, buffer, 5).lower(), f"dn:{ROOT_DN}".lower(),
                        "and the TLS connection keeps the rootdn identity")
        return
    fail("in 5 attempts the search always finished before the StartTLS was read")


def check_bad_input():
    bystander = python_ldap(T.S.url)
    bystander.simple_bind_s(user_dn(20), user_pw(20))
    bystander_tls = python_ldap(T.S.ldaps_url)
    bystander_tls.simple_bind_s(user_dn(21), user_pw(21))

    def bystanders_work(when: str):
        check(uid_of(bystander, 22) == [b"user22"] and uid_of(bystander_tls, 23) == [b"user23"],
              f"{when}: an ldap:// and an ldaps:// connection opened before still search")

    # Stalls, left waiting while the rest runs: nothing sent at all, and half a ClientHello.
    silent = T.S.connect_raw(port=T.S.ldaps_port)
    silent_start = time.monotonic()
    hello = client_hello()
    half = T.S.connect_raw(port=T.S.ldaps_port)
    half.sendall(hello[:len(hello) // 2])
    half_start = time.monotonic()
    starttls_silent = T.S.connect_raw()
    buffer = bytearray()
    code, _ = start_tls(starttls_silent, buffer)
    check_equal(code, SUCCESS, "a StartTLS client that then sends no handshake: StartTLS success")
    starttls_start = time.monotonic()

    with T.S.connect_raw(port=T.S.ldaps_port) as sock:
        sock.sendall(search_request(1, PEOPLE, scope=1, attributes=("1.1",)))
        closed, data, _ = read_until_close(sock, 10)
        check(closed and not data.startswith(b"\x30"),
              "plaintext LDAP sent to the ldaps:// port: closed without an LDAP answer",
              f"closed {closed}, read {data[:40].hex()}")
    bystanders_work("after it")

    with T.S.connect_raw(port=T.S.ldaps_port) as sock:
        sock.sendall(client_hello())
        sock.settimeout(10)
        first = sock.recv(65536)
        check(first[:1] == b"\x16", "a real ClientHello gets the server's handshake records",
              f"read {first[:20].hex()}")
        sock.sendall(b"\x16\x03\x03\x00\x40" + bytes(range(0x40)) + b"garbage" * 30)
        closed, _, _ = read_until_close(sock, 10)
        check(closed, "garbage bytes in the middle of the handshake: the connection is closed")
    bystanders_work("after it")

    with T.S.connect_raw() as sock:
        buffer = bytearray()
        code, _ = start_tls(sock, buffer)
        sock.sendall(search_request(2, PEOPLE, scope=1, attributes=("1.1",)))
        closed, data, _ = read_until_close(sock, 10)
        check(code == SUCCESS and closed and not data.startswith(b"\x30"),
              "plaintext LDAP after a successful StartTLS: closed without an LDAP answer",
              f"StartTLS {code}, closed {closed}, read {data[:40].hex()}")

    with ldaps_socket() as sock:
        buffer = bytearray()
        check_equal(search_uid_raw(sock, buffer, 1, 24), [user_dn(24)], "an ldaps:// search")
        # Then bytes that are no TLS record, written under the TLS layer.
        with socket.socket(fileno=os.dup(sock.fileno())) as under:
            under.sendall(b"\x30\x05\x02\x01\x01\x42\x00" * 10)
        closed, _, _ = read_until_close(sock, 10)
        check(closed, "then non-TLS bytes (an LDAP PDU in the clear): the connection is closed")
    bystanders_work("after it")

    # The stalled ones: still open before handshake_timeout, closed after it.
    for name, sock, started in (("a client that connects to ldaps:// and sends nothing", silent,
                                 silent_start),
                                ("a client that stops in the middle of its ClientHello", half,
                                 half_start),
                                ("a client that sends no handshake after StartTLS",
                                 starttls_silent, starttls_start)):
        early = HANDSHAKE_TIMEOUT_S - 0.5 - (time.monotonic() - started)
        if early > 0:
            closed, _, _ = read_until_close(sock, early)
            check(not closed, f"{name}: still open {HANDSHAKE_TIMEOUT_S - 0.5:.1f} s later")
        closed, _, _ = read_until_close(sock, HANDSHAKE_TIMEOUT_S + 5)
        elapsed = time.monotonic() - started
        check(closed and elapsed >= HANDSHAKE_TIMEOUT_S - 0.5,
              f"{name}: closed after handshake_timeout ({HANDSHAKE_TIMEOUT_S} s): "
              f"{elapsed:.1f} s", f"closed {closed} after {elapsed:.1f} s")
        sock.close()
    bystanders_work("after the stalled handshakes")

    # Clients vanishing while the server encrypts a large search for them.
    for round_ in range(10):
        sock = ldaps_socket() if round_ % 2 else starttls_socket()
        sock.sendall(simple_bind_request(1, ROOT_DN, ROOT_PW) +
                     search_request(2, SUFFIX, scope=2, attributes=("*", "+")))
        if round_ % 4 < 2:
            # An abortive close (RST) half the time, otherwise an orderly FIN.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()
    check(True, "10 TLS clients sent a search of everything and closed at once")
    bystanders_work("after them")
    bystander.unbind_s()
    bystander_tls.unbind_s()
    check(T.S.alive(), "the server process is still running")


def client_hello() -> bytes:
    """The bytes of a real TLS ClientHello (from an SSLObject over memory BIOs)."""
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = client_context().wrap_bio(incoming, outgoing, server_hostname="127.0.0.1")
    try:
        tls.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return outgoing.read()


def s_client(port: int, *args):
    """Runs openssl s_client with its stdin held open until the handshake is done and a session
    ticket has come (with TLS 1.3 tickets come after the handshake, and an s_client that reads
    EOF at once can leave before they do). Returns its output."""
    process = subprocess.Popen(
        ["openssl", "s_client", "-connect", f"127.0.0.1:{port}", "-CAfile", T.PKI.ca_crt,
         "-verify_return_error", *args],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    session_file = args[args.index("-sess_out") + 1] if "-sess_out" in args else None
    if session_file is not None:
        wait_for(lambda: os.path.exists(session_file) and os.path.getsize(session_file) > 0,
                 timeout=5)
    try:
        out, _ = process.communicate(input="", timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        out, _ = process.communicate()
        fail(f"openssl s_client did not finish: {out[-2000:]}")
    return process.returncode, out


def check_session_resumption():
    # TLS 1.3 and 1.2 with tickets; TLS 1.2 without (-no_ticket): by session ID, from the
    # server's cache, after a connection the server ended without a close_notify of its own.
    for options in (("-tls1_3",), ("-tls1_2",), ("-tls1_2", "-no_ticket")):
        label = " ".join(options)
        session = os.path.join(T.PKI.dir, "session" + "".join(options))
        if os.path.exists(session):
            os.remove(session)
        rc, out = s_client(T.S.ldaps_port, *options, "-sess_out", session)
        check(rc == 0 and "Verify return code: 0 (ok)" in out and os.path.exists(session),
              f"openssl s_client {label} -sess_out: a verified handshake, session saved",
              f"rc {rc}; {out[-1500:]}")
        rc, out = s_client(T.S.ldaps_port, *options, "-sess_in", session)
        summary = [line for line in out.splitlines() if line.startswith(("New,", "Reused,"))]
        check(rc == 0 and "Reused," in out,
              f"openssl s_client {label} -sess_in: the session is resumed (\"Reused\")",
              f"rc {rc}; {summary}; {out[-1500:]}")


def check_reload():
    directory = os.path.dirname(RELOAD_CRT)
    first, second = T.PKI.der(T.PKI.server_crt), T.PKI.der(T.PKI.server2_crt)
    old = ldaps_socket()
    old_buffer = bytearray()
    exchange(old, simple_bind_request(1, user_dn(30), user_pw(30)), old_buffer)
    check_equal(old.getpeercert(binary_form=True), first,
                "before the reload: the first certificate")
    python_old = python_ldap(T.S.url)
    python_old.start_tls_s()
    python_old.simple_bind_s(user_dn(31), user_pw(31))

    # A broken certificate file and SIGHUP: the server keeps serving with what it has.
    with open(os.path.join(directory, "broken.crt"), "w") as stream:
        stream.write("-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n"
                     "-----END CERTIFICATE-----\n")
    os.replace(os.path.join(directory, "broken.crt"), RELOAD_CRT)
    stderr_before = len(T.S.stderr_text())
    os.kill(T.S.process.pid, signal.SIGHUP)
    # The server says why it kept its certificate; without waiting for that the checks below
    # would still hold, only perhaps before the reload was tried.
    wait_for(lambda: len(T.S.stderr_text()) != stderr_before, timeout=5)
    check(T.S.alive(), "SIGHUP with an unreadable certificate file: the server keeps running")
    with ldaps_socket() as sock:
        check_equal(sock.getpeercert(binary_form=True), first,
                    "and new connections still get the certificate it had")

    # The new certificate and key, each replaced in one rename; then SIGHUP.
    shutil.copy(T.PKI.server2_key, RELOAD_KEY + ".new")
    shutil.copy(T.PKI.server2_crt, RELOAD_CRT + ".new")
    os.replace(RELOAD_KEY + ".new", RELOAD_KEY)
    os.replace(RELOAD_CRT + ".new", RELOAD_CRT)
    os.kill(T.S.process.pid, signal.SIGHUP)
    def served_certificate():
        with ldaps_socket() as sock:
            return sock.getpeercert(binary_form=True)
    seen = wait_for(lambda: (lambda cert: cert if cert == second else None)(served_certificate()),
                    timeout=10, interval=0.1)
    check(seen == second, "after replacing the files and SIGHUP, a new ldaps:// connection "
          "gets the new certificate", "still the old one after 10 s")
    with starttls_socket() as sock:
        check_equal(sock.getpeercert(binary_form=True), second,
                    "and so does a new StartTLS connection")
    check_equal(search_uid_raw(old, old_buffer, 2, 32), [user_dn(32)],
                "the ldaps:// connection opened before the reload still searches")
    check_equal(whoami_raw(old, old_buffer, 3).lower(), f"dn:{user_dn(30)}",
                "and keeps its identity")
    old.close()
    check_equal(uid_of(python_old, 33), [b"user33"],
                "the StartTLS connection opened before the reload still searches")
    python_old.unbind_s()
    rc, out, err = tool("ldapwhoami", "-Y", "EXTERNAL", "-Q", url=T.S.ldaps_url,
                        cert=T.PKI.user5_crt, key=T.PKI.user5_key)
    check(rc == 0 and out.strip().lower() == f"dn:{user_dn(5)}",
          "after the reload the CA still verifies client certificates (EXTERNAL)",
          output(rc, out, err))

    # The CA file replaced by another CA's: its clients are verified, the first CA's no longer.
    # (Python's ssl sends a client certificate whichever CAs the server names.)
    shutil.copy(T.PKI.ca2_crt, RELOAD_CA + ".new")
    os.replace(RELOAD_CA + ".new", RELOAD_CA)
    os.kill(T.S.process.pid, signal.SIGHUP)
    codes = []  # Each try's result code; the last one is checked.
    wait_for(lambda: codes.append(external_bind(T.PKI.user9_crt, T.PKI.user9_key)) or
             codes[-1] == SUCCESS, timeout=10, interval=0.1)
    user9 = codes[-1]
    check_equal(user9, SUCCESS, "after replacing ca_file and SIGHUP, EXTERNAL with a "
                "certificate of the new CA succeeds")
    check_equal(external_bind(T.PKI.user5_crt, T.PKI.user5_key), INAPPROPRIATE_AUTHENTICATION,
                "and one of the old CA gets inappropriateAuthentication (48)")


def external_bind(crt: str, key: str) -> int:
    """The result code of a SASL EXTERNAL bind over ldaps:// with that client certificate."""
    with ldaps_socket(client_context(crt, key)) as sock:
        response = exchange(sock, sasl_bind_request(1, "EXTERNAL"), bytearray())
        if response is None or response[0] != BIND_RESPONSE:
            fail(f"EXTERNAL bind: observed {response}")
        return result_code(response[1])



RELOAD_CRT = None  # The main server's own copies of its files: the reload check replaces them.
RELOAD_KEY = None
RELOAD_CA = None


def main() -> int:
    args = parse_args(__doc__.split("\n")[0])

    def servers(pki):
        global RELOAD_CRT, RELOAD_KEY, RELOAD_CA
        RELOAD_CRT, RELOAD_KEY = pki.path("reload.crt"), pki.path("reload.key")
        shutil.copy(pki.server_crt, RELOAD_CRT)
        shutil.copy(pki.server_key, RELOAD_KEY)
        RELOAD_CA = pki.path("reload-ca.crt")
        shutil.copy(pki.ca_crt, RELOAD_CA)
        return [("main", [
            ("RootDSE", check_root_dse),
            ("ldap-utils: ldapsearch -ZZ and ldaps://", check_ldap_utils),
            ("SASL EXTERNAL", check_external),
            ("python-ldap", check_python_ldap),
            ("ldap3", check_ldap3),
            ("many responses at once over one TLS connection", check_concurrent_responses),
            ("StartTLS twice", check_starttls_twice),
            ("StartTLS with an operation outstanding", check_starttls_outstanding),
            ("bad input", check_bad_input),
            ("session resumption", check_session_resumption),
            ("certificate reload on SIGHUP", check_reload),
        ], USERS, dict(listen=("ldap://127.0.0.1:0", "ldaps://127.0.0.1:0"),
                       extra_toml=tls_config(RELOAD_CRT, RELOAD_KEY, ca_file=RELOAD_CA,
                                             verify_client="allow", external_map=EXTERNAL_MAP,
                                             handshake_timeout=HANDSHAKE_TIMEOUT_S)))]
    return T.run_tls_suite("tls", args, servers)


if __name__ == "__main__":
    sys.exit(main())

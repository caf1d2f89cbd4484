#!/usr/bin/python3
"""numadir's [tls] settings, each on a server of its own (the PKI, clients and runner are
tls_harness.py's; TLS with real clients on a server with both listeners is tls_test.py's):
simple_bind_requires_tls, min_version 1.3 and a hashed ca_dir with external_map = "{subject}";
verify_client = "demand" with missing, expired and untrusted certificates and a TLS 1.2 cipher
list; an ldaps://-only server with [tls] defaults; a certificate file without its intermediate,
the chain completed from ca_file; external_map "uid={uid},..." with a TLS 1.3
suite list; and a server without [tls], where StartTLS is unavailable.

  tls_settings_test.py --numadir build/release/server/numadir --gen perf/gen_users.py

Exits 0 when every check passes; otherwise 1 with the failing checks (observed vs expected).
"""
import os
import ssl
import subprocess
import sys

import ldap  # python3-ldap

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from numadir_harness import (  # noqa: E402
    PEOPLE, ROOT_DN, ROOT_PW, check, check_equal, fail, parse_args, parse_ldif, user_dn,
    user_pw)
import tls_harness as T  # noqa: E402
from tls_harness import (  # noqa: E402
    BIND_RESPONSE, CONFIDENTIALITY_REQUIRED, EXTERNAL_MAP, INAPPROPRIATE_AUTHENTICATION,
    STARTTLS_OID, SUCCESS, UNAVAILABLE, client_context, exchange, ldaps_socket, output,
    python_ldap, result_code, sasl_bind_request, search_uid_raw, start_tls, tls_config,
    tls_refused, tool, whoami_raw)


# -- a certificate file without its intermediate, completed from ca_file ----------------------
def check_chain_completed():
    # Both clients trust the root CA alone: they verify only if the intermediate is sent.
    with ldaps_socket() as sock:
        check(sock.version() is not None,
              "a client trusting the root alone verifies a server whose certificate file lacks "
              "the intermediate (the chain is completed from tls.ca_file)")
        subject = dict(part[0] for part in sock.getpeercert()["subject"])
        check_equal(subject.get("organizationName"), "numadir leaf",
                    "the certificate sent is the one issued by the intermediate")
    rc, out, err = tool("ldapwhoami", "-x", "-D", user_dn(6), "-w", user_pw(6), url=T.S.ldaps_url)
    check(rc == 0 and out.strip().lower() == f"dn:{user_dn(6)}",
          "ldapwhoami over ldaps:// verifying against the root alone", output(rc, out, err))


# -- second server: simple_bind_requires_tls, min_version 1.3, ca_dir, {subject} -----------------
def check_requires_tls():
    rc, out, err = T.S.ldap("ldapwhoami", "-x", "-D", user_dn(1), "-w", user_pw(1))
    check_equal(rc, CONFIDENTIALITY_REQUIRED,
                "a simple bind over ldap:// without TLS: confidentialityRequired (13)")
    rc, out, err = T.S.ldap("ldapwhoami", "-x", "-D", ROOT_DN, "-w", ROOT_PW)
    check_equal(rc, CONFIDENTIALITY_REQUIRED, "the rootdn too")
    conn = python_ldap(T.S.url)
    try:
        conn.simple_bind_s(user_dn(2), user_pw(2))
        fail("python-ldap simple bind over ldap:// succeeded, expected confidentialityRequired")
    except ldap.CONFIDENTIALITY_REQUIRED:
        check(True, "python-ldap: CONFIDENTIALITY_REQUIRED (13)")
    conn.unbind_s()
    rc, out, err = T.S.ldap("ldapsearch", "-x", "-LLL", "-b", user_dn(3), "-s", "base", "uid")
    check(rc == 0 and "uid: user3" in out, "an anonymous search over ldap:// still works",
          output(rc, out, err))
    rc, out, err = T.S.ldap("ldapwhoami", "-x")
    check(rc == 0 and out.strip() == "anonymous",
          "an anonymous bind (no name, no password) over ldap:// still works",
          output(rc, out, err))
    rc, out, err = tool("ldapwhoami", "-x", "-D", user_dn(4), "-w", user_pw(4), url=T.S.ldaps_url)
    check(rc == 0 and out.strip().lower() == f"dn:{user_dn(4)}",
          "a simple bind over ldaps:// succeeds", output(rc, out, err))
    rc, out, err = tool("ldapwhoami", "-x", "-ZZ", "-D", user_dn(5), "-w", user_pw(5), url=T.S.url)
    check(rc == 0 and out.strip().lower() == f"dn:{user_dn(5)}",
          "a simple bind after StartTLS (-ZZ) succeeds", output(rc, out, err))


def check_min_version():
    with ldaps_socket() as sock:
        check_equal(sock.version(), "TLSv1.3", 'min_version = "1.3": a default client gets TLS 1.3')
    reason = tls_refused(client_context(maximum=ssl.TLSVersion.TLSv1_2))
    check(reason is not None, "a client that offers at most TLS 1.2 is refused over ldaps://",
          "its request was answered")
    reason = tls_refused(client_context(maximum=ssl.TLSVersion.TLSv1_2), starttls=True)
    check(reason is not None, "and after StartTLS", "its request was answered")
    rc, out, err = tool("ldapsearch", "-x", "-LLL", "-b", user_dn(6), "-s", "base", "uid",
                        url=T.S.ldaps_url)
    check(rc == 0 and "uid: user6" in out, "ldapsearch (GnuTLS, TLS 1.3) over ldaps:// works",
          output(rc, out, err))


def check_subject_map():
    expected = f"dn:{user_dn(7)}"
    rc, out, err = tool("ldapwhoami", "-Y", "EXTERNAL", "-Q", url=T.S.ldaps_url,
                        cert=T.PKI.user7_crt, key=T.PKI.user7_key)
    check(rc == 0 and out.strip().lower() == expected,
          'external_map = "{subject}", CA from ca_dir: the certificate of '
          f"DC=com/DC=example/OU=people/UID=user7 binds as {expected}", output(rc, out, err))
    with ldaps_socket(client_context(T.PKI.untrusted_crt, T.PKI.untrusted_key)) as sock:
        buffer = bytearray()
        response = exchange(sock, sasl_bind_request(1, "EXTERNAL"), buffer)
        check(response is not None and response[0] == BIND_RESPONSE and
              result_code(response[1]) == INAPPROPRIATE_AUTHENTICATION,
              "an untrusted certificate (no CA of the ca_dir issued it): EXTERNAL gets "
              "inappropriateAuthentication (48)", f"observed {response}")


# -- third server: verify_client = "demand", a TLS 1.2 cipher list --------------------------------
def check_demand():
    for name, crt, key in (("no", None, None),
                           ("an expired", T.PKI.expired_crt, T.PKI.expired_key),
                           ("an untrusted (self-signed)", T.PKI.untrusted_crt,
                            T.PKI.untrusted_key)):
        for starttls in (False, True):
            how = "StartTLS" if starttls else "ldaps://"
            reason = tls_refused(client_context(crt, key), starttls=starttls)
            check(reason is not None, f'verify_client = "demand", {name} client certificate, '
                  f"{how} (Python ssl): refused ({reason})", "its request was answered")
        rc, out, err = tool("ldapsearch", "-x", "-LLL", "-b", user_dn(1), "-s", "base", "uid",
                            url=T.S.ldaps_url, cert=crt, key=key)
        check(rc != 0 and "uid: user1" not in out,
              f"ldapsearch -H ldaps:// with {name} client certificate fails",
              output(rc, out, err))
    reason = tls_refused(client_context(T.PKI.user5_crt, T.PKI.user5_key))
    check(reason is None, "with CN=user5's certificate (Python ssl): connected and answered",
          reason or "")
    reason = tls_refused(client_context(T.PKI.user5_crt, T.PKI.user5_key), starttls=True)
    check(reason is None, "and over StartTLS", reason or "")
    rc, out, err = tool("ldapwhoami", "-Y", "EXTERNAL", "-Q", url=T.S.ldaps_url,
                        cert=T.PKI.user5_crt, key=T.PKI.user5_key)
    check(rc == 0 and out.strip().lower() == f"dn:{user_dn(5)}",
          "ldapwhoami -Y EXTERNAL over ldaps:// with it", output(rc, out, err))
    rc, out, err = tool("ldapsearch", "-x", "-ZZ", "-LLL", "-b", user_dn(2), "-s", "base", "uid",
                        url=T.S.url, cert=T.PKI.user5_crt, key=T.PKI.user5_key)
    check(rc == 0 and "uid: user2" in out, "ldapsearch -ZZ with it", output(rc, out, err))
    check(T.S.alive(), "the server process is still running")


def check_ciphers():
    context = client_context(T.PKI.user5_crt, T.PKI.user5_key, maximum=ssl.TLSVersion.TLSv1_2)
    with ldaps_socket(context) as sock:
        check_equal((sock.version(), sock.cipher()[0]), ("TLSv1.2", DEMAND_CIPHER),
                    f'ciphers = "{DEMAND_CIPHER}": a TLS 1.2 client gets that suite')
    context = client_context(T.PKI.user5_crt, T.PKI.user5_key, maximum=ssl.TLSVersion.TLSv1_2,
                             ciphers="ECDHE-RSA-AES128-GCM-SHA256")
    reason = tls_refused(context)
    check(reason is not None, "a TLS 1.2 client offering only another suite is refused",
          "its request was answered")
    context = client_context(T.PKI.user5_crt, T.PKI.user5_key)
    with ldaps_socket(context) as sock:
        check_equal(sock.version(), "TLSv1.3", "TLS 1.3 clients are unaffected (ciphersuites "
                    "left at the default)")


DEMAND_CIPHER = "ECDHE-RSA-AES256-GCM-SHA384"


# -- fourth server: ldaps:// only, [tls] with its defaults ---------------------------------------
def check_defaults():
    check_equal(T.S.listening_urls, [T.S.ldaps_url], "the only listener is the ldaps:// one")
    context = client_context(T.PKI.user5_crt, T.PKI.user5_key, maximum=ssl.TLSVersion.TLSv1_2)
    with ldaps_socket(context) as sock:
        check_equal(sock.version(), "TLSv1.2", 'no min_version: TLS 1.2 clients connect ("1.2")')
        buffer = bytearray()
        check_equal(search_uid_raw(sock, buffer, 1, 1), [user_dn(1)], "and search")
    with ldaps_socket(client_context(T.PKI.user5_crt, T.PKI.user5_key)) as sock:
        check_equal(sock.version(), "TLSv1.3", "a default client gets TLS 1.3")
        buffer = bytearray()
        response = exchange(sock, sasl_bind_request(1, "EXTERNAL"), buffer)
        check(response is not None and response[0] == BIND_RESPONSE and
              result_code(response[1]) == INAPPROPRIATE_AUTHENTICATION,
              'no verify_client ("never"): no client certificate is asked for, so EXTERNAL '
              "gets inappropriateAuthentication (48) even from a client that has one",
              f"observed {response}")
    rc, out, err = tool("ldapwhoami", "-x", "-D", user_dn(2), "-w", user_pw(2), url=T.S.ldaps_url)
    check(rc == 0 and out.strip().lower() == f"dn:{user_dn(2)}",
          "ldapwhoami -x over the ldaps:// listener", output(rc, out, err))


# -- fifth server: external_map with {uid}, TLS 1.3 ciphersuites -----------------------------------
TLS13_SUITE = "TLS_CHACHA20_POLY1305_SHA256"


def check_uid_map():
    expected = f"dn:{user_dn(8)}"
    rc, out, err = tool("ldapwhoami", "-Y", "EXTERNAL", "-Q", url=T.S.ldaps_url,
                        cert=T.PKI.user8_crt, key=T.PKI.user8_key)
    check(rc == 0 and out.strip().lower() == expected,
          'external_map = "uid={uid},ou=people,dc=example,dc=com" with the certificate of '
          f"O=Example/CN=Someone Else/UID=user8/emailAddress=...: {expected}",
          output(rc, out, err))
    with ldaps_socket(client_context(T.PKI.user8_crt, T.PKI.user8_key)) as sock:
        buffer = bytearray()
        response = exchange(sock, sasl_bind_request(1, "EXTERNAL"), buffer)
        check(response is not None and result_code(response[1]) == SUCCESS,
              "the same from Python's ssl", f"observed {response}")
        check_equal(whoami_raw(sock, buffer, 2).lower(), expected, "WhoAmI after it")


def check_ciphersuites():
    with ldaps_socket() as sock:
        check_equal((sock.version(), sock.cipher()[0]), ("TLSv1.3", TLS13_SUITE),
                    f'ciphersuites = "{TLS13_SUITE}": a TLS 1.3 client gets that suite')
    result = subprocess.run(
        ["openssl", "s_client", "-connect", f"127.0.0.1:{T.S.ldaps_port}", "-CAfile", T.PKI.ca_crt,
         "-tls1_3", "-ciphersuites", "TLS_AES_128_GCM_SHA256"],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30)
    check(result.returncode != 0 and "Cipher is (NONE)" in result.stdout,
          "openssl s_client -tls1_3 offering only TLS_AES_128_GCM_SHA256 is refused",
          f"rc {result.returncode}; {result.stdout[-800:]} {result.stderr[-800:]}")


# -- sixth server: no [tls] -----------------------------------------------------------------------
def check_without_tls():
    with T.S.connect_raw() as sock:
        buffer = bytearray()
        code, diagnostic = start_tls(sock, buffer)
        check_equal(code, UNAVAILABLE, f"StartTLS without [tls]: unavailable (52) ({diagnostic!r})")
        check_equal(search_uid_raw(sock, buffer, 2, 1), [user_dn(1)],
                    "and the connection goes on in plaintext")
    rc, out, err = T.S.ldap("ldapsearch", "-x", "-LLL", "-b", "", "-s", "base",
                            "supportedExtension", "supportedSASLMechanisms")
    entries = parse_ldif(out)
    check(rc == 0 and len(entries) == 1, "RootDSE", output(rc, out, err))
    check(STARTTLS_OID not in entries[0][1].get("supportedextension", []) and
          "EXTERNAL" not in entries[0][1].get("supportedsaslmechanisms", []),
          "the RootDSE lists neither StartTLS nor EXTERNAL", f"{entries[0][1]}")
    rc, out, err = tool("ldapsearch", "-x", "-ZZ", "-LLL", "-b", "", "-s", "base", url=T.S.url)
    check(rc != 0, "ldapsearch -ZZ fails", output(rc, out, err))


def main() -> int:
    args = parse_args(__doc__.split("\n")[0])

    def servers(pki):
        both = ("ldap://127.0.0.1:0", "ldaps://127.0.0.1:0")
        return [
            ("simple_bind_requires_tls", [
                ("simple binds need TLS", check_requires_tls),
                ("min_version 1.3", check_min_version),
                ("external_map {subject} with ca_dir", check_subject_map),
            ], 100, dict(listen=both, extra_toml=tls_config(
                pki.server_crt, pki.server_key, ca_dir=pki.ca_dir, verify_client="allow",
                external_map="{subject}", min_version="1.3", simple_bind_requires_tls=True))),
            ("verify_client demand", [
                ("client certificates demanded", check_demand),
                ("TLS 1.2 cipher list", check_ciphers),
            ], 100, dict(listen=both, extra_toml=tls_config(
                pki.server_crt, pki.server_key, ca_file=pki.ca_crt, verify_client="demand",
                external_map=EXTERNAL_MAP, ciphers=DEMAND_CIPHER))),
            ("tls defaults, ldaps only", [
                ("[tls] defaults", check_defaults),
            ], 10, dict(listen=("ldaps://127.0.0.1:0",), extra_toml=tls_config(
                pki.server_crt, pki.server_key, ca_file=pki.ca_crt))),
            ("external_map {uid}, ciphersuites", [
                ("external_map with {uid}", check_uid_map),
                ("TLS 1.3 ciphersuites", check_ciphersuites),
            ], 10, dict(listen=("ldaps://127.0.0.1:0",), extra_toml=tls_config(
                pki.server_crt, pki.server_key, ca_file=pki.ca_crt, verify_client="allow",
                external_map=f"uid={{uid}},{PEOPLE}", ciphersuites=TLS13_SUITE))),
            ("chain completed from ca_file", [
                ("certificate without its intermediate", check_chain_completed),
            ], 10, dict(listen=("ldaps://127.0.0.1:0",), extra_toml=tls_config(
                pki.leaf_crt, pki.leaf_key, ca_file=pki.chain_ca))),
            ("without tls", [
                ("StartTLS unavailable", check_without_tls),
            ], 10, {}),
        ]
    return T.run_tls_suite("tls settings", args, servers)


if __name__ == "__main__":
    sys.exit(main())

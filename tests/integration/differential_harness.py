#!/usr/bin/python3
"""The machinery of the differential tests (differential_test.py, access_rules_test.py): the
same scripted LDAP requests against numadir and against OpenLDAP slapd (the reference), and
the answers compared.

A test fills REQUESTS with the request builders below (bind, search, compare, add, modify,
delete, rename, cleanup, whoami, passwd, sequence, raw_bind, raw_sequence), then
run_differential() starts both servers on the same LDIF (gen_users.py --users USERS plus the
test's extra LDIF), runs every request on a fresh connection, first against numadir, then
against slapd (updates run in the same order on both, so both directories evolve the same
way), and compares: the result code;
the matchedDN (normalized); for searches the set of returned DNs (normalize_dn: lowercased, no
spaces after commas, one escaping form, the AVAs of a multi-valued RDN sorted) and, per entry,
the user attributes (names case-insensitive, values as sets; hashed userPassword values by
scheme only, since salts differ); operational attributes only where asked for: by name (values
compared unless they are inherently server-specific, like timestamps and UUIDs) or by '+'
(names compared, those only one server has must be listed in the test's
known_operational table); for compare, whoami and password modify their answers; for a raw
bind the answer's result code, or the disconnection; for a raw sequence of PDUs the responses
by message ID. The diagnosticMessage is shown with a
difference but not compared.

A difference must be listed in the test's known_differences table with the exact difference
lines printed, a reason and a verdict: NUMADIR_BUG (numadir should answer as slapd does) or
ACCEPTED (an RFC or a documented numadir choice justifies numadir's answer). Any other
difference, or a listed one that changed or vanished (fixed: remove its entry), fails the
test. With -v every identical answer is printed too; with the environment variable
DIFFERENTIAL_DUMP=<file> the new differences are appended to <file> as (name, lines), ready to
paste into the table.
"""
import os
import socket
import subprocess
import sys
import tempfile
import time

import ldap  # python3-ldap
import ldap.dn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from numadir_harness import (  # noqa: E402
    NOTICE_OF_DISCONNECTION, ROOT_DN, ROOT_PW, SUFFIX, CheckFailed, NumadirServer, ber,
    ber_children, ber_int, fail, parse_args, parse_extended_response, read_ldap_message,
    user_dn, user_pw)
import slapd_harness  # noqa: E402

USERS = 200  # gen_users.py --users: both servers get these users before the test's own LDIF.

# Server-specific values: compared by presence only, even when asked for by name.
VOLATILE_OPERATIONAL = {"entryuuid", "entrycsn", "createtimestamp", "modifytimestamp",
                        "creatorsname", "modifiersname", "contextcsn"}
# Every operational attribute either server may return (lowercased). Dropped from the
# comparison unless asked for by name or by '+'.
OPERATIONAL = VOLATILE_OPERATIONAL | {
    "structuralobjectclass", "entrydn", "subschemasubentry", "hassubordinates",
    "numsubordinates", "pwdchangedtime", "namingcontexts", "supportedldapversion",
    "supportedextension", "supportedcontrol", "supportedfeatures", "supportedsaslmechanisms",
    "vendorname", "vendorversion", "altserver", "configcontext", "monitorcontext",
    "objectclasses", "attributetypes", "matchingrules", "matchingruleuse", "ldapsyntaxes",
    "ditcontentrules", "ditstructurerules", "nameforms", "entryttl", "pwdpolicysubentry",
    "collectiveattributesubentries", "collectiveexclusions", "administrativerole",
    "subtreespecification", "hassubordinates"}
# Attributes with DN syntax: values compared as normalized DNs (normalize_dn).
DN_VALUED = {"entrydn", "subschemasubentry", "member", "namingcontexts", "creatorsname",
             "modifiersname", "uniquemember", "seealso", "manager", "owner"}


# The verdict of a known difference: numadir should change to answer as slapd does, or
# numadir's answer is right too (an RFC, or a documented numadir design choice).
NUMADIR_BUG = "NUMADIR BUG"
ACCEPTED = "ACCEPTED"


BASE, ONE, SUB = ldap.SCOPE_BASE, ldap.SCOPE_ONELEVEL, ldap.SCOPE_SUBTREE


# -- identities and connections -------------------------------------------------------------------
ANON = None
ROOT = (ROOT_DN, ROOT_PW)


def user(n: int):
    return (user_dn(n), user_pw(n))


def who_name(who) -> str:
    if who is None:
        return "anonymous"
    if who == ROOT:
        return "rootdn"
    return who[0].split(",")[0]


def connect(url: str, who):
    conn = ldap.initialize(url, bytes_mode=False)
    conn.protocol_version = 3
    conn.set_option(ldap.OPT_REFERRALS, 0)
    conn.set_option(ldap.OPT_NETWORK_TIMEOUT, 10)
    conn.set_option(ldap.OPT_TIMEOUT, 30)
    if who is not None:
        try:
            conn.simple_bind_s(*who)
        except ldap.LDAPError as error:
            raise CheckFailed(f"setup: bind as {who[0]} on {url} failed: {error}")
    return conn


def error_outcome(error: ldap.LDAPError) -> dict:
    info = error.args[0] if error.args and isinstance(error.args[0], dict) else {}
    rc = info.get("result")
    if rc is None:
        rc = f"{type(error).__name__}"
    # Keys starting with "_" are shown with a difference but not compared.
    return {"rc": rc, "matched": normalize_dn(info.get("matched", "") or ""),
            "_info": info.get("info", "")}


def normalize_dn(dn: str) -> str:
    """Lowercased, no spaces after separators, one escaping form (RFC 4514 lets a server write
    `\\,` or `\\2C`; python-ldap's str2dn/dn2str settle on one), the AVAs of a multi-valued RDN
    in one order."""
    if dn.lower().startswith("dn:"):
        return "dn:" + normalize_dn(dn[3:])
    try:
        # An RDN is a set of AVAs (RFC 4512 2.3.1): sort them.
        rdns = [sorted(rdn, key=lambda ava: (ava[0].lower(), ava[1].lower()))
                for rdn in ldap.dn.str2dn(dn)]
        return ldap.dn.dn2str(rdns).lower()
    except ldap.DECODING_ERROR:
        return dn.lower().replace(", ", ",")


def value_key(name: str, value: bytes):
    if name in DN_VALUED:
        try:
            return normalize_dn(value.decode())
        except UnicodeDecodeError:
            return value
    if name == "structuralobjectclass":
        return value.decode().lower()
    if name == "userpassword" and value.startswith(b"{") and b"}" in value:
        # A hashed value: salted, so only the scheme can agree between two servers (both hash
        # with {SSHA}: slapd's default password-hash, numadir's passwords.default_scheme here).
        return value[:value.index(b"}") + 1].upper() + b"<hash>"
    return value


# -- requests ----------------------------------------------------------------------------------
REQUESTS = []  # (name, function(url) -> outcome dict)


def short_name(name: str) -> str:
    """The request's name without its bracketed details: the key of KNOWN_DIFFERENCES."""
    return name.split(" [")[0]


def request(name: str, function):
    if any(short_name(existing) == short_name(name) for existing, _ in REQUESTS):
        raise ValueError(f"duplicate request name {short_name(name)}")
    REQUESTS.append((name, function))


def run_op(url: str, who, operation) -> dict:
    try:
        conn = connect(url, who)
    except CheckFailed as error:
        return {"setup bind failed": str(error).split(" on ldap://")[0]}
    try:
        return operation(conn)
    except ldap.LDAPError as error:
        return error_outcome(error)
    finally:
        try:
            conn.unbind_s()
        except ldap.LDAPError:
            pass


def bind(name: str, dn: str, password: str):
    def function(url):
        conn = connect(url, None)
        try:
            conn.simple_bind_s(dn, password)
            outcome = {"rc": 0, "whoami": normalize_dn(conn.whoami_s())}
        except ldap.LDAPError as error:
            outcome = error_outcome(error)
            # After a failed bind the connection is anonymous (RFC 4511 4.2.1).
            try:
                outcome["whoami after"] = conn.whoami_s()
            except ldap.LDAPError as second:
                outcome["whoami after"] = error_outcome(second)["rc"]
        conn.unbind_s()
        return outcome
    request(f"bind {name}", function)


def search(name: str, base: str, scope: int, filterstr: str = "(objectClass=*)", attrs=None,
           attrsonly: int = 0, sizelimit: int = 0, who=ANON):
    scope_name = {ldap.SCOPE_BASE: "base", ldap.SCOPE_ONELEVEL: "one",
                  ldap.SCOPE_SUBTREE: "sub", ldap.SCOPE_SUBORDINATE: "subordinate"}[scope]

    def operation(conn):
        msgid = conn.search_ext(base, scope, filterstr, attrs, attrsonly, sizelimit=sizelimit)
        entries = []
        outcome = {"rc": 0, "matched": ""}
        try:
            while True:
                rtype, rdata, _, _ = conn.result3(msgid, all=0, timeout=30)
                entries.extend(item for item in rdata if item[0] is not None)
                if rtype == ldap.RES_SEARCH_RESULT:
                    break
        except ldap.LDAPError as error:
            outcome = error_outcome(error)
        outcome["entries"] = {normalize_dn(dn): attributes for dn, attributes in entries}
        outcome["entry count"] = len(entries)
        return outcome

    request(f"search {name} [{scope_name} {filterstr} attrs={attrs}"
            f"{' typesOnly' if attrsonly else ''}{f' sizelimit={sizelimit}' if sizelimit else ''}"
            f" as {who_name(who)}]",
            lambda url: run_op(url, who, operation) | {"attrs": attrs, "sizelimit": sizelimit})


def compare(name: str, dn: str, attr: str, value: str, who=ANON):
    def operation(conn):
        return {"rc": 6 if conn.compare_s(dn, attr, value.encode()) else 5, "matched": ""}
    request(f"compare {name} [{attr}={value} as {who_name(who)}]",
            lambda url: run_op(url, who, operation))


def add(name: str, dn: str, attributes: dict, who=ROOT):
    modlist = [(a, [v.encode() for v in (vs if isinstance(vs, list) else [vs])])
               for a, vs in attributes.items()]

    def operation(conn):
        conn.add_s(dn, modlist)
        return {"rc": 0, "matched": ""}
    request(f"add {name} [as {who_name(who)}]", lambda url: run_op(url, who, operation))


def modify(name: str, dn: str, mods, who=ROOT):
    modlist = [(op, a, None if vs is None else
                [v.encode() for v in (vs if isinstance(vs, list) else [vs])])
               for op, a, vs in mods]

    def operation(conn):
        conn.modify_s(dn, modlist)
        return {"rc": 0, "matched": ""}
    request(f"modify {name} [as {who_name(who)}]", lambda url: run_op(url, who, operation))


def delete(name: str, dn: str, who=ROOT):
    def operation(conn):
        conn.delete_s(dn)
        return {"rc": 0, "matched": ""}
    request(f"delete {name} [as {who_name(who)}]", lambda url: run_op(url, who, operation))


def rename(name: str, dn: str, newrdn: str, newsuperior=None, delold: int = 1, who=ROOT):
    def operation(conn):
        conn.rename_s(dn, newrdn, newsuperior, delold)
        return {"rc": 0, "matched": ""}
    request(f"modrdn {name} [as {who_name(who)}]", lambda url: run_op(url, who, operation))


def cleanup(dn: str):
    """Deletes `dn` if it exists, so that one server's extra entry does not spread into later
    answers. Not compared."""
    def function(url):
        try:
            run_op(url, ROOT, lambda conn: conn.delete_s(dn))
        except CheckFailed:
            pass
        return None
    request(f"cleanup: delete {dn} where it exists", function)


def whoami(name: str, who):
    request(f"whoami {name}",
            lambda url: run_op(url, who, lambda conn: {"rc": 0,
                                                       "whoami": normalize_dn(conn.whoami_s())}))


def passwd(name: str, target, old, new, who):
    def operation(conn):
        _, generated = conn.passwd_s(target, old, new, extract_newpw=True)
        return {"rc": 0, "matched": "", "generated": generated is not None}
    request(f"passwd {name} [as {who_name(who)}]", lambda url: run_op(url, who, operation))


def sequence(name: str, who, steps):
    """Several operations on one connection (e.g. bind, then read); the outcome of each."""
    def function(url):
        conn = connect(url, who)
        outcome = {}
        for index, (label, step) in enumerate(steps):
            try:
                outcome[f"{index} {label}"] = step(conn)
            except ldap.LDAPError as error:
                outcome[f"{index} {label}"] = error_outcome(error)["rc"]
        conn.unbind_s()
        return outcome
    request(f"sequence {name} [as {who_name(who)}]", function)



def raw_bind(name: str, dn: bytes, choice_tag: int, credentials: bytes, version: int = 3):
    """A BindRequest PDU written to a plain socket: for the authentication choices python-ldap
    cannot send. Outcome: the answer's protocolOp tag and result code and matchedDN (a Notice of
    Disconnection reads as such), then whether an anonymous bind on the same connection still
    succeeds (0) or the connection was closed."""
    pdu = ber(0x30, ber_int(0x02, 1) + ber(0x60, ber_int(0x02, version) + ber(0x04, dn) +
                                           ber(choice_tag, credentials)))
    anonymous = ber(0x30, ber_int(0x02, 2) + ber(0x60, ber_int(0x02, 3) + ber(0x04, b"") +
                                                 ber(0x80, b"")))

    def function(url):
        host, port = url[len("ldap://"):].rstrip("/").rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(pdu)
            buffer = bytearray()
            answer = read_ldap_message(sock, buffer, timeout=10)
            if answer is None:
                return {"rc": "closed without an answer"}
            message_id, tag, content, _ = answer
            outcome = {"op": tag}
            if message_id == 0 and tag == 0x78:
                code, _, text, oid = parse_extended_response(content)
                if oid == NOTICE_OF_DISCONNECTION:
                    outcome.update({"rc": f"Notice of Disconnection ({code})", "_info": text})
            else:
                children = ber_children(content)
                outcome.update({"rc": int.from_bytes(children[0][1], "big"),
                                "matched": normalize_dn(children[1][1].decode()),
                                "_info": children[2][1].decode(errors="replace")})
            try:
                sock.sendall(anonymous)
                again = read_ldap_message(sock, buffer, timeout=10)
            except OSError:
                again = None
            outcome["anonymous bind after"] = (
                "closed" if again is None else int.from_bytes(ber_children(again[2])[0][1], "big"))
            return outcome
    request(f"bind raw {name} [tag 0x{choice_tag:02x}, version {version}]", function)



# Raw request PDUs, for raw_sequence().
def pdu(message_id: int, op: bytes) -> bytes:
    return ber(0x30, ber_int(0x02, message_id) + op)


def pdu_bind(message_id: int, dn: str = "", password: str = "") -> bytes:
    return pdu(message_id, ber(0x60, ber_int(0x02, 3) + ber(0x04, dn.encode()) +
                               ber(0x80, password.encode())))


def pdu_search(message_id: int, base: str, scope: int = BASE) -> bytes:
    """A SearchRequest for (objectClass=*) asking for no attributes (1.1)."""
    return pdu(message_id, ber(0x63, ber(0x04, base.encode()) + ber(0x0A, bytes([scope])) +
                               ber(0x0A, b"\x00") + ber_int(0x02, 0) + ber_int(0x02, 0) +
                               ber(0x01, b"\x00") + ber(0x87, b"objectClass") +
                               ber(0x30, ber(0x04, b"1.1"))))


def pdu_whoami(message_id: int) -> bytes:
    return pdu(message_id, ber(0x77, ber(0x80, b"1.3.6.1.4.1.4203.1.11.3")))


def pdu_abandon(message_id: int, target: int) -> bytes:
    return pdu(message_id, ber_int(0x50, target))


RESPONSE_NAMES = {0x61: "bindResponse", 0x64: "searchResEntry", 0x65: "searchResDone",
                  0x67: "modifyResponse", 0x69: "addResponse", 0x6B: "delResponse",
                  0x6D: "modDNResponse", 0x6F: "compareResponse", 0x73: "searchResRef",
                  0x78: "extendedResponse", 0x79: "intermediateResponse"}
SENTINEL_ID = 99


def raw_sequence(name: str, pdus, answers: int):
    """Request PDUs written to a plain socket in one write, for what python-ldap cannot send
    (message IDs it would not pick, an Abandon at a chosen moment). Reads until `answers` final
    responses (those that end an operation: what slapd gives) or a close, then sends an
    anonymous Bind (message ID SENTINEL_ID) and reads until its answer: numadir runs a bind once
    nothing else is outstanding, so a response that only numadir sends still comes before it.
    Outcome: the responses as sorted 'ID: operation resultCode' lines (the order of concurrent
    operations is the server's), then the sentinel's answer or 'closed'."""
    def function(url):
        host, port = url[len("ldap://"):].rstrip("/").rsplit(":", 1)
        lines = []
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(b"".join(pdus))
            buffer = bytearray()

            def receive(until_sentinel: bool):
                finals = 0
                while until_sentinel or finals < answers:
                    try:
                        answer = read_ldap_message(sock, buffer, timeout=5)
                    except (TimeoutError, OSError):
                        return "no answer"
                    if answer is None:
                        return "closed"
                    message_id, tag, content, _ = answer
                    line = f"{message_id}: {RESPONSE_NAMES.get(tag, hex(tag))}"
                    if tag not in (0x64, 0x73, 0x79):
                        code, _, _, oid = parse_extended_response(content)
                        line += f" {code}"
                        if oid == NOTICE_OF_DISCONNECTION:
                            line += " (Notice of Disconnection)"
                        if until_sentinel and message_id == SENTINEL_ID:
                            return line
                        finals += 1
                    lines.append(line)
                return None

            ended = receive(False)
            if ended is None:
                try:
                    sock.sendall(pdu_bind(SENTINEL_ID))
                    ended = receive(True)
                except OSError:
                    ended = "closed"
        return {"responses": sorted(lines), "then": ended}
    request(f"raw {name}", function)

# -- comparison ----------------------------------------------------------------------------------
def requested_names(attrs):
    if attrs is None:
        return set()
    return {a.lower() for a in attrs}


def split_attributes(attributes: dict) -> tuple:
    """(user attributes, operational attributes) by lowercased name, values as sets."""
    users, operational = {}, {}
    for name, values in attributes.items():
        key = name.lower()
        target = operational if key in OPERATIONAL else users
        target.setdefault(key, set()).update(value_key(key, v) for v in values)
    return users, operational


def show(values) -> str:
    shown = sorted(v.decode(errors="replace") if isinstance(v, bytes) else str(v)
                   for v in values)
    text = ", ".join(shown[:4]) + (f", ... ({len(shown)})" if len(shown) > 4 else "")
    return "{" + text + "}"


def diff_outcomes(ours: dict, theirs: dict, op_names_seen: list) -> list:
    """Difference lines, numadir ('numadir') against slapd ('slapd'); [] if none."""
    lines = []
    for key in sorted(set(ours) | set(theirs)):
        if key in ("entries", "attrs", "sizelimit") or key.startswith("_"):
            continue
        if ours.get(key) != theirs.get(key):
            lines.append(f"{key}: numadir {ours.get(key)!r}, slapd {theirs.get(key)!r}")
    if "entries" not in ours or "entries" not in theirs:
        return lines
    attrs = ours.get("attrs")
    asked = requested_names(attrs)
    plus = "+" in asked
    sizelimited = ours.get("rc") == 4 and theirs.get("rc") == 4
    dns_ours, dns_theirs = set(ours["entries"]), set(theirs["entries"])
    if not sizelimited:
        # Which entries a size-limited search returns is the server's choice; only the count
        # (compared above) must agree.
        for dn in sorted(dns_ours - dns_theirs)[:5]:
            lines.append(f"entry only from numadir: {dn}")
        if len(dns_ours - dns_theirs) > 5:
            lines.append(f"... {len(dns_ours - dns_theirs)} entries only from numadir")
        for dn in sorted(dns_theirs - dns_ours)[:5]:
            lines.append(f"entry only from slapd: {dn}")
        if len(dns_theirs - dns_ours) > 5:
            lines.append(f"... {len(dns_theirs - dns_ours)} entries only from slapd")
    # Attribute differences, grouped by (attribute, kind) over all common entries.
    grouped = {}
    for dn in sorted(dns_ours & dns_theirs):
        users_ours, op_ours = split_attributes(ours["entries"][dn])
        users_theirs, op_theirs = split_attributes(theirs["entries"][dn])
        for name in sorted(set(users_ours) | set(users_theirs)):
            a, b = users_ours.get(name), users_theirs.get(name)
            if a != b:
                if a is None or b is None:
                    kind = f"attribute {name} only from {'slapd' if a is None else 'numadir'}"
                else:
                    kind = f"attribute {name} values: numadir {show(a)}, slapd {show(b)}"
                grouped.setdefault(kind, []).append(dn)
        for name in sorted(set(op_ours) | set(op_theirs)):
            a, b = op_ours.get(name), op_theirs.get(name)
            if name in asked:
                # Asked for by name: compare presence, and values unless server-specific.
                if (a is None) != (b is None):
                    kind = (f"requested operational {name} only from "
                            f"{'slapd' if a is None else 'numadir'}")
                    grouped.setdefault(kind, []).append(dn)
                elif a != b and name not in VOLATILE_OPERATIONAL:
                    kind = f"operational {name} values: numadir {show(a)}, slapd {show(b)}"
                    grouped.setdefault(kind, []).append(dn)
            elif plus:
                if (a is None) != (b is None):
                    op_names_seen.append((name, "slapd" if a is None else "numadir"))
                elif a != b and name not in VOLATILE_OPERATIONAL:
                    kind = f"operational {name} values: numadir {show(a)}, slapd {show(b)}"
                    grouped.setdefault(kind, []).append(dn)
            else:
                # Not asked for: RFC 4511 4.5.1.8 says it must not be returned.
                for side, values in (("numadir", a), ("slapd", b)):
                    if values is not None:
                        grouped.setdefault(f"unrequested operational {name} from {side}",
                                           []).append(dn)
    for kind, dns in grouped.items():
        first = dns[0] or "the root DSE"
        where = first if len(dns) == 1 else f"{len(dns)} entries, e.g. {first}"
        lines.append(f"{kind} ({where})")
    return lines


def describe(outcome: dict) -> str:
    parts = []
    for key, value in outcome.items():
        if key in ("attrs", "sizelimit", "matched") and not value:
            continue
        if key == "entries":
            continue
        parts.append(f"{key} {value!r}")
    return ", ".join(parts)


def run_all(numadir_url: str, slapd_url: str, verbose: bool, test_name: str,
            known_differences: dict, known_operational: dict) -> int:
    """Runs REQUESTS against both servers; differences are checked against the tables
    `known_differences` (request name -> ((verdict, reason), lines)) and `known_operational`
    (lowercased attribute name -> (the server that returns it, (verdict, reason)))."""
    identical, known, new = 0, [], []
    op_names = {}
    compared = 0
    for name, function in REQUESTS:
        ours = function(numadir_url)
        theirs = function(slapd_url)
        if ours is None and theirs is None:
            continue  # A cleanup step.
        compared += 1
        seen = []
        lines = diff_outcomes(ours, theirs, seen)
        for attribute, side in seen:
            op_names.setdefault((attribute, side), []).append(name)
        if not lines:
            identical += 1
            if verbose:
                print(f"  same: {name}: {describe(ours)}", flush=True)
            continue
        entry = known_differences.get(short_name(name))
        if entry is not None and sorted(entry[1]) == sorted(lines):
            known.append((short_name(name), entry[0], lines))
            if verbose:
                print(f"  known difference: {name}", flush=True)
            continue
        new.append((name, lines, entry))
        if os.environ.get("DIFFERENTIAL_DUMP"):
            with open(os.environ["DIFFERENTIAL_DUMP"], "a") as dump:
                dump.write(repr((short_name(name), lines)) + "\n")
        print(f"  NEW DIFFERENCE: {name}", flush=True)
        for line in lines:
            print(f"      {line}", flush=True)
        print(f"      (result code: numadir {ours.get('rc')!r}, slapd {theirs.get('rc')!r}; "
              f"diagnosticMessage: numadir {ours.get('_info')!r}, "
              f"slapd {theirs.get('_info')!r})", flush=True)
        if entry is not None:
            print(f"      (KNOWN_DIFFERENCES lists different lines: {entry[1]})", flush=True)

    # Operational attribute names only one server returns for '+'.
    op_known, op_new = [], []
    for (attribute, side), names in sorted(op_names.items()):
        listed = known_operational.get(attribute)
        if listed is not None and listed[0] == side:
            op_known.append((attribute, side, listed[1]))
        else:
            op_new.append((attribute, side, names))
            print(f"  NEW DIFFERENCE: '+' returns {attribute} only from {side} "
                  f"({len(names)} requests, e.g. {names[0]})", flush=True)

    # Listed differences that did not show up: the table is stale.
    seen_names = {name for name, _, _ in known} | {short_name(name) for name, _, _ in new}
    stale = [name for name in known_differences if name not in seen_names]
    for name in stale:
        print(f"  STALE: KNOWN_DIFFERENCES lists '{name}', which did not differ "
              f"(or is no longer a request): remove it", flush=True)
    seen_attributes = {attribute for attribute, _, _ in op_known}
    for attribute in known_operational:
        if attribute not in seen_attributes:
            stale.append(attribute)
            print(f"  STALE: KNOWN_OPERATIONAL_ATTRIBUTES lists '{attribute}', which '+' did "
                  f"not return from one server only: remove it", flush=True)

    print(f"{test_name}: {compared} requests compared, {identical} identical, "
          f"{len(known)} known differences, {len(new)} new differences; '+' attribute names: "
          f"{len(op_known)} known, {len(op_new)} new; {len(stale)} stale table entries",
          flush=True)
    if known or op_known:
        print("known differences (numadir vs slapd), by reason:")
        by_reason = {}
        for name, reason, lines in known:
            by_reason.setdefault(reason, []).append((name, lines))
        for attribute, side, reason in op_known:
            by_reason.setdefault(reason, []).append(
                (f"'+' returns {attribute} only from {side}", []))
        for (verdict, reason), items in by_reason.items():
            print(f"  [{verdict}] {reason}")
            for name, lines in items:
                shown = "; ".join(lines[:2]) + ("; ..." if len(lines) > 2 else "")
                print(f"    - {name}{': ' + shown if shown else ''}")
        bugs = sum(1 for name, (verdict, _), _ in known if verdict == NUMADIR_BUG)
        print(f"  {bugs} of the {len(known)} known differences are marked {NUMADIR_BUG} "
              f"(numadir should answer as slapd does)")
    return 1 if new or op_new or stale else 0


def write_ldif(path: str, gen: str, extra_ldif: str):
    with open(path, "wb") as stream:
        generated = subprocess.run(["/usr/bin/python3", gen, "--users", str(USERS), "--suffix",
                                    SUFFIX], capture_output=True, timeout=120)
        if generated.returncode != 0:
            fail(f"gen_users.py failed: {generated.stderr.decode(errors='replace')}")
        stream.write(generated.stdout)
        stream.write(b"\n" + extra_ldif.strip("\n").encode() + b"\n\n")


class DifferentialNumadir(NumadirServer):
    """numadir on the given LDIF file, with slapd's indexes and a {SSHA} rootpw."""

    def __init__(self, numadir: str, ldif_path: str, root_pw_hash: str, keep: bool,
                 extra_toml: str = ""):
        super().__init__(numadir, gen_users="", users=0, keep=keep)
        self.ldif_path = ldif_path
        self.root_pw_hash = root_pw_hash
        self.extra_toml = extra_toml

    def _prepare(self):
        self.config = os.path.join(self.dir, "numadir.toml")
        with open(self.config, "w") as stream:
            stream.write(f"""[database]
path = "{self.dir}/db"
suffix = "{SUFFIX}"
map_size = "1GiB"
durability = "nosync"
indexes = ["objectClass eq", "uid eq"]

[passwords]
default_scheme = "SSHA"
allow_cleartext = true

[server]
listen = ["ldap://127.0.0.1:0"]
rootdn = "{ROOT_DN}"
rootpw = "{self.root_pw_hash}"
listeners = 1
workers = 2

[limits]
size_limit = 500
time_limit = 3600
{self.extra_toml}
""")
        imported = subprocess.run([self.numadir, "import", "-c", self.config, "--no-progress",
                                   self.ldif_path], capture_output=True, text=True, timeout=300)
        if imported.returncode != 0:
            fail(f"numadir import failed ({imported.returncode}): {imported.stderr}"
                 f"{imported.stdout}")


def run_differential(test_name: str, define, slapd_access: str, numadir_toml: str = "",
                     extra_ldif: str = "", known_differences=None, known_operational=None) -> int:
    """The whole test: both servers on the same data, `define()` filling REQUESTS, the answers
    compared against the tables (as run_all; None: empty). Returns the exit status."""
    known_differences = known_differences if known_differences is not None else {}
    known_operational = known_operational if known_operational is not None else {}
    args = parse_args(f"{test_name}: numadir against OpenLDAP slapd, request by request")
    verbose = "-v" in sys.argv[1:] or "--verbose" in sys.argv[1:]
    missing = slapd_harness.available()
    if missing:
        print(f"FAIL {test_name}: {missing}", flush=True)
        return 1
    started = time.monotonic()
    REQUESTS.clear()
    define()
    with tempfile.TemporaryDirectory(prefix="numadir-diff-") as work:
        ldif_path = os.path.join(work, "data.ldif")
        write_ldif(ldif_path, args.gen, extra_ldif)
        hashed = subprocess.run([os.path.abspath(args.numadir), "passwd", "-h", "SSHA", "-s",
                                 ROOT_PW], capture_output=True, text=True, timeout=60)
        if hashed.returncode != 0 or not hashed.stdout.startswith("{SSHA}"):
            print(f"FAIL {test_name}: numadir passwd -h SSHA: {hashed.stderr}")
            return 1
        root_pw_hash = hashed.stdout.strip()
        try:
            with slapd_harness.SlapdServer(ldif_path, access=slapd_access, root_pw=root_pw_hash,
                                           keep=args.keep) as slapd, \
                    DifferentialNumadir(args.numadir, ldif_path, root_pw_hash,
                                        args.keep, numadir_toml) as numadir:
                status = run_all(numadir.url, slapd.url, verbose, test_name, known_differences,
                                 known_operational)
        except CheckFailed as error:
            print(f"FAIL {test_name}: {error}", flush=True)
            return 1
    print(f"{test_name}: {time.monotonic() - started:.1f}s", flush=True)
    if status != 0:
        print(f"FAIL {test_name}: new differences between numadir and slapd (above); "
              "fix numadir or, if slapd's answer is not the reference here, list them in "
              "KNOWN_DIFFERENCES with the reason", flush=True)
    return status



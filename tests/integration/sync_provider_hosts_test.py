#!/usr/bin/python3
"""numadir replicas of a numadir provider on separate hosts: network namespaces.

replication_hosts_test.py's test, every step and check of it, with `numadir serve` as the
provider instead of slapd: `[replication.provider] enabled = true`, database.server_id = 1,
perf/gen_users.py's users imported, on ldap://10.201.0.10:389 in its own namespace
(sync-provider-hosts-<pid>-provider). The two numadir replicas ([[replication.consumer]]
refreshAndPersist, bound as the provider's rootdn) each in theirs, every client in `client`:

1. Each server listens on its own address only, each replica's consumer connection to the
   provider crosses the bridge, the provider's cn=Monitor shows a persisting
   refreshAndPersist search from each replica's address, and both replicas equal the provider
   (every entry with every stored attribute, entryUUID and entryCSN included).
2. authrate, given both replicas' URLs, drives auths while a writer modifies users on the
   provider and records each acknowledged write; replica1 is stopped (the connections on it
   fail over to replica2, auths go on); the provider is stopped (auths go on at replica2, a
   write sent to replica2 gets a referral (10) naming the provider and the entry, one sent to
   the provider fails with "Can't contact LDAP server" (255), no write is acknowledged);
   replica1 is restarted (it serves its kept database); the provider is restarted on the same
   address and database (writes are acknowledged again).
3. Both replicas converge to the provider, and every acknowledged write is on all three.
4. Every process and namespace of the test is gone at the end (also on failure or SIGTERM);
   the host's namespace is as it was.

It needs root (ip netns); run as another user it fails saying so, as
replication_hosts_test.py does.

  sync_provider_hosts_test.py --numadir build/release/server/numadir --gen perf/gen_users.py \\
      --bin-dir build/release

Standard library + python3-ldap (the writer) + iproute2, ldap-utils.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import replication_hosts_test  # noqa: E402

if __name__ == "__main__":
    sys.exit(replication_hosts_test.main(name="sync_provider_hosts", doc=__doc__,
                                         provider_kind="numadir",
                                         prefix="sync-provider-hosts-"))

// cn=Monitor (server/monitoring/monitor.h): the entries built from the counters, the operation
// counters, and searches of the subtree through the OperationHandler (access, scopes, filters,
// writes).
#include "server/monitoring/monitor.h"

#include <doctest/doctest.h>

#include <latch>
#include <string>
#include <thread>
#include <vector>

#include "schema/schema.h"
#include "tests/server/operations/operation_handler_test_util.h"
#include "threadpool/thread_counters.h"

namespace numadir::server::testing {
namespace {

// A frontend of two listeners, three workers and one pool, with distinct counts.
listener::FrontendSnapshot fake_frontend() {
  listener::FrontendSnapshot snapshot;
  snapshot.dispatcher = "percpu";
  snapshot.steering = "cpu";
  for (int i = 0; i < 2; ++i) {
    listener::ListenerSnapshot listener;
    listener.name = "listener-0-" + std::to_string(i);
    listener.tid = 100 + i;
    listener.connections = 3 + i;
    listener.accepted = 10 + i;
    listener.refused = i;
    listener.requests = 1000 + i;
    listener.helped = 400 + i;
    listener.output_pauses = 7 + i;
    listener.bytes_received = 5000;
    snapshot.listeners.push_back(listener);
  }
  for (int i = 0; i < 3; ++i) {
    listener::WorkerSnapshot worker;
    worker.name = "worker-0-" + std::to_string(i);
    worker.tid = 200 + i;
    worker.requests = 10 * (i + 1);
    worker.parks = 7;
    worker.wakeups = 6;
    worker.busy_ns = 2'500'000'000;
    snapshot.workers.push_back(worker);
  }
  listener::PoolSnapshot pool;
  pool.name = "node0";
  pool.queue_depth = 4;
  pool.queue_high_water = 40;
  pool.lock =
      threadpool::TaskPool::LockStats{.acquisitions = 900, .contended = 12, .wait_ns = 34567};
  pool.queue_capacity = 4096;
  pool.workers = 3;
  pool.listeners = 2;
  snapshot.pools.push_back(pool);
  return snapshot;
}

const schema::Entry* find_entry(const std::vector<schema::Entry>& entries, std::string_view dn) {
  for (const schema::Entry& entry : entries) {
    if (entry.dn == dn) {
      return &entry;
    }
  }
  return nullptr;
}

std::string value_of(const schema::Entry& entry, std::string_view type) {
  const schema::EntryAttribute* attribute = entry.find(type);
  return attribute != nullptr && attribute->values.size() == 1 ? attribute->values[0] : "";
}

std::vector<std::string> dns_of(const std::vector<std::unique_ptr<Response>>& responses) {
  std::vector<std::string> out;
  for (const auto* entry : entries_of(responses)) {
    out.emplace_back(entry->object_name);
  }
  return out;
}

TEST_CASE("make_monitor_entries: the server and each listener and worker and pool") {
  MonitorData data;
  data.version = "numadir 9.9";
  data.uptime_s = 42;
  data.frontend = fake_frontend();
  data.listener_cpu_ms = {std::uint64_t{120}, std::nullopt};
  data.worker_cpu_ms = {std::uint64_t{1}, std::uint64_t{2}, std::uint64_t{3}};
  data.operations.operations[static_cast<std::size_t>(OperationKind::kBind)] = 9;
  data.operations.operations[static_cast<std::size_t>(OperationKind::kSearch)] = 11;
  data.operations.auths = 8;
  data.writer = backend::WriterStats{
      .jobs = 30, .failed = 2, .commits = 12, .batches = 13, .largest_batch = 6};
  const std::vector<schema::Entry> entries = make_monitor_entries(data);

  std::vector<std::string> dns;
  for (const schema::Entry& entry : entries) {
    dns.push_back(entry.dn);
    REQUIRE(entry.attributes.size() >= 2);
    CHECK(entry.attributes[0].description == "objectClass");
    CHECK(entry.attributes[1].description == "cn");
  }
  CHECK(dns == std::vector<std::string>{
                   "cn=Monitor",
                   "cn=Connections,cn=Monitor",
                   "cn=Operations,cn=Monitor",
                   "cn=Writer,cn=Monitor",
                   "cn=Listeners,cn=Monitor",
                   "cn=Listener 0,cn=Listeners,cn=Monitor",
                   "cn=Listener 1,cn=Listeners,cn=Monitor",
                   "cn=Workers,cn=Monitor",
                   "cn=Worker 0,cn=Workers,cn=Monitor",
                   "cn=Worker 1,cn=Workers,cn=Monitor",
                   "cn=Worker 2,cn=Workers,cn=Monitor",
                   "cn=Pools,cn=Monitor",
                   "cn=Pool 0,cn=Pools,cn=Monitor",
               });
  const schema::Entry& server = *find_entry(entries, "cn=Monitor");
  CHECK(value_of(server, "numadirVersion") == "numadir 9.9");
  CHECK(value_of(server, "numadirDispatcher") == "percpu");
  CHECK(value_of(server, "numadirSteering") == "cpu");
  CHECK(value_of(server, "numadirUptimeSeconds") == "42");

  const schema::Entry& connections = *find_entry(entries, "cn=Connections,cn=Monitor");
  CHECK(value_of(connections, "numadirConnections") == "7");
  CHECK(value_of(connections, "numadirConnectionsTotal") == "21");
  CHECK(value_of(connections, "numadirConnectionsRefused") == "1");

  const schema::Entry& operations = *find_entry(entries, "cn=Operations,cn=Monitor");
  CHECK(value_of(operations, "numadirOperations") == "20");
  CHECK(value_of(operations, "numadirBinds") == "9");
  CHECK(value_of(operations, "numadirAuths") == "8");
  CHECK(value_of(operations, "numadirSearches") == "11");
  CHECK(value_of(operations, "numadirAdds") == "0");

  const schema::Entry& writer = *find_entry(entries, "cn=Writer,cn=Monitor");
  CHECK(value_of(writer, "numadirWriterJobs") == "30");
  CHECK(value_of(writer, "numadirWriterFailed") == "2");
  CHECK(value_of(writer, "numadirCommits") == "12");
  CHECK(value_of(writer, "numadirBatches") == "13");
  CHECK(value_of(writer, "numadirLargestBatch") == "6");

  const schema::Entry& listener0 = *find_entry(entries, "cn=Listener 0,cn=Listeners,cn=Monitor");
  CHECK(value_of(listener0, "numadirThreadName") == "listener-0-0");
  CHECK(value_of(listener0, "numadirThreadId") == "100");
  CHECK(value_of(listener0, "numadirConnections") == "3");
  CHECK(value_of(listener0, "numadirRequests") == "1000");
  CHECK(value_of(listener0, "numadirHelped") == "400");
  CHECK(value_of(listener0, "numadirOutputPauses") == "7");
  CHECK(value_of(listener0, "numadirCpuTimeMs") == "120");
  const schema::Entry& listener1 = *find_entry(entries, "cn=Listener 1,cn=Listeners,cn=Monitor");
  CHECK(listener1.find("numadirCpuTimeMs") == nullptr);  // /proc could not tell.

  const schema::Entry& worker2 = *find_entry(entries, "cn=Worker 2,cn=Workers,cn=Monitor");
  CHECK(value_of(worker2, "numadirRequests") == "30");
  CHECK(value_of(worker2, "numadirParks") == "7");
  CHECK(value_of(worker2, "numadirWakeups") == "6");
  CHECK(value_of(worker2, "numadirBusyTimeMs") == "2500");
  CHECK(value_of(worker2, "numadirCpuTimeMs") == "3");
  CHECK(value_of(worker2, "numadirPool") == "0");
  const schema::EntryAttribute* classes = worker2.find("objectClass");
  REQUIRE(classes != nullptr);
  CHECK(classes->values ==
        std::vector<std::string>{"top", "numadirMonitor", "numadirWorkerObject"});

  const schema::Entry& pool = *find_entry(entries, "cn=Pool 0,cn=Pools,cn=Monitor");
  CHECK(value_of(pool, "description") == "node0");
  CHECK(value_of(pool, "numadirQueueDepth") == "4");
  CHECK(value_of(pool, "numadirQueueHighWater") == "40");
  CHECK(value_of(pool, "numadirQueueCapacity") == "4096");
  CHECK(value_of(pool, "numadirQueueLockAcquisitions") == "900");
  CHECK(value_of(pool, "numadirQueueLockContended") == "12");
  CHECK(value_of(pool, "numadirQueueLockWaitUs") == "34");
}

TEST_CASE("make_monitor_entries: before the listeners run there are no thread entries") {
  MonitorData data;
  const std::vector<schema::Entry> entries = make_monitor_entries(data);
  REQUIRE(entries.size() == 3);
  CHECK(entries[2].dn == "cn=Operations,cn=Monitor");
  CHECK(entries[0].find("numadirDispatcher") == nullptr);
}

TEST_CASE("make_monitor_entries: an entry per replication consumer under cn=Replication") {
  MonitorData data;
  replication::ConsumerStatus consumer;
  consumer.rid = 7;
  consumer.provider = "ldap://ldap1.example.com:389";
  consumer.state = replication::ConsumerState::kPersisting;
  consumer.cookie =
      "rid=007,csn=20261203120000.000000Z#000000#001#000000;"
      "20261203120001.000000Z#000000#002#000000";
  consumer.entries_received = 100;
  consumer.changes_applied = 101;
  consumer.batches_applied = 3;
  consumer.connects = 2;
  consumer.failures = 1;
  consumer.last_error = "ldap://ldap1.example.com:389: Connection refused";
  consumer.last_change = std::chrono::system_clock::time_point(std::chrono::seconds(1796299200));
  data.consumers.push_back(consumer);
  data.consumers.push_back(replication::ConsumerStatus{});  // Never connected: few attributes.
  data.consumers.back().rid = 8;
  const std::vector<schema::Entry> entries = make_monitor_entries(data);
  REQUIRE(entries.size() == 6);
  CHECK(entries[3].dn == "cn=Replication,cn=Monitor");
  const schema::Entry& entry = entries[4];
  CHECK(entry.dn == "cn=Consumer 7,cn=Replication,cn=Monitor");
  REQUIRE(entry.find("objectClass") != nullptr);
  CHECK(entry.find("objectClass")->values ==
        std::vector<std::string>{"top", "numadirMonitor", "numadirConsumerObject"});
  CHECK(value_of(entry, "numadirReplicationState") == "persisting");
  CHECK(value_of(entry, "numadirProvider") == "ldap://ldap1.example.com:389");
  CHECK(value_of(entry, "numadirCookie") == consumer.cookie);
  CHECK(value_of(entry, "numadirContextCSN") ==
        "20261203120000.000000Z#000000#001#000000;20261203120001.000000Z#000000#002#000000");
  CHECK(value_of(entry, "numadirEntriesReceived") == "100");
  CHECK(value_of(entry, "numadirChangesApplied") == "101");
  CHECK(value_of(entry, "numadirBatchesApplied") == "3");
  CHECK(value_of(entry, "numadirFailures") == "1");
  CHECK(value_of(entry, "numadirLastChange") == "20261203120000Z");
  CHECK(value_of(entry, "numadirLastError") == consumer.last_error);
  CHECK(entries[5].find("numadirCookie") == nullptr);
  CHECK(entries[5].find("numadirLastChange") == nullptr);
  CHECK(value_of(entries[5], "numadirReplicationState") == "starting");
}

// A provider serving two sync searches: a persisting refreshAndPersist one with every field,
// and an anonymous refreshOnly one in its refresh that sent no cookie yet.
replication::ProviderStatus fake_provider() {
  replication::ProviderStatus provider;
  provider.enabled = true;
  provider.session_log_entries = 10000;
  provider.context_csn = "20261206220000.123456Z#000000#001#000000";
  provider.searches_served = 12;
  provider.refused = 2;
  provider.fell_behind = 1;
  replication::ProviderConsumerStatus persist;
  persist.connection_id = 41;
  persist.message_id = 3;
  persist.peer = "192.0.2.7:40001";
  persist.identity = "cn=replicator,dc=example,dc=com";
  persist.rid = 7;
  persist.persist = true;
  persist.refreshing = false;
  persist.base = "dc=example,dc=com";
  persist.entries_sent = 10002;
  persist.changes_sent = 345;
  persist.queue_depth = 6;
  persist.queue_capacity = 4096;
  persist.since = std::chrono::system_clock::time_point(std::chrono::seconds(1796299200));
  persist.last_csn = "20261206215959.923456Z#000000#001#000000";
  persist.lag_ms = 200;
  provider.consumers.push_back(persist);
  replication::ProviderConsumerStatus refresh;
  refresh.connection_id = 42;
  refresh.message_id = 1;
  refresh.peer = "PATH=/run/numadir/ldapi";
  refresh.base = "ou=people,dc=example,dc=com";
  refresh.entries_sent = 50;
  refresh.since = std::chrono::system_clock::time_point(std::chrono::seconds(1796299260));
  provider.consumers.push_back(refresh);
  return provider;
}

TEST_CASE("make_monitor_entries: the provider and each sync search it serves") {
  MonitorData data;
  data.provider = fake_provider();
  const std::vector<schema::Entry> entries = make_monitor_entries(data);
  // No [[replication.consumer]]: cn=Replication is there for the provider alone.
  REQUIRE(entries.size() == 7);
  CHECK(entries[3].dn == "cn=Replication,cn=Monitor");
  const schema::Entry& provider = entries[4];
  CHECK(provider.dn == "cn=Provider,cn=Replication,cn=Monitor");
  REQUIRE(provider.find("objectClass") != nullptr);
  CHECK(provider.find("objectClass")->values ==
        std::vector<std::string>{"top", "numadirMonitor", "numadirProviderObject"});
  CHECK(value_of(provider, "cn") == "Provider");
  CHECK(value_of(provider, "numadirProviderEnabled") == "TRUE");
  CHECK(value_of(provider, "numadirSessionLogEntries") == "10000");
  CHECK(value_of(provider, "numadirContextCSN") == "20261206220000.123456Z#000000#001#000000");
  CHECK(value_of(provider, "numadirSyncConsumers") == "2");
  CHECK(value_of(provider, "numadirSyncSearches") == "12");
  CHECK(value_of(provider, "numadirSyncRefused") == "2");
  CHECK(value_of(provider, "numadirFellBehind") == "1");

  const schema::Entry& persist = entries[5];
  CHECK(persist.dn == "cn=Consumer 41-3,cn=Provider,cn=Replication,cn=Monitor");
  CHECK(persist.find("objectClass")->values ==
        std::vector<std::string>{"top", "numadirMonitor", "numadirSyncConsumerObject"});
  CHECK(value_of(persist, "cn") == "Consumer 41-3");
  CHECK(value_of(persist, "numadirConnectionId") == "41");
  CHECK(value_of(persist, "numadirMessageId") == "3");
  CHECK(value_of(persist, "numadirPeer") == "192.0.2.7:40001");
  CHECK(value_of(persist, "numadirIdentity") == "cn=replicator,dc=example,dc=com");
  CHECK(value_of(persist, "numadirRid") == "7");
  CHECK(value_of(persist, "numadirSyncMode") == "refreshAndPersist");
  CHECK(value_of(persist, "numadirSyncPhase") == "persist");
  CHECK(value_of(persist, "numadirSearchBase") == "dc=example,dc=com");
  CHECK(value_of(persist, "numadirEntriesSent") == "10002");
  CHECK(value_of(persist, "numadirChangesSent") == "345");
  CHECK(value_of(persist, "numadirSyncQueueDepth") == "6");
  CHECK(value_of(persist, "numadirSyncQueueCapacity") == "4096");
  CHECK(value_of(persist, "numadirSince") == "20261203120000Z");
  CHECK(value_of(persist, "numadirLastCSN") == "20261206215959.923456Z#000000#001#000000");
  CHECK(value_of(persist, "numadirLagMs") == "200");

  const schema::Entry& refresh = entries[6];
  CHECK(refresh.dn == "cn=Consumer 42-1,cn=Provider,cn=Replication,cn=Monitor");
  CHECK(value_of(refresh, "numadirSyncMode") == "refreshOnly");
  CHECK(value_of(refresh, "numadirSyncPhase") == "refresh");
  CHECK(value_of(refresh, "numadirPeer") == "PATH=/run/numadir/ldapi");
  CHECK(value_of(refresh, "numadirSince") == "20261203120100Z");
  CHECK(value_of(refresh, "numadirLagMs") == "0");
  // Anonymous, no rid in its cookie, no cookie sent yet: those attributes are left out.
  CHECK(refresh.find("numadirIdentity") == nullptr);
  CHECK(refresh.find("numadirRid") == nullptr);
  CHECK(refresh.find("numadirLastCSN") == nullptr);

  SUBCASE("with consumers of its own too: theirs first, then the provider") {
    data.consumers.push_back(replication::ConsumerStatus{});
    data.consumers.back().rid = 3;
    const std::vector<schema::Entry> both = make_monitor_entries(data);
    REQUIRE(both.size() == 8);
    CHECK(both[3].dn == "cn=Replication,cn=Monitor");
    CHECK(both[4].dn == "cn=Consumer 3,cn=Replication,cn=Monitor");
    CHECK(both[5].dn == "cn=Provider,cn=Replication,cn=Monitor");
  }
  SUBCASE("a provider that is off and serves nothing") {
    data.provider = replication::ProviderStatus{};
    const std::vector<schema::Entry> off = make_monitor_entries(data);
    REQUIRE(off.size() == 5);
    CHECK(value_of(off[4], "numadirProviderEnabled") == "FALSE");
    CHECK(value_of(off[4], "numadirSyncConsumers") == "0");
    CHECK(off[4].find("numadirContextCSN") == nullptr);
  }
}

TEST_CASE("monitor.schema: the provider's entries use defined types their classes allow") {
  Result<schema::Schema> loaded = schema::Schema::load_default();
  REQUIRE_MESSAGE(loaded.ok(), loaded.status().to_string());
  MonitorData data;
  data.provider = fake_provider();
  const std::vector<schema::Entry> entries = make_monitor_entries(data);
  REQUIRE(entries.size() == 7);
  for (std::size_t i = 4; i < entries.size(); ++i) {
    const schema::Entry& entry = entries[i];
    CAPTURE(entry.dn);
    const std::string& leaf = entry.find("objectClass")->values.back();
    const schema::ObjectClass* object_class = loaded->object_class(leaf);
    REQUIRE_MESSAGE(object_class != nullptr, leaf);
    for (const schema::EntryAttribute& attribute : entry.attributes) {
      CAPTURE(attribute.description);
      const schema::AttributeType* type = loaded->attribute_type(attribute.description);
      REQUIRE(type != nullptr);
      CHECK(object_class->allows(type));
    }
  }
}

TEST_CASE("make_monitor_entries: cn=Operations has each kind's latency histogram with metrics on") {
  MonitorData data;
  const std::vector<schema::Entry> off = make_monitor_entries(data);
  const schema::Entry* operations = find_entry(off, "cn=Operations,cn=Monitor");
  REQUIRE(operations != nullptr);
  CHECK(operations->find("numadirLatencyHistogram") == nullptr);
  OperationMetricsTotals latency;
  OperationHistogram& search = latency.latency[static_cast<std::size_t>(OperationKind::kSearch)];
  search.buckets[2] = 4;
  search.buckets[16] = 1;
  search.sum_ns = 1'200'000'000;
  data.latency = latency;
  const std::vector<schema::Entry> on = make_monitor_entries(data);
  operations = find_entry(on, "cn=Operations,cn=Monitor");
  REQUIRE(operations != nullptr);
  const schema::EntryAttribute* histograms = operations->find("numadirLatencyHistogram");
  REQUIRE(histograms != nullptr);
  REQUIRE(histograms->values.size() == kOperationKinds);
  CHECK(histograms->values[0] ==
        "op=bind count=0 sumNs=0 buckets=0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0");
  CHECK(histograms->values[1] ==
        "op=search count=5 sumNs=1200000000 buckets=0,0,4,0,0,0,0,0,0,0,0,0,0,0,0,0,1");
  CHECK(histograms->values[6].starts_with("op=modrdn "));
  // The schema defines it and cn=Operations' class allows it.
  Result<schema::Schema> loaded = schema::Schema::load_default();
  REQUIRE_MESSAGE(loaded.ok(), loaded.status().to_string());
  const schema::AttributeType* type = loaded->attribute_type("numadirLatencyHistogram");
  REQUIRE(type != nullptr);
  const schema::ObjectClass* object_class = loaded->object_class("numadirMonitor");
  REQUIRE(object_class != nullptr);
  CHECK(object_class->allows(type));
}

TEST_CASE("Monitor: collect sums the operation metrics once they are set") {
  Monitor monitor("numadir test");
  CHECK_FALSE(monitor.collect({}).latency.has_value());
  OperationMetrics metrics;
  OperationMetrics::record_owned(metrics.add_slot(), OperationKind::kBind,
                                 listener::wire::ResultCode::kSuccess, 1'000);
  monitor.set_operation_metrics(&metrics);
  const MonitorData data = monitor.collect({});
  REQUIRE(data.latency.has_value());
  CHECK(data.latency->latency[static_cast<std::size_t>(OperationKind::kBind)].count() == 1);
  monitor.set_operation_metrics(nullptr);
}

TEST_CASE("thread_cpu_ms: this thread's CPU time is readable and a bad tid is not") {
  CHECK(thread_cpu_ms(threadpool::os_thread_id()).has_value());
  CHECK_FALSE(thread_cpu_ms(0).has_value());
  CHECK_FALSE(thread_cpu_ms(-1).has_value());
}

TEST_CASE("OperationCounters: each thread counts in its own slot and the totals add up") {
  OperationCounters counters;
  constexpr int kThreads = 4;
  constexpr int kEach = 1000;
  std::latch start(kThreads);
  std::vector<std::thread> threads;
  std::vector<OperationCounters::Slot*> slots(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      OperationCounters::Slot& slot = counters.add_slot();  // As a worker state takes one.
      slots[t] = &slot;
      start.arrive_and_wait();
      for (int i = 0; i < kEach; ++i) {
        OperationCounters::count(slot, ProtocolOp::kBindRequest);
        OperationCounters::count(slot, ProtocolOp::kSearchRequest);
        OperationCounters::count(slot, ProtocolOp::kBindResponse);  // Not an operation.
        OperationCounters::count_auth(slot);
        if (i % 100 == 0) {
          (void)counters.totals();  // Readers (cn=Monitor) sum while workers count.
        }
      }
    });
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
  for (int t = 0; t < kThreads; ++t) {
    CAPTURE(t);
    CHECK(slots[t]->auths.load() == kEach);  // Each thread wrote its own slot only.
    for (int u = 0; u < t; ++u) {
      CHECK(slots[t] != slots[u]);
    }
  }
  const OperationTotals totals = counters.totals();
  CHECK(totals.of(OperationKind::kBind) == kThreads * kEach);
  CHECK(totals.of(OperationKind::kSearch) == kThreads * kEach);
  CHECK(totals.auths == kThreads * kEach);
  CHECK(totals.total() == 2 * kThreads * kEach);
}

// A handler with a monitor whose frontend is fake_frontend().
class MonitorFixture {
 public:
  MonitorFixture() : monitor_("numadir test"), fixture_(options(monitor_)) {
    monitor_.attach([] { return fake_frontend(); });
    root_ = fixture_.open_session();
    REQUIRE(code_of(*fixture_.run_one(bind_request(1, kRootDn, kRootPassword), *root_)) ==
            ResultCode::kSuccess);
  }
  ~MonitorFixture() { monitor_.detach(); }

  HandlerFixture& handler() { return fixture_; }
  Monitor& monitor() { return monitor_; }
  listener::Session& root() { return *root_; }
  std::vector<std::unique_ptr<Response>> search(std::string_view base, SearchScope scope,
                                                std::string_view filter,
                                                std::vector<std::string_view> attributes = {}) {
    return fixture_.run(search_request(2, base, scope, filter, std::move(attributes)), *root_);
  }

 private:
  static HandlerOptions options(const Monitor& monitor) {
    HandlerOptions options = default_handler_options();
    options.monitor = &monitor;
    return options;
  }

  Monitor monitor_;
  HandlerFixture fixture_;
  std::unique_ptr<listener::Session> root_;
};

TEST_CASE("Monitor search: the rootdn reads cn=Monitor and anyone else gets noSuchObject") {
  MonitorFixture fixture;
  auto responses = fixture.search("cn=Monitor", SearchScope::kWholeSubtree, "(objectClass=*)");
  CHECK(done_of(responses).result.code == ResultCode::kSuccess);
  CHECK(entries_of(responses).size() == 13);

  SUBCASE("anonymous") {
    auto anonymous = fixture.handler().open_session();
    for (std::string_view base : {"cn=Monitor", "cn=Workers,cn=Monitor", "CN=monitor"}) {
      auto refused = fixture.handler().run(
          search_request(3, base, SearchScope::kWholeSubtree, "(objectClass=*)"), *anonymous);
      CHECK(entries_of(refused).empty());
      CHECK(done_of(refused).result.code == ResultCode::kNoSuchObject);
      CHECK(done_of(refused).result.matched_dn.empty());
    }
  }
  SUBCASE("a user") {
    auto user = fixture.handler().open_session();
    REQUIRE(code_of(*fixture.handler().run_one(bind_request(4, user_dn(1), user_password(1)),
                                               *user)) == ResultCode::kSuccess);
    auto refused = fixture.handler().run(
        search_request(5, "cn=Monitor", SearchScope::kBaseObject, "(objectClass=*)"), *user);
    CHECK(entries_of(refused).empty());
    CHECK(done_of(refused).result.code == ResultCode::kNoSuchObject);
  }
  SUBCASE("a name below cn=Monitor that is not there") {
    auto missing = fixture.search("cn=Nothing,cn=Workers,cn=Monitor", SearchScope::kBaseObject,
                                  "(objectClass=*)");
    CHECK(entries_of(missing).empty());
    CHECK(done_of(missing).result.code == ResultCode::kNoSuchObject);
    CHECK(done_of(missing).result.matched_dn == "cn=Workers,cn=Monitor");
  }
}

TEST_CASE("Monitor search: scopes and filters and attribute lists") {
  MonitorFixture fixture;
  SUBCASE("base") {
    auto responses =
        fixture.search("cn=pool 0,cn=pools,cn=monitor", SearchScope::kBaseObject, "(cn=*)");
    CHECK(dns_of(responses) == std::vector<std::string>{"cn=Pool 0,cn=Pools,cn=Monitor"});
  }
  SUBCASE("one level") {
    auto responses =
        fixture.search("cn=Monitor", SearchScope::kSingleLevel, "(objectClass=numadirMonitor)");
    CHECK(dns_of(responses) ==
          std::vector<std::string>{"cn=Connections,cn=Monitor", "cn=Operations,cn=Monitor",
                                   "cn=Writer,cn=Monitor", "cn=Listeners,cn=Monitor",
                                   "cn=Workers,cn=Monitor", "cn=Pools,cn=Monitor"});
  }
  SUBCASE("subordinates") {
    auto responses = fixture.search("cn=Workers,cn=Monitor", SearchScope::kSubordinateSubtree,
                                    "(objectClass=*)");
    CHECK(entries_of(responses).size() == 3);
  }
  SUBCASE("an ordering filter on a counter") {
    auto responses = fixture.search("cn=Monitor", SearchScope::kWholeSubtree,
                                    "(&(objectClass=numadirWorkerObject)(numadirRequests>=20))",
                                    {"numadirRequests"});
    CHECK(dns_of(responses) == std::vector<std::string>{"cn=Worker 1,cn=Workers,cn=Monitor",
                                                        "cn=Worker 2,cn=Workers,cn=Monitor"});
    for (const auto* entry : entries_of(responses)) {
      CHECK(types_of(*entry) == std::vector<std::string>{"numadirRequests"});
    }
  }
  SUBCASE("a substring filter on a thread name") {
    auto responses =
        fixture.search("cn=Monitor", SearchScope::kWholeSubtree, "(numadirThreadName=listener-*)");
    CHECK(entries_of(responses).size() == 2);
  }
  SUBCASE("equality on an integer and a filter nothing matches") {
    CHECK(entries_of(
              fixture.search("cn=Monitor", SearchScope::kWholeSubtree, "(numadirThreadId=201)"))
              .size() == 1);
    CHECK(entries_of(fixture.search("cn=Monitor", SearchScope::kWholeSubtree, "(uid=user1)"))
              .empty());
  }
  SUBCASE("1.1 returns names only") {
    auto responses =
        fixture.search("cn=Monitor", SearchScope::kBaseObject, "(objectClass=*)", {"1.1"});
    REQUIRE(entries_of(responses).size() == 1);
    CHECK(types_of(*entries_of(responses)[0]).empty());
  }
  SUBCASE("a size limit") {
    LdapMessage request =
        search_request(6, "cn=Monitor", SearchScope::kWholeSubtree, "(objectClass=*)");
    request.search_request.size_limit = 2;
    auto responses = fixture.handler().run(request, fixture.root());
    CHECK(entries_of(responses).size() == 2);
    CHECK(done_of(responses).result.code == ResultCode::kSizeLimitExceeded);
  }
}

TEST_CASE("Monitor search: binds and operations are counted") {
  MonitorFixture fixture;  // Its rootdn bind is the first auth.
  auto session = fixture.handler().open_session();
  for (int i = 1; i <= 3; ++i) {
    CHECK(code_of(*fixture.handler().run_one(bind_request(10 + i, user_dn(i), user_password(i)),
                                             *session)) == ResultCode::kSuccess);
  }
  CHECK(code_of(*fixture.handler().run_one(bind_request(20, user_dn(1), "wrong"), *session)) ==
        ResultCode::kInvalidCredentials);
  CHECK(code_of(*fixture.handler().run_one(bind_request(21, "", ""), *session)) ==
        ResultCode::kSuccess);  // Anonymous: a bind, not an auth.
  auto responses =
      fixture.search("cn=Operations,cn=Monitor", SearchScope::kBaseObject, "(objectClass=*)");
  REQUIRE(entries_of(responses).size() == 1);
  const auto& operations = *entries_of(responses)[0];
  CHECK(values_of(operations, "numadirBinds") == std::vector<std::string>{"6"});
  CHECK(values_of(operations, "numadirAuths") == std::vector<std::string>{"4"});
  CHECK(values_of(operations, "numadirSearches") == std::vector<std::string>{"1"});
  const OperationTotals totals = fixture.handler().handler().operation_totals();
  CHECK(totals.of(OperationKind::kSearch) == 1);
  CHECK(totals.auths == 4);
}

TEST_CASE("Monitor search: cn=Writer counts the writer's updates and commits") {
  MonitorFixture fixture;
  const backend::WriterStats before = fixture.handler().directory().writer_stats();
  CHECK(code_of(*fixture.handler().run_one(delete_request(30, user_dn(5)), fixture.root())) ==
        ResultCode::kSuccess);
  CHECK(code_of(*fixture.handler().run_one(delete_request(31, user_dn(5)), fixture.root())) ==
        ResultCode::kNoSuchObject);
  auto responses =
      fixture.search("cn=Writer,cn=Monitor", SearchScope::kBaseObject, "(objectClass=*)");
  REQUIRE(entries_of(responses).size() == 1);
  const auto& writer = *entries_of(responses)[0];
  CHECK(values_of(writer, "numadirWriterJobs") ==
        std::vector<std::string>{std::to_string(before.jobs + 2)});
  CHECK(values_of(writer, "numadirWriterFailed") ==
        std::vector<std::string>{std::to_string(before.failed + 1)});
  CHECK(values_of(writer, "numadirCommits") ==
        std::vector<std::string>{std::to_string(before.commits + 1)});
}

TEST_CASE("Monitor search: the attached provider's sync searches by filter until detached") {
  MonitorFixture fixture;
  CHECK(entries_of(fixture.search("cn=Replication,cn=Monitor", SearchScope::kBaseObject,
                                  "(objectClass=*)"))
            .empty());
  fixture.monitor().attach_provider([] { return fake_provider(); });
  auto all = fixture.search("cn=Provider,cn=Replication,cn=Monitor", SearchScope::kWholeSubtree,
                            "(objectClass=*)");
  CHECK(dns_of(all) ==
        std::vector<std::string>{"cn=Provider,cn=Replication,cn=Monitor",
                                 "cn=Consumer 41-3,cn=Provider,cn=Replication,cn=Monitor",
                                 "cn=Consumer 42-1,cn=Provider,cn=Replication,cn=Monitor"});
  SUBCASE("the schema's matching rules: ordering on lag, equality on mode, DN and time") {
    CHECK(dns_of(fixture.search("cn=Monitor", SearchScope::kWholeSubtree,
                                "(&(objectClass=numadirSyncConsumerObject)(numadirLagMs>=100))")) ==
          std::vector<std::string>{"cn=Consumer 41-3,cn=Provider,cn=Replication,cn=Monitor"});
    CHECK(dns_of(fixture.search("cn=Monitor", SearchScope::kWholeSubtree,
                                "(numadirSyncMode=REFRESHONLY)")) ==
          std::vector<std::string>{"cn=Consumer 42-1,cn=Provider,cn=Replication,cn=Monitor"});
    CHECK(dns_of(fixture.search("cn=Monitor", SearchScope::kWholeSubtree,
                                "(numadirIdentity=CN=Replicator, DC=example, DC=com)")) ==
          std::vector<std::string>{"cn=Consumer 41-3,cn=Provider,cn=Replication,cn=Monitor"});
    CHECK(dns_of(fixture.search("cn=Monitor", SearchScope::kWholeSubtree,
                                "(numadirSince>=20261203120030Z)")) ==
          std::vector<std::string>{"cn=Consumer 42-1,cn=Provider,cn=Replication,cn=Monitor"});
    CHECK(dns_of(fixture.search("cn=Monitor", SearchScope::kWholeSubtree,
                                "(numadirProviderEnabled=TRUE)")) ==
          std::vector<std::string>{"cn=Provider,cn=Replication,cn=Monitor"});
  }
  SUBCASE("detached") {
    fixture.monitor().detach_provider();
    CHECK(entries_of(fixture.search("cn=Replication,cn=Monitor", SearchScope::kWholeSubtree,
                                    "(objectClass=*)"))
              .empty());
    CHECK_FALSE(fixture.monitor().collect(OperationTotals{}).provider.has_value());
  }
}

TEST_CASE("Monitor search: writes below cn=Monitor are unwillingToPerform") {
  MonitorFixture fixture;
  LdapMessage modify;
  modify.message_id = 7;
  modify.op = ProtocolOp::kModifyRequest;
  modify.modify_request.object = "cn=Monitor";
  modify.modify_request.operations.push_back(listener::wire::ModifyOperation::kReplace);
  modify.modify_request.modifications.add("description");
  modify.modify_request.modifications.add_value("x");
  CHECK(code_of(*fixture.handler().run_one(modify, fixture.root())) ==
        ResultCode::kUnwillingToPerform);
  CHECK(code_of(*fixture.handler().run_one(delete_request(8, "cn=Worker 0,cn=Workers,cn=Monitor"),
                                           fixture.root())) == ResultCode::kUnwillingToPerform);
  LdapMessage add;
  add.message_id = 9;
  add.op = ProtocolOp::kAddRequest;
  add.add_request.entry = "cn=Extra,cn=Monitor";
  add.add_request.attributes.add("objectClass");
  add.add_request.attributes.add_value("numadirMonitor");
  CHECK(code_of(*fixture.handler().run_one(add, fixture.root())) ==
        ResultCode::kUnwillingToPerform);
}

TEST_CASE("Root DSE: monitorContext names cn=Monitor when the server has a monitor") {
  MonitorFixture fixture;
  auto responses = fixture.search("", SearchScope::kBaseObject, "(objectClass=*)", {"+"});
  REQUIRE(entries_of(responses).size() == 1);
  CHECK(values_of(*entries_of(responses)[0], "monitorContext") ==
        std::vector<std::string>{"cn=Monitor"});

  HandlerFixture plain;  // No monitor: no monitorContext and no cn=Monitor.
  auto session = plain.open_session();
  auto dse = plain.run(search_request(1, "", SearchScope::kBaseObject, "(objectClass=*)", {"+"}),
                       *session);
  REQUIRE(entries_of(dse).size() == 1);
  CHECK_FALSE(has_type(*entries_of(dse)[0], "monitorContext"));
}

}  // namespace
}  // namespace numadir::server::testing

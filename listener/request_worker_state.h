// listener/request_worker_state.h: RequestWorkerState, the part of a task-running thread's state
// (threadpool/task.h) that Requests (listener/request.h) use: the thread's caches of the
// requests' recyclers (base/recycler.h), which take and give a request's storage and buffers
// without a lock. Every state that runs Requests derives from it: the handler makes them
// (RequestHandler::make_worker_state), for the pool's workers and for each listener, which
// makes its Requests from its own state's caches and retires the ones it runs inline there.
//
// Thread contract: as any WorkerState: made, used and destroyed by the one thread that runs
// tasks with it (Owner: that thread). Its caches' objects are destroyed with it.
#pragma once

#include "base/recycler.h"
#include "threadpool/task.h"

namespace numadir::listener {

struct RequestBuffers;  // listener/request.h
struct RequestStorage;  // listener/request.cc: the memory of one Request.

// One thread's caches of the two request recyclers. Owner: the thread whose state holds them.
struct RequestCaches {
  // Defined in listener/request.cc, where what the caches keep is a complete type.
  RequestCaches();
  ~RequestCaches();
  RequestCaches(const RequestCaches&) = delete;
  RequestCaches& operator=(const RequestCaches&) = delete;

  Recycler<RequestBuffers>::Cache buffers;
  Recycler<RequestStorage>::Cache storage;
};

class RequestWorkerState : public threadpool::WorkerState {
 public:
  // Owner: the thread owning the state.
  RequestCaches& request_caches() { return request_caches_; }

 private:
  RequestCaches request_caches_;
};

}  // namespace numadir::listener

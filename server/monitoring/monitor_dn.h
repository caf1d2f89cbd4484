// server/monitoring/monitor_dn.h: where cn=Monitor is, for what routes searches there (the
// operation context) without needing what it shows (monitor.h).
#pragma once

#include <string_view>

namespace numadir::server {

inline constexpr std::string_view kMonitorDn = "cn=Monitor";

}  // namespace numadir::server

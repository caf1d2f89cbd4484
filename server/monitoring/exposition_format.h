// server/monitoring/exposition_format.h: the two text formats the metrics endpoint serves: the
// Prometheus text exposition format (0.0.4) and OpenMetrics 1.0, chosen by the scraper's Accept
// header.
//
// Thread contract: plain values and pure functions.
#pragma once

#include <cstdint>
#include <string_view>

namespace numadir::server {

enum class ExpositionFormat : std::uint8_t {
  kPrometheusText,  // text/plain; version=0.0.4
  kOpenMetrics,     // application/openmetrics-text; version=1.0.0
};

// Returns: the Content-Type header value for `format` (a static string).
inline std::string_view content_type(ExpositionFormat format) {
  return format == ExpositionFormat::kOpenMetrics
             ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
             : "text/plain; version=0.0.4; charset=utf-8";
}

}  // namespace numadir::server

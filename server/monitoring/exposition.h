// server/monitoring/exposition.h: ExpositionWriter, a small writer of metric families in the
// Prometheus text format (0.0.4) or OpenMetrics 1.0: each family's HELP and TYPE lines, then its
// samples with escaped label values; histograms as cumulative _bucket samples with their le,
// _sum and _count. Counters are named by their family without "_total" in OpenMetrics's TYPE
// and HELP lines (the Prometheus format names them with it); samples carry "_total" in both.
// OpenMetrics text ends with "# EOF" (finish()).
//
// The caller writes each family once, its samples right after it (both formats require it).
//
// Thread contract: owned by the one thread rendering; writes into the string it was given.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

#include "server/monitoring/exposition_format.h"

namespace numadir::server {

struct MetricLabel {
  std::string_view name;
  std::string_view value;  // Any bytes: escaped (\\, \", \n) as written.
};
using MetricLabels = std::initializer_list<MetricLabel>;

enum class MetricType : std::uint8_t { kCounter, kGauge, kHistogram, kInfo };

class ExpositionWriter {
 public:
  // Clears `out` and writes into it. Requires: `out` outlives the writer.
  ExpositionWriter(ExpositionFormat format, std::string& out);

  // Starts a family: `name` is the metric's name as its samples have it, counters with
  // "_total" (e.g. "numadir_operations_total"), an info metric with "_info" (an info family in
  // OpenMetrics, a gauge in the Prometheus format). `help` is one line of plain text.
  void family(std::string_view name, MetricType type, std::string_view help);
  // A sample of the current counter or gauge family (an info one: value 1).
  void sample(MetricLabels labels, std::uint64_t value);
  void sample(MetricLabels labels, double value);
  // The same, with the labels of a std::span (labels built at run time).
  void sample(std::span<const MetricLabel> labels, std::uint64_t value);
  void sample(std::span<const MetricLabel> labels, double value);
  // A histogram of the current histogram family: `counts[i]` observations in bucket i (not
  //   cumulative; the last is +Inf), upper bounds `le[i]`; `sum` in the family's unit.
  // Requires: counts.size() == le.size(), the last le being "+Inf".
  void histogram(std::span<const MetricLabel> labels, std::span<const std::string_view> le,
                 std::span<const std::uint64_t> counts, double sum);
  // Ends the text ("# EOF" in OpenMetrics). Requires: called once, last.
  void finish();

  // Returns: `value` as the formats write it: shortest round-trip form, "+Inf", "-Inf", "NaN".
  static std::string format_double(double value);

 private:
  void name_and_labels(std::string_view suffix, std::span<const MetricLabel> labels,
                       const MetricLabel* extra);
  void value(std::uint64_t value);
  void value(double value);

  const ExpositionFormat format_;
  std::string& out_;
  std::string name_;  // The current family's sample name base (counters without "_total").
  MetricType type_ = MetricType::kGauge;
};

}  // namespace numadir::server

// ExpositionWriter (server/monitoring/exposition.h): families, escaping, histograms and the
// differences between the Prometheus text format and OpenMetrics.
#include <doctest/doctest.h>

#include <array>
#include <string>
#include <string_view>

#include "server/monitoring/exposition.h"

namespace numadir::server {
namespace {

TEST_CASE("ExpositionWriter: a counter is named with _total in the text format only") {
  std::string out = "left over";
  SUBCASE("Prometheus text") {
    ExpositionWriter writer(ExpositionFormat::kPrometheusText, out);
    writer.family("numadir_auths_total", MetricType::kCounter, "Binds.");
    writer.sample(MetricLabels{}, std::uint64_t{42});
    writer.finish();
    CHECK(out ==
          "# HELP numadir_auths_total Binds.\n"
          "# TYPE numadir_auths_total counter\n"
          "numadir_auths_total 42\n");
  }
  SUBCASE("OpenMetrics") {
    ExpositionWriter writer(ExpositionFormat::kOpenMetrics, out);
    writer.family("numadir_auths_total", MetricType::kCounter, "Binds.");
    writer.sample(MetricLabels{}, std::uint64_t{42});
    writer.finish();
    CHECK(out ==
          "# HELP numadir_auths Binds.\n"
          "# TYPE numadir_auths counter\n"
          "numadir_auths_total 42\n"
          "# EOF\n");
  }
}

TEST_CASE("ExpositionWriter: label values are escaped") {
  std::string out;
  ExpositionWriter writer(ExpositionFormat::kPrometheusText, out);
  writer.family("numadir_x", MetricType::kGauge, "A \\ help\nline.");
  writer.sample({{"peer", "a\"b\\c\nd"}, {"rid", ""}}, 1.5);
  CHECK(out ==
        "# HELP numadir_x A \\\\ help\\nline.\n"
        "# TYPE numadir_x gauge\n"
        "numadir_x{peer=\"a\\\"b\\\\c\\nd\",rid=\"\"} 1.5\n");
}

TEST_CASE("ExpositionWriter: a histogram has cumulative buckets then a sum and a count") {
  std::string out;
  ExpositionWriter writer(ExpositionFormat::kOpenMetrics, out);
  writer.family("numadir_d_seconds", MetricType::kHistogram, "D.");
  const std::array<std::string_view, 3> le = {"0.1", "1", "+Inf"};
  const std::array<std::uint64_t, 3> counts = {2, 0, 3};
  const std::array<MetricLabel, 1> labels = {{{"op", "bind"}}};
  writer.histogram(labels, le, counts, 7.25);
  writer.finish();
  CHECK(out ==
        "# HELP numadir_d_seconds D.\n"
        "# TYPE numadir_d_seconds histogram\n"
        "numadir_d_seconds_bucket{op=\"bind\",le=\"0.1\"} 2\n"
        "numadir_d_seconds_bucket{op=\"bind\",le=\"1\"} 2\n"
        "numadir_d_seconds_bucket{op=\"bind\",le=\"+Inf\"} 5\n"
        "numadir_d_seconds_sum{op=\"bind\"} 7.25\n"
        "numadir_d_seconds_count{op=\"bind\"} 5\n"
        "# EOF\n");
}

TEST_CASE("ExpositionWriter: an info metric is a gauge in the text format") {
  std::string text;
  std::string open_metrics;
  for (auto [format, out] : {std::pair{ExpositionFormat::kPrometheusText, &text},
                             std::pair{ExpositionFormat::kOpenMetrics, &open_metrics}}) {
    ExpositionWriter writer(format, *out);
    writer.family("numadir_build_info", MetricType::kInfo, "Build.");
    writer.sample({{"version", "0.1.0"}}, std::uint64_t{1});
    writer.finish();
  }
  CHECK(text.find("# TYPE numadir_build_info gauge\n") != std::string::npos);
  CHECK(open_metrics.find("# TYPE numadir_build info\n") != std::string::npos);
  CHECK(open_metrics.find("numadir_build_info{version=\"0.1.0\"} 1\n") != std::string::npos);
}

TEST_CASE("ExpositionWriter: doubles in their shortest form") {
  CHECK(ExpositionWriter::format_double(1e-05) == "1e-05");
  CHECK(ExpositionWriter::format_double(0.25) == "0.25");
  CHECK(ExpositionWriter::format_double(3.0) == "3");
  CHECK(ExpositionWriter::format_double(1.0 / 0.0) == "+Inf");
  CHECK(ExpositionWriter::format_double(-1.0 / 0.0) == "-Inf");
  CHECK(ExpositionWriter::format_double(0.0 / 0.0) == "NaN");
}

}  // namespace
}  // namespace numadir::server

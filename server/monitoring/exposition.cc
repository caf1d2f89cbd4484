// server/monitoring/exposition.cc: see exposition.h.
#include "server/monitoring/exposition.h"

#include <charconv>
#include <cmath>
#include <vector>

#include "base/check.h"

namespace numadir::server {
namespace {

constexpr std::string_view kTotal = "_total";
constexpr std::string_view kInfo = "_info";

void append_exposition_escaped(std::string& out, std::string_view text, bool quote) {
  for (const char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && quote) {
      out += "\\\"";
    } else {
      out += c;
    }
  }
}

const char* type_name(MetricType type, ExpositionFormat format) {
  switch (type) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kHistogram:
      return "histogram";
    case MetricType::kInfo:
      return format == ExpositionFormat::kOpenMetrics ? "info" : "gauge";
    case MetricType::kGauge:
      break;
  }
  return "gauge";
}

}  // namespace

ExpositionWriter::ExpositionWriter(ExpositionFormat format, std::string& out)
    : format_(format), out_(out) {
  out_.clear();
}

void ExpositionWriter::family(std::string_view name, MetricType type, std::string_view help) {
  type_ = type;
  std::string_view family_name = name;
  name_.assign(name);
  if (type == MetricType::kCounter) {
    NUMADIR_DCHECK(name.ends_with(kTotal), "a counter's name ends in _total");
    name_.resize(name_.size() - kTotal.size());
  }
  const bool open_metrics = format_ == ExpositionFormat::kOpenMetrics;
  if (open_metrics && type == MetricType::kCounter) {
    family_name = name_;
  } else if (open_metrics && type == MetricType::kInfo) {
    NUMADIR_DCHECK(name.ends_with(kInfo), "an info metric's name ends in _info");
    family_name = name.substr(0, name.size() - kInfo.size());
  }
  out_ += "# HELP ";
  out_ += family_name;
  out_ += ' ';
  append_exposition_escaped(out_, help, open_metrics);
  out_ += "\n# TYPE ";
  out_ += family_name;
  out_ += ' ';
  out_ += type_name(type, format_);
  out_ += '\n';
}

void ExpositionWriter::name_and_labels(std::string_view suffix, std::span<const MetricLabel> labels,
                                       const MetricLabel* extra) {
  out_ += name_;
  out_ += suffix;
  if (!labels.empty() || extra != nullptr) {
    out_ += '{';
    bool first = true;
    auto add = [&](const MetricLabel& label) {
      if (!first) {
        out_ += ',';
      }
      first = false;
      out_ += label.name;
      out_ += "=\"";
      append_exposition_escaped(out_, label.value, true);
      out_ += '"';
    };
    for (const MetricLabel& label : labels) {
      add(label);
    }
    if (extra != nullptr) {
      add(*extra);
    }
    out_ += '}';
  }
  out_ += ' ';
}

void ExpositionWriter::value(std::uint64_t value) {
  char buffer[24];
  const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
  out_.append(buffer, end);
  out_ += '\n';
}

void ExpositionWriter::value(double value) {
  out_ += format_double(value);
  out_ += '\n';
}

std::string ExpositionWriter::format_double(double value) {
  if (std::isnan(value)) {
    return "NaN";
  }
  if (std::isinf(value)) {
    return value > 0 ? "+Inf" : "-Inf";
  }
  char buffer[32];
  const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, end);
}

void ExpositionWriter::sample(MetricLabels labels, std::uint64_t value) {
  sample(std::span<const MetricLabel>(labels.begin(), labels.size()), value);
}

void ExpositionWriter::sample(MetricLabels labels, double value) {
  sample(std::span<const MetricLabel>(labels.begin(), labels.size()), value);
}

void ExpositionWriter::sample(std::span<const MetricLabel> labels, std::uint64_t number) {
  name_and_labels(type_ == MetricType::kCounter ? kTotal : std::string_view(), labels, nullptr);
  value(number);
}

void ExpositionWriter::sample(std::span<const MetricLabel> labels, double number) {
  name_and_labels(type_ == MetricType::kCounter ? kTotal : std::string_view(), labels, nullptr);
  value(number);
}

void ExpositionWriter::histogram(std::span<const MetricLabel> labels,
                                 std::span<const std::string_view> le,
                                 std::span<const std::uint64_t> counts, double sum) {
  NUMADIR_DCHECK(le.size() == counts.size() && !le.empty() && le.back() == "+Inf",
                 "ExpositionWriter::histogram: a bound per count, the last +Inf");
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    cumulative += counts[i];
    const MetricLabel bound{"le", le[i]};
    name_and_labels("_bucket", labels, &bound);
    value(cumulative);
  }
  name_and_labels("_sum", labels, nullptr);
  value(sum);
  name_and_labels("_count", labels, nullptr);
  value(cumulative);
}

void ExpositionWriter::finish() {
  if (format_ == ExpositionFormat::kOpenMetrics) {
    out_ += "# EOF\n";
  }
}

}  // namespace numadir::server

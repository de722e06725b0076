// A reporter that forwards to another one (console, JSON, CSV) after dropping
// the "/iterations:1" and "/manual_time" parts Google Benchmark appends to the
// names of benchmarks registered with Iterations(1)->UseManualTime(), so that
// the console and the JSON say "V4FusedEpilogue/1024", as the benchmarks are
// registered. Anything else in a name (repetitions, aggregate suffixes) stays.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

namespace glukit_bench {

class ShortNameReporter : public benchmark::BenchmarkReporter {
 public:
  /// `inner` is not owned (Google Benchmark's default display reporter is a static).
  explicit ShortNameReporter(benchmark::BenchmarkReporter* inner) : inner_(inner) {}
  /// Owns `inner`.
  explicit ShortNameReporter(std::unique_ptr<benchmark::BenchmarkReporter> inner)
      : owned_(std::move(inner)), inner_(owned_.get()) {}

  bool ReportContext(const Context& context) override {
    // The runner sets the streams of this reporter; hand them on.
    inner_->SetOutputStream(&GetOutputStream());
    inner_->SetErrorStream(&GetErrorStream());
    return inner_->ReportContext(context);
  }
  void ReportRuns(const std::vector<Run>& runs) override {
    std::vector<Run> renamed(runs);
    for (Run& run : renamed) {
      run.run_name.iterations.clear();
      run.run_name.time_type.clear();
    }
    inner_->ReportRuns(renamed);
  }
  void Finalize() override { inner_->Finalize(); }

 private:
  std::unique_ptr<benchmark::BenchmarkReporter> owned_;
  benchmark::BenchmarkReporter* inner_;
};

/// The reporter for --benchmark_out in the format of --benchmark_out_format
/// (json or console; json unless given), read from argv before Google Benchmark consumes it.
/// Null where no --benchmark_out is given (then no file reporter may be passed).
inline std::unique_ptr<benchmark::BenchmarkReporter> make_file_reporter(int argc, char** argv) {
  bool has_out = false;
  std::string format = "json";
  for (int i = 1; i < argc; ++i) {
    const char* arg = argv[i];
    if (std::strncmp(arg, "--benchmark_out=", 16) == 0) has_out = arg[16] != '\0';
    if (std::strncmp(arg, "--benchmark_out_format=", 23) == 0) format = arg + 23;
  }
  if (!has_out) return nullptr;
  std::unique_ptr<benchmark::BenchmarkReporter> inner;
  if (format == "console") {
    inner = std::make_unique<benchmark::ConsoleReporter>(benchmark::ConsoleReporter::OO_None);
  } else if (format == "json") {
    inner = std::make_unique<benchmark::JSONReporter>();
  } else {
    // csv is deprecated in Google Benchmark 1.7; anything else it rejects itself.
    std::fprintf(stderr, "glukit_bench: --benchmark_out_format=%s: use json or console\n",
                 format.c_str());
    std::exit(1);
  }
  return std::make_unique<ShortNameReporter>(std::move(inner));
}

}  // namespace glukit_bench

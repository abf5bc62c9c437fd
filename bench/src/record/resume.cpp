#include "record/resume.hpp"

#include <filesystem>
#include <fstream>
#include <iostream>

#include "core/atomic_write.hpp"
#include "core/exit_codes.hpp"
#include "plan/cli.hpp"
#include "record/journal.hpp"
#include "record/record.hpp"

namespace convbench::bench {

namespace {

// A record the run wrote itself (complete, interrupted, faulted) beside a journal it did not get
// to remove holds more than the journal can give back (its end check, its counters): a recovered
// record never replaces it.
void refuse_to_replace_the_runs_own_record(const std::string &out, const nlohmann::json &recovered,
                                           const std::string &journal) {
  std::ifstream in(out);
  if (!in)
    return;
  nlohmann::json existing = nlohmann::json::parse(in, nullptr, false);
  if (!existing.is_object() || existing.value("run_id", "") != recovered.value("run_id", "") ||
      existing.value("status", "") == "recovered")
    return;
  throw UsageError("--resume: " + out + " already holds the " + existing.value("status", "") +
                   " record of run " + existing.value("run_id", "") + ", which the journal " +
                   journal +
                   " cannot improve on: nothing written (remove the journal, or give "
                   "--out to recover it beside)");
}

} // namespace

int resume_run(const Options &opt) {
  const std::string suffix = ".journal";
  std::string out = opt.out;
  if (out.empty()) {
    if (opt.resume.size() <= suffix.size() ||
        opt.resume.compare(opt.resume.size() - suffix.size(), suffix.size(), suffix) != 0)
      throw UsageError("--resume: " + opt.resume +
                       " does not end in .journal, so its result path is unknown: give --out");
    out = opt.resume.substr(0, opt.resume.size() - suffix.size());
  }
  try {
    check_writable(out);
  } catch (const WriteError &e) {
    throw UsageError(std::string("--out: ") + e.what());
  }
  nlohmann::json record;
  try {
    record = recover_record(opt.resume, kExitOk);
  } catch (const JournalError &e) {
    throw UsageError(std::string("--resume: ") + e.what());
  } catch (const nlohmann::json::exception &e) {
    throw UsageError("--resume: journal " + opt.resume +
                     " is not a bench_conv journal: " + e.what());
  }
  refuse_to_replace_the_runs_own_record(out, record, opt.resume);
  write_record(out, record);
  std::filesystem::remove(opt.resume);
  std::cout << "result: " << out << "\n";
  std::cerr << "bench_conv: recovered " << record["recovered"]["rounds"].get<size_t>()
            << " rounds of run " << record["run_id"].get<std::string>() << " from " << opt.resume
            << " (status recovered)\n";
  return kExitOk;
}

} // namespace convbench::bench

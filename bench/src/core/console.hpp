// What bench_conv says on stderr, and how loudly. --quiet: errors, the table and the result path
// only; the default: what a person follows (gate, lease, one progress line on a terminal, a few
// plain lines in a log); --verbose: every round's lines as well. Writes never end the run: SIGPIPE
// is ignored (ignore_sigpipe) and a stderr that cannot be written any more (a closed pipe, a full
// disk) is silence from then on, never an error.
#pragma once

#include <string>

namespace convbench::bench {

enum class Verbosity { quiet, normal, verbose };

void set_verbosity(Verbosity v);
Verbosity verbosity();

// A write to a closed pipe returns EPIPE instead of killing the process: the run goes on and its
// record is still written.
void ignore_sigpipe();

// stderr is a terminal (isatty), so an updating line may be drawn there; tests may pretend either
// way (CONVBENCH_TTY=0|1 in the environment wins over isatty).
bool stderr_is_terminal();

// One line "bench_conv: <text>" on stderr at the given level or louder; clears a status line first.
void say(const std::string &text, Verbosity level = Verbosity::normal);

// The terminal's one updating line (\r, the rest of the line erased; cut to the terminal's width).
// Only drawn on a terminal at the normal level; clear_status() erases it (the end of the rounds).
void show_status(const std::string &text);
void clear_status();

// The width of the terminal on stderr, 100 when it is not one.
int terminal_columns();

} // namespace convbench::bench

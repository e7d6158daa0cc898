// The report's plots, drawn by gnuplot from data files and a script that sweep writes (gnuplot
// runs from an argv vector, never through a shell): validation loss vs tokens with a band across
// seeds, the forest plot of improvements with the noise band, the metric per seed, the response
// to a grid axis, the paired Δ-loss curves, the tokens saved to the baseline's final loss, the
// training loss and gradient norm (smoothed, with the raw band), and MoE models' load balance.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "report/analysis.h"
#include "report/pool/pool.h"

namespace sweep {

// A variant's colour in every plot and table: the baseline black, the others by their position
// in the sweep file.
std::string variant_colour(const VariantStats& v);

// Every file draw_plots may write.
inline const std::vector<std::string> k_plot_files{"ladder.svg", "curves.svg", "forest.svg",    "seeds.svg",
                                                   "response.svg", "delta.svg", "target.svg", "train.svg",
                                                   "grad_norm.svg", "moe_load.svg"};

struct Plot {
  std::string file;   // e.g. "curves.svg"
  std::string title;
  std::string svg;    // the SVG document gnuplot wrote
};

// Draws the plots with the gnuplot found in PATH, using `work_dir` (created, then removed) for the
// data files. Empty with `warning` set when gnuplot is missing or fails; a report without plots
// is still a report.
std::vector<Plot> draw_plots(const ReportInput& input, const Analysis& analysis, const std::filesystem::path& work_dir,
                             std::string& warning);

// `sweep pool --out`'s forest plot (pool.svg): every setting of each intervention pooled, its pooled
// effect and its prediction interval for a new setting. None (and `warning` why) without gnuplot.
std::vector<Plot> draw_pool_plot(const Pool& pool, const std::filesystem::path& work_dir, std::string& warning);

}  // namespace sweep

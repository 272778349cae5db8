#pragma once
// The output folders this process made, so that a command failing before it wrote anything
// into them (bad input found after the folder was made) leaves no empty folder behind.

#include <filesystem>

namespace wafersim::app {

// Records a folder this process has just created (not one that existed before).
void note_created_dir(const std::filesystem::path& dir);

// Removes every recorded folder that is still empty; leaves the others.
void remove_empty_created_dirs();

}  // namespace wafersim::app

#!/usr/bin/env python3
"""The layers hold (cmake/layers.txt, docs/layers.md).

1. Includes: no source under a layered folder includes a project header of a higher layer.
2. Links: cmake/Layers.cmake stops a configure whose library links against a higher layer
   (a scratch project with a library in `models/` linking one in `platforms/` must fail, one
   linking downwards must pass).

layers_test.py SOURCE_DIR CMAKE
"""
import os
import re
import subprocess
import sys
import tempfile


def read_layers(src):
    layers = {}
    with open(os.path.join(src, "cmake", "layers.txt")) as f:
        for line in f:
            m = re.match(r"^([a-z][^ ]*) +([0-9]+)", line)
            if m:
                layers[m.group(1)] = int(m.group(2))
    return layers


def layer_of(path, layers):
    best, best_len = None, -1
    for folder, layer in layers.items():
        if (path == folder or path.startswith(folder + "/")) and len(folder) > best_len:
            best, best_len = layer, len(folder)
    return best


def include_violations(src, layers):
    bad = []
    include = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
    for folder in sorted({f.split("/")[0] for f in layers}):
        for root, _, files in os.walk(os.path.join(src, folder)):
            for name in sorted(files):
                if not name.endswith((".h", ".cpp")):
                    continue
                path = os.path.relpath(os.path.join(root, name), src)
                mine = layer_of(path, layers)
                if mine is None:
                    continue
                with open(os.path.join(src, path), errors="replace") as f:
                    for no, line in enumerate(f, 1):
                        m = include.match(line)
                        if not m:
                            continue
                        theirs = layer_of(m.group(1), layers)
                        if theirs is not None and theirs > mine:
                            bad.append(f"{path}:{no}: includes {m.group(1)} (layer {theirs} above {mine})")
    return bad


def configure(cmake, tmp, name, body):
    proj = os.path.join(tmp, name)
    os.makedirs(os.path.join(proj, "cmake"))
    os.makedirs(os.path.join(proj, "models"))
    os.makedirs(os.path.join(proj, "platforms"))
    with open(os.path.join(SRC, "cmake", "Layers.cmake")) as f:
        layers_cmake = f.read()
    with open(os.path.join(proj, "cmake", "Layers.cmake"), "w") as f:
        f.write(layers_cmake)
    with open(os.path.join(proj, "cmake", "layers.txt"), "w") as f:
        f.write("models 3\nplatforms 4\n")
    for d in ("models", "platforms"):
        with open(os.path.join(proj, d, "a.cpp"), "w") as f:
            f.write(f"int {d}_a() {{ return 1; }}\n")
    with open(os.path.join(proj, "CMakeLists.txt"), "w") as f:
        f.write("cmake_minimum_required(VERSION 3.25)\nproject(layers LANGUAGES CXX)\n"
                "include(cmake/Layers.cmake)\n" + body + "wafersim_check_layers()\n")
    for d, lib in (("models", "wafersim_models"), ("platforms", "wafersim_platforms")):
        with open(os.path.join(proj, d, "CMakeLists.txt"), "w") as f:
            f.write(f"add_library({lib} a.cpp)\n")
    return subprocess.run([cmake, "-S", proj, "-B", os.path.join(proj, "build")],
                          capture_output=True, text=True)


def main():
    global SRC
    SRC, cmake = sys.argv[1], sys.argv[2]
    layers = read_layers(SRC)
    bad = include_violations(SRC, layers)
    if bad:
        print("FAIL: includes against the layers:\n  " + "\n  ".join(bad))
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        up = configure(cmake, tmp, "up", "add_subdirectory(platforms)\nadd_subdirectory(models)\n"
                       "target_link_libraries(wafersim_models PUBLIC wafersim_platforms)\n")
        if up.returncode == 0:
            print("FAIL: a models/ library linking one in platforms/ configured")
            return 1
        if "wafersim_models (models, layer 3) links against wafersim_platforms (platforms, layer 4)" not in up.stderr:
            print("FAIL: the message does not name the libraries:\n" + up.stderr)
            return 1
        down = configure(cmake, tmp, "down", "add_subdirectory(models)\nadd_subdirectory(platforms)\n"
                         "target_link_libraries(wafersim_platforms PUBLIC wafersim_models)\n")
        if down.returncode != 0:
            print("FAIL: a platforms/ library linking one in models/ did not configure:\n" + down.stderr)
            return 1
    print("layers: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())

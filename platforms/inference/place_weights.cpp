#include "platforms/inference/place_weights.h"

#include <fmt/format.h>

#include "models/compiler/kernels.h"
#include "models/compiler/program_builder.h"

namespace wafersim::platforms::inference {
using models::resident::ResidentProgram;
namespace compiler = models::compiler;

void place_weights(ResidentProgram& rp, const runtime::HostData& data) {
  compiler::CompiledModel& cm = rp.cm;
  const compiler::StreamingLayout& l = cm.layout;
  const std::uint32_t esz = hw::size_of(cm.dtype());
  compiler::LayerProgram& p = cm.programs.at(0);
  p.code.clear();
  for (std::uint32_t s = 0; s < l.slices(); ++s) {
    compiler::ProgramBuilder b(fmt::format("weights.r{}", s));
    b.entry(b.task("main"));
    b.ret();
    for (const auto& m : rp.matmuls) {
      const auto& Am = cm.tensors.at(m.args.in).map;
      const auto& Om = cm.tensors.at(m.args.out).map;
      const auto img = models::resident::resident_slice_image(m.args, Am, Om, l.slices(), s);
      std::vector<std::uint8_t> bytes;
      bytes.reserve(img.weights.size() * esz);
      const auto& w = data.host.at(m.args.weight);
      for (auto i : img.weights) models::resident::append_bits(bytes, w.at(i), esz);
      if (!bytes.empty()) b.data(m.weights.addr, std::move(bytes));
      if (!img.bias.empty()) {
        std::vector<std::uint8_t> bb;
        const auto& bias = data.host.at(static_cast<std::uint32_t>(m.args.bias));
        for (auto i : img.bias) models::resident::append_bits(bb, bias.at(i), esz);
        b.data(m.weights.bias_addr, std::move(bb));
      }
    }
    compiler::place_on_row(p, l, s, b.finish());
  }
}

}  // namespace wafersim::platforms::inference

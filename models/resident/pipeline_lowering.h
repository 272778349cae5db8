#pragma once
// Lowering the pipeline's stages to PE code, row by row: what every kind shares (the token
// task, the double-buffered input, the relay, the carried skip, the stored outputs) around
// what each kind computes per token (pipeline_stage_<kind>.cpp), and the stages' bounds per
// token (docs/compiler.md, "The pipeline, simulated").

#include <cstddef>
#include <cstdint>
#include <vector>

#include "models/compiler/elementwise.h"
#include "models/compiler/program_builder.h"
#include "models/resident/pipeline_frame.h"
#include "models/resident/resident_pipeline.h"

namespace wafersim::models::resident {

// One row of one stage in one phase and band, as its program is lowered.
struct StageRow {
  StageRow(const PipelineProgram& program, std::size_t i, const Frame& frame, const compiler::EwProgram& fused)
      : p(program), s(program.stages[i]), stage(i), fr(frame), ew(fused) {}
  const PipelineProgram& p;
  const PipelineStage& s;
  std::size_t stage = 0;  // its index in p.stages
  const Frame& fr;
  const compiler::EwProgram& ew;  // the fused elementwise program (empty when none)
  hw::DType dt = hw::DType::F32;
  std::uint32_t esz = 0;
  std::uint32_t y = 0, gy = 0;             // the row in its band, on the wafer
  std::vector<std::uint64_t> tokens;       // the band's tokens of the phase, in order
  bool first = false, last = false;        // the stage's place in the chain
  bool place = false;                      // the first phase: its programs place the parameters
  bool rows_in = false;                    // the cut
  bool round = false;                      // the row rounds its outputs (and sends or stores them)
  bool sums_in = false, sums_out = false;  // rows-in: fp32 sums from the row above, to the row below
  bool carries = false;                    // the bottom row sends the skip on after its outputs
  compiler::Span o, a;                     // its outputs and inputs
  std::uint32_t c = 0;                     // o.size()
  std::uint32_t above = 0;                 // rows-out: outputs of the rows above, relayed
};

// The descriptors of a row's program that the kinds' code shares (0 where not declared).
struct RowDescriptors {
  unsigned acc = 0, biasd = 0, wvec = 0, wcol = 0, xvec = 0, yd = 0, yd2 = 0, result = 0;
  unsigned xbuf = 0, xin = 0, cout = 0, cmem = 0, outm = 0, sin = 0, sout = 0, rin = 0, rfwd = 0, rout = 0;
  std::vector<unsigned> ewd;  // the fused program's buffers: its inputs, output, temporaries
};

// What one kind of stage brings to the lowering of its rows.
struct StageLowering {
  // Cycles per token of row y after its input has arrived: the instructions it issues or its
  // datapath steps (`lanes` elements a cycle), whichever is more.
  std::uint64_t (*latency)(PipelineCut cut, const PipelineStage& s, std::uint32_t y, std::uint32_t lanes);
  // Its parameters and tables as the program's initial data (parameters only when r.place).
  void (*place)(compiler::ProgramBuilder& b, const StageRow& r);
  // The token task's work on one token: from its input (at r6) the row's outputs into the
  // buffer of d.yd (a gated stage's up projection into d.yd2), in models/reference's order.
  void (*token)(compiler::ProgramBuilder& b, const StageRow& r, const RowDescriptors& d);
};

// Per kind (pipeline_stage_<kind>.cpp): Linear, Gated and Qkv; RmsNorm and LayerNorm.
StageLowering linear_lowering();
StageLowering norm_lowering();
StageLowering attention_lowering();
StageLowering embedding_lowering();
StageLowering add_lowering();
StageLowering lowering_of(StageKind k);

// Sets stage i's latency and interval bounds: over its rows, the kind's latency, and the
// wavelets through the row's ramp per token (input, relay, sums, skip).
void bound_stage(PipelineProgram& p, std::size_t i, std::uint32_t lanes);

// Appends the programs of every row of stage i in every phase and band to p.phases' code.
void lower_stage(PipelineProgram& p, std::size_t i, const Frame& fr, const compiler::EwProgram& ew);

}  // namespace wafersim::models::resident

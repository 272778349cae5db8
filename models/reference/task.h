#pragma once
// Synthetic training tasks with a known structure, so the loss of a small model falls within a
// few steps (docs/reference.md, "Synthetic tasks"):
// - bigram (models reading tokens): every token v has 4 successors drawn from the vocabulary;
//   a sample starts at a uniform token and each next token is one of its current token's 4
//   successors, uniformly; labels are the next tokens (loss floor about ln 4);
// - teacher (models reading activations): x uniform in [-1, 1] per feature, the label is the
//   argmax over classes c of sum_f x_f T[f, c] with a fixed teacher T uniform in [-1, 1].

#include <cstdint>
#include <string>
#include <vector>

#include "models/model_spec.h"
#include "models/reference/model.h"

namespace wafersim::models::reference {

class SyntheticTask {
 public:
  enum class Kind { Bigram, Teacher };
  static constexpr std::uint32_t kSuccessors = 4;

  // Chooses the task from the model's inputs: one tokens input (its embedding's vocabulary must
  // equal the classes) or one activations input, and one labels input read by a cross-entropy
  // layer (classes: its logits' features). Throws sim::InputError naming what does not fit.
  SyntheticTask(const ModelSpec& spec, Format storage, std::uint64_t seed);

  // The samples of step `step`: a stream SplitMix64(derive_seed(seed, "batch<step>")).
  [[nodiscard]] Inputs batch(std::uint64_t step, std::uint64_t samples) const;
  [[nodiscard]] Kind kind() const { return kind_; }
  [[nodiscard]] std::uint64_t classes() const { return classes_; }
  [[nodiscard]] std::string describe() const;

 private:
  Kind kind_ = Kind::Bigram;
  Format storage_;
  std::uint64_t seed_;
  std::uint64_t sequence_ = 1, classes_ = 0, features_ = 0;
  std::string input_, labels_;
  std::vector<std::uint32_t> successors_;  // bigram: V x kSuccessors
  std::vector<double> teacher_;            // teacher: features x classes
};

}  // namespace wafersim::models::reference

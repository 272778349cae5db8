#include "models/reference/task.h"

#include <fmt/format.h>

#include "models/reference/random.h"
#include "sim/errors.h"

namespace wafersim::models::reference {

SyntheticTask::SyntheticTask(const ModelSpec& spec, Format storage, std::uint64_t seed)
    : storage_(storage), seed_(seed), sequence_(spec.sequence) {
  std::vector<const InputSpec*> tokens, acts, labels;
  for (const InputSpec& in : spec.inputs) {
    if (in.kind == InputSpec::Kind::Tokens) tokens.push_back(&in);
    if (in.kind == InputSpec::Kind::Activations) acts.push_back(&in);
    if (in.kind == InputSpec::Kind::Labels) labels.push_back(&in);
  }
  if (labels.size() != 1 || tokens.size() + acts.size() != 1)
    throw sim::InputError(
        fmt::format("synthetic task: model '{}' needs one labels input and one tokens or "
                    "activations input, found {} labels, {} tokens, {} activations",
                    spec.name, labels.size(), tokens.size(), acts.size()));
  labels_ = labels[0]->name;
  for (const LayerSpec& l : spec.layers)
    if (l.kind == LayerKind::CrossEntropy && l.inputs[1] == labels_) classes_ = spec.shape_of(l.inputs[0]).features;
  if (classes_ == 0)
    throw sim::InputError(
        fmt::format("synthetic task: no cross_entropy layer of model '{}' reads '{}'", spec.name, labels_));
  if (!tokens.empty()) {
    kind_ = Kind::Bigram;
    input_ = tokens[0]->name;
    for (const LayerSpec& l : spec.layers)
      if (l.kind == LayerKind::Embedding && l.inputs[0] == input_ && l.vocabulary != classes_)
        throw sim::InputError(
            fmt::format("synthetic task: the bigram task needs embedding '{}' vocabulary {} to "
                        "equal the {} classes",
                        l.name, l.vocabulary, classes_));
    SplitMix64 rng(derive_seed(seed, "bigram"));
    successors_.resize(classes_ * kSuccessors);
    for (auto& s : successors_) s = static_cast<std::uint32_t>(rng.below(classes_));
  } else {
    kind_ = Kind::Teacher;
    input_ = acts[0]->name;
    features_ = acts[0]->features;
    SplitMix64 rng(derive_seed(seed, "teacher"));
    teacher_.resize(features_ * classes_);
    for (auto& t : teacher_) t = rng.uniform(-1.0, 1.0);
  }
}

Inputs SyntheticTask::batch(std::uint64_t step, std::uint64_t samples) const {
  SplitMix64 rng(derive_seed(seed_, fmt::format("batch{}", step)));
  Inputs in;
  const Shape ids_shape{samples, sequence_, 0};
  TokenIds labels{ids_shape, std::vector<std::uint32_t>(samples * sequence_)};
  if (kind_ == Kind::Bigram) {
    TokenIds tokens{ids_shape, std::vector<std::uint32_t>(samples * sequence_)};
    for (std::uint64_t b = 0; b < samples; ++b) {
      auto t = static_cast<std::uint32_t>(rng.below(classes_));
      for (std::uint64_t i = 0; i < sequence_; ++i) {
        tokens.ids[b * sequence_ + i] = t;
        t = successors_[t * kSuccessors + rng.below(kSuccessors)];
        labels.ids[b * sequence_ + i] = t;
      }
    }
    in.ids.emplace(input_, std::move(tokens));
  } else {
    Tensor x(storage_, Shape{samples, sequence_, features_});
    for (std::size_t i = 0; i < x.size(); ++i) x.set_value(i, rng.uniform(-1.0, 1.0));
    for (std::uint64_t r = 0; r < x.rows(); ++r) {
      std::uint64_t best = 0;
      double best_score = 0;
      for (std::uint64_t c = 0; c < classes_; ++c) {
        double score = 0;
        for (std::uint64_t f = 0; f < features_; ++f) score += x.value(x.at(r, f)) * teacher_[f * classes_ + c];
        if (c == 0 || score > best_score) {
          best = c;
          best_score = score;
        }
      }
      labels.ids[r] = static_cast<std::uint32_t>(best);
    }
    in.activations.emplace(input_, std::move(x));
  }
  in.ids.emplace(labels_, std::move(labels));
  return in;
}

std::string SyntheticTask::describe() const {
  if (kind_ == Kind::Bigram)
    return fmt::format("bigram: {} tokens, {} successors each, sequence {}", classes_, kSuccessors, sequence_);
  return fmt::format("teacher: {} features -> argmax of {} classes", features_, classes_);
}

}  // namespace wafersim::models::reference

// vkd::Model (Model.hpp): the API boundary of the model layer. Everything below throws
// vkd::Error; here every exception becomes a Status plus a message kept on the handle
// (runtime/delegate/ApiBoundary.h, shared with vkd::Delegate), and the caller's views are checked
// and turned into the host tensors the steps pass on.
#include "vkdelegate/Model.hpp"

#include <cstring>
#include <mutex>
#include <optional>

#include "core/Error.h"
#include "core/HostPacking.h"
#include "model/PartitionedModel.h"
#include "runtime/delegate/ApiBoundary.h"

namespace vkd {

// Hidden: Impl is nested in an exported class but is not part of the API.
struct __attribute__((visibility("hidden"))) Model::Impl {
  std::unique_ptr<model::PartitionedModel> model;
  std::vector<TensorInfo> inputs, outputs;  // described once at load
  std::vector<StepInfo> steps;

  mutable std::mutex mutex;  // serializes every call on one handle
  std::string last_error;
  std::vector<StepTiming> timings;

  void run(const std::vector<ConstTensorView>& in, const std::vector<TensorView>& out);
};

namespace {

// The caller's input as the host tensor the plan describes (float16 narrowed from the float32
// the API exchanges, rounded as a delegate rounds an upload).
compiler::HostTensor host_tensor(const model::PlanTensor& t, const ConstTensorView& view) {
  const auto* bytes = static_cast<const uint8_t*>(view.data);
  std::vector<uint8_t> data(bytes, bytes + view.bytes);
  if (t.dtype == DType::Float16) data = float32_bytes_to_float16(data);
  return compiler::HostTensor{t.dtype, t.shape, std::move(data)};
}

// A model output into the caller's view (float16 widened to float32).
void copy_out(const compiler::HostTensor& t, const TensorView& view) {
  const std::vector<uint8_t> data =
      t.dtype == DType::Float16 ? float16_bytes_to_float32(t.bytes) : t.bytes;
  VKD_CHECK(data.size() == view.bytes, ErrorCode::Internal, "output of ", data.size(),
            " bytes for a view of ", view.bytes);
  std::memcpy(view.data, data.data(), data.size());
}

}  // namespace

void Model::Impl::run(const std::vector<ConstTensorView>& in, const std::vector<TensorView>& out) {
  VKD_CHECK(in.size() == inputs.size(), ErrorCode::InvalidArgument, "the model takes ",
            inputs.size(), " inputs, got ", in.size());
  VKD_CHECK(out.size() == outputs.size(), ErrorCode::InvalidArgument, "the model gives ",
            outputs.size(), " outputs, got ", out.size());
  // A blob with a dynamic length: its delegate checks the views against the inputs' length.
  const Delegate* direct = model->direct_delegate();
  if (direct == nullptr || direct->length_range().max == 0) {
    for (size_t i = 0; i < in.size(); ++i) api::check_view("input", i, inputs[i], in[i], {});
    for (size_t i = 0; i < out.size(); ++i) api::check_view("output", i, outputs[i], out[i], {});
  }
  if (model->runs_direct()) {  // one GPU step: the caller's memory is the delegate's I/O
    timings = {model->run_direct(in, out)};
    return;
  }
  const model::PartitionPlan& plan = model->plan();
  model::TensorMap given;
  for (size_t i = 0; i < in.size(); ++i) {
    const model::PlanTensor& t = plan.tensor(plan.inputs[i]);
    given[t.name] = host_tensor(t, in[i]);
  }
  std::vector<StepTiming> run_timings;
  const model::TensorMap values = model->run(given, &run_timings);
  for (size_t i = 0; i < out.size(); ++i) copy_out(values.at(plan.outputs[i]), out[i]);
  timings = std::move(run_timings);
}

Model::Model(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Model::~Model() = default;

Status Model::load(const std::string& path, const ModelOptions& options,
                   std::unique_ptr<Model>* out, std::string* error) {
  return api::create_guarded(out, error, "Model::load", [&] {
    const std::optional<std::string> weights =
        options.weights_path.empty() ? std::nullopt : std::optional(options.weights_path);
    auto impl = std::make_unique<Impl>();
    impl->model =
        model::PartitionedModel::create(model::read_model_files(path, weights), options.delegate);
    impl->inputs = impl->model->input_infos();
    impl->outputs = impl->model->output_infos();
    impl->steps = impl->model->step_infos();
    return std::unique_ptr<Model>(new Model(std::move(impl)));
  });
}

size_t Model::input_count() const { return impl_->inputs.size(); }
size_t Model::output_count() const { return impl_->outputs.size(); }

TensorInfo Model::input(size_t index) const {
  return index < impl_->inputs.size() ? impl_->inputs[index] : TensorInfo{};
}

TensorInfo Model::output(size_t index) const {
  return index < impl_->outputs.size() ? impl_->outputs[index] : TensorInfo{};
}

size_t Model::step_count() const { return impl_->steps.size(); }

StepInfo Model::step(size_t index) const {
  return index < impl_->steps.size() ? impl_->steps[index] : StepInfo{};
}

Status Model::execute(const std::vector<ConstTensorView>& inputs,
                      const std::vector<TensorView>& outputs) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->timings.clear();  // a failed run leaves none behind
  return api::guarded(impl_->last_error, [&] { impl_->run(inputs, outputs); });
}

Delegate::LengthRange Model::length_range() const {
  const Delegate* d = impl_->model->direct_delegate();
  return d ? d->length_range() : Delegate::LengthRange{};
}

Status Model::length_of_inputs(const std::vector<std::vector<int64_t>>& input_sizes,
                               int64_t* length) const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return api::guarded(impl_->last_error, [&] {
    Delegate* d = impl_->model->direct_delegate();
    VKD_CHECK(d != nullptr && d->length_range().max > 0, ErrorCode::InvalidArgument,
              "the model was compiled for fixed shapes (no dynamic length)");
    VKD_CHECK(d->length_of_inputs(input_sizes, length) == Status::Ok, ErrorCode::InvalidArgument,
              d->last_error());
  });
}

Status Model::infos_at_length(int64_t length, std::vector<TensorInfo>* inputs,
                              std::vector<TensorInfo>* outputs) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  Delegate* d = impl_->model->direct_delegate();
  if (d == nullptr) {
    impl_->last_error = "the model was compiled for fixed shapes (no dynamic length)";
    return Status::InvalidArgument;
  }
  const Status st = d->infos_at_length(length, inputs, outputs);
  impl_->last_error = st == Status::Ok ? "" : d->last_error();
  return st;
}

Status Model::set_profiling(Delegate::Profiling mode) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return api::guarded(impl_->last_error, [&] { impl_->model->set_profiling(mode); });
}

std::string Model::last_error() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->last_error;
}

std::vector<StepTiming> Model::last_timings() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->timings;
}

std::string Model::device_name() const { return impl_->model->device_name(); }

uint64_t Model::validation_message_count() const {
  return impl_->model->validation_message_count();
}

}  // namespace vkd

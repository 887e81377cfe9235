// ACCU and PERF cases for q8ta_attention: sequence lengths 1, 7, 16, 33, 128 and 512 (one query
// block, partial blocks and partial key tiles, several tiles), query and key lengths that
// differ, 1, 2 and 12 heads of 8, 32, 64 and 128 columns, batches of 1 and 2, rank 2 to 4, masks
// of every accepted form ([B, 1, 1, Tk] with masked keys, per query row, shared by the batches,
// a batch with every key at -10000, a row with every key at -inf, zeros: no mask), is_causal
// (also with fewer queries than keys), and MiniLM's shape (T = 128, 12 heads of 32) as the PERF
// case; the float op `attention` on float32 Q, K, V (heads up to 64) likewise; the mask made in
// the kernel (q8ta_attention_mask_affine): BERT's (1 - m) * -10000 of a 0/1 token mask, and
// (1 - m) * -3.7 of random m, each checked against the reference on the mask made here in float32
// as aten.rsub.Scalar and aten.mul.Scalar make it, and word for word against q8ta_attention
// reading that mask (the same graph); Q, K, V as the column ranges 0, C, 2C of one [B, T, 3C]
// tensor (a merged Q/K/V linear's output), word for word against the op on the three tensors.
//
// Checked against a double-precision reference with exact int32 Q.K sums
// (test/reference/AttentionReference.h): each int8 output must lie between the quantizations of
// y_ref - tol and y_ref + tol (tol: the bound the reference derives from the kernel's float32
// scores and exp); the padding lanes must hold the output zero point.
#include <algorithm>
#include <cmath>
#include <string>

#include "runtime/ops/Attention.h"
#include "test/custom_ops/Harness.h"
#include "test/custom_ops/QuantCaseUtils.h"
#include "test/reference/AttentionReference.h"
#include "test/reference/LayoutReference.h"

namespace vkd::custom_ops {
namespace {

using testing::AttentionRefShape;

enum class MaskKind {
  None,         // zeros [Tk]
  Keys,         // [B, 1, 1, Tk]: the last third of the keys at -10000 (padding tokens)
  Rows,         // [B, 1, Tq, Tk]: random per row, row 1 every key -inf
  Shared,       // [1, 1, Tq, Tk]: random, shared by the batches
  FullyMasked,  // [B, 1, 1, Tk]: batch 0 every key at -10000
  Causal,       // zeros [Tk] and is_causal: key j > query row l masked out
  MadeBert,    // [B, 1, 1, Tk] 0/1 (the last third of the keys 0), the kernel adds (1 - m) * -10000
  MadeRandom,  // [B, 1, 1, Tk] uniform in [-0.5, 1.5], the kernel adds (1 - m) * -3.7
};

// The mask steps of the Made kinds: aten.rsub.Scalar(other 1) then aten.mul.Scalar(`factor`).
float made_factor(MaskKind m) { return m == MaskKind::MadeBert ? -10000.0f : -3.7f; }
bool is_made(MaskKind m) { return m == MaskKind::MadeBert || m == MaskKind::MadeRandom; }

const char* mask_name(MaskKind m) {
  switch (m) {
    case MaskKind::None: return "no_mask";
    case MaskKind::Keys: return "key_mask";
    case MaskKind::Rows: return "row_mask";
    case MaskKind::Shared: return "shared_mask";
    case MaskKind::FullyMasked: return "fully_masked";
    case MaskKind::Causal: return "causal";
    case MaskKind::MadeBert: return "made_bert_mask";
    case MaskKind::MadeRandom: return "made_random_mask";
  }
  return "?";
}

struct AttentionShape {
  std::vector<int64_t> q_sizes, k_sizes;  // [.., T, H*D]
  int64_t heads;
};

// clamp(nearbyint(y * inv_s) + zp, -128, 127): the kernel's requantization, in double.
int quantize(double y, const ops::QuantParams& q) {
  const double inv = static_cast<float>(1.0 / static_cast<double>(q.scale));
  const double t = std::nearbyint(y * inv) + q.zero_point;
  return static_cast<int>(std::min(std::max(t, -128.0), 127.0));
}

class AttentionCase : public CaseInstance {
 public:
  // `float_io`: the float op `attention`, Q and K uniform in +-(q_scale * 64), V in +-1.
  // `packed`: Q, K, V read as column ranges of one tensor (self-attention: Tq = Tk).
  AttentionCase(AttentionShape shape, MaskKind mask, float q_scale, bool float_io,
                bool packed = false)
      : shape_(std::move(shape)),
        mask_(mask),
        float_io_(float_io),
        packed_(packed),
        amplitude_(q_scale * 64) {
    params_.query = {q_scale, -4};
    params_.key = {0.066f, 3};
    params_.value = {0.02f, 33};
    params_.output = {0.017f, 51};
    params_.num_heads = static_cast<int>(shape_.heads);
    params_.scale = 1.0f / std::sqrt(static_cast<float>(head_dim()));
    params_.causal = mask == MaskKind::Causal;
    if (is_made(mask)) {
      ops::MaskAffine m;  // rsub: x * -1 + 1; mul: x * factor + -0.0
      m.a[0] = -1.0f;
      m.b[0] = 1.0f;
      m.a[1] = made_factor(mask);
      m.b[1] = -0.0f;
      params_.mask_affine = m;
    }
  }

  int64_t head_dim() const { return shape_.q_sizes.back() / shape_.heads; }
  int64_t batches() const {
    int64_t b = 1;
    for (size_t i = 0; i + 2 < shape_.q_sizes.size(); ++i) b *= shape_.q_sizes[i];
    return b;
  }
  int64_t tq() const { return shape_.q_sizes.end()[-2]; }
  int64_t tk() const { return shape_.k_sizes.end()[-2]; }
  std::vector<int64_t> mask_sizes() const {
    switch (mask_) {
      case MaskKind::None:
      case MaskKind::Causal: return {tk()};
      case MaskKind::Keys:
      case MaskKind::FullyMasked:
      case MaskKind::MadeBert:
      case MaskKind::MadeRandom: return {batches(), 1, 1, tk()};
      case MaskKind::Rows: return {batches(), 1, tq(), tk()};
      case MaskKind::Shared: return {1, 1, tq(), tk()};
    }
    return {};
  }

  void build(graph::ComputeGraph& g) override {
    const auto spec = [&](const std::vector<int64_t>& sizes) {
      return float_io_
                 ? TensorSpec{sizes, DType::Float32, StorageType::Buffer, MemoryLayout::WidthPacked}
                 : TensorSpec{sizes, DType::Int8x4, StorageType::Buffer,
                              MemoryLayout::PackedInt8_4H4W};
    };
    q_ = g.add_tensor(spec(shape_.q_sizes), "q");
    k_ = g.add_tensor(spec(shape_.k_sizes), "k");
    v_ = g.add_tensor(spec(shape_.k_sizes), "v");
    m_ = g.add_tensor(
        {mask_sizes(), DType::Float32, StorageType::Buffer, MemoryLayout::WidthPacked}, "mask");
    out_ = g.add_tensor(spec(shape_.q_sizes), "y");
    if (float_io_) {
      ops::add_attention_node(g, q_, k_, v_, m_, out_, params_.num_heads, params_.scale,
                              params_.causal);
    } else {
      ops::add_q8ta_attention_node(g, q_, k_, v_, m_, out_, params_);
    }
    for (graph::ValueRef in : {q_, k_, v_, m_}) g.add_input(in);
    g.add_output(out_);
    if (packed_) {  // the same on the column ranges 0, C, 2C of one [.., T, 3C] tensor
      std::vector<int64_t> wide = shape_.q_sizes;
      wide.back() *= 3;
      qkv_ = g.add_tensor(spec(wide), "qkv");
      plain_out_ = g.add_tensor(spec(shape_.q_sizes), "y_columns");
      ops::AttentionParams columns = params_;
      const int64_t c = shape_.q_sizes.back();
      columns.columns = ops::AttentionColumns{0, c, 2 * c};
      ops::add_q8ta_attention_node(g, qkv_, qkv_, qkv_, m_, plain_out_, columns);
      g.add_input(qkv_);
      g.add_output(plain_out_);
    }
    if (is_made(mask_)) {  // q8ta_attention on the mask made on the CPU, for the word compare
      made_m_ = g.add_tensor(
          {mask_sizes(), DType::Float32, StorageType::Buffer, MemoryLayout::WidthPacked}, "made");
      plain_out_ = g.add_tensor(spec(shape_.q_sizes), "y_plain");
      ops::AttentionParams plain = params_;
      plain.mask_affine.reset();
      ops::add_q8ta_attention_node(g, q_, k_, v_, made_m_, plain_out_, plain);
      g.add_input(made_m_);
      g.add_output(plain_out_);
    }
  }

  void write_inputs(graph::ComputeGraph& g, std::mt19937& rng) override {
    const auto write = [&](graph::ValueRef t, const std::vector<int64_t>& sizes, int zp,
                           std::vector<int8_t>& x) {
      x = random_int8(g.spec(t).numel(), -128, 127, rng);
      g.write_words(
          t, testing::ref_pack(MemoryLayout::PackedInt8_4H4W, testing::ref_shape_of(sizes), x, zp));
    };
    const auto write_float = [&](graph::ValueRef t, float reach, std::vector<float>& x) {
      std::uniform_real_distribution<float> value(-reach, reach);
      x.resize(static_cast<size_t>(g.spec(t).numel()));
      for (float& e : x) e = value(rng);
      g.write_float(t, x);
    };
    if (float_io_) {
      write_float(q_, amplitude_, qf_);
      write_float(k_, amplitude_, kf_);
      write_float(v_, 1.0f, vf_);
    } else {
      write(q_, shape_.q_sizes, params_.query.zero_point, q_vals_);
      write(k_, shape_.k_sizes, params_.key.zero_point, k_vals_);
      write(v_, shape_.k_sizes, params_.value.zero_point, v_vals_);
    }
    if (packed_) {  // qkv's rows: the query's, the key's and the value's row side by side
      const int64_t c = shape_.q_sizes.back(), rows = static_cast<int64_t>(q_vals_.size()) / c;
      std::vector<int8_t> qkv(static_cast<size_t>(3 * rows * c));
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t j = 0; j < c; ++j) {
          const size_t from = static_cast<size_t>(r * c + j),
                       to = static_cast<size_t>(r * 3 * c + j);
          qkv[to] = q_vals_[from];
          qkv[to + static_cast<size_t>(c)] = k_vals_[from];
          qkv[to + static_cast<size_t>(2 * c)] = v_vals_[from];
        }
      }
      std::vector<int64_t> wide = shape_.q_sizes;
      wide.back() *= 3;
      g.write_words(
          qkv_, testing::ref_pack(MemoryLayout::PackedInt8_4H4W, testing::ref_shape_of(wide), qkv,
                                  params_.query.zero_point));
    }
    int64_t count = 1;
    for (int64_t d : mask_sizes()) count *= d;
    mask_vals_.assign(static_cast<size_t>(count), 0.0f);
    std::uniform_real_distribution<float> random(-4.0f, 2.0f);
    for (int64_t i = 0; i < count; ++i) {
      const int64_t j = i % tk(),
                    row = (i / tk()) %
                          (mask_sizes().size() < 4 ? 1 : std::max<int64_t>(1, mask_sizes()[2]));
      float& m = mask_vals_[static_cast<size_t>(i)];
      switch (mask_) {
        case MaskKind::None:
        case MaskKind::Causal: break;
        case MaskKind::Keys: m = 3 * j >= 2 * tk() && j > 0 ? -10000.0f : 0.0f; break;
        case MaskKind::FullyMasked: m = i < tk() ? -10000.0f : 0.0f; break;
        case MaskKind::Rows: m = row == 1 ? -INFINITY : random(rng); break;
        case MaskKind::Shared: m = random(rng); break;
        case MaskKind::MadeBert: m = 3 * j >= 2 * tk() && j > 0 ? 0.0f : 1.0f; break;
        case MaskKind::MadeRandom:
          m = std::uniform_real_distribution<float>(-0.5f, 1.5f)(rng);
          break;
      }
    }
    g.write_float(m_, mask_vals_);
    if (is_made(mask_)) {
      // What aten.rsub.Scalar(m, 1) and aten.mul.Scalar(., factor) write: each rounded.
      made_vals_ = mask_vals_;
      for (float& m : made_vals_) {
        volatile float inverted = 1.0f - m;
        m = inverted * made_factor(mask_);
      }
      g.write_float(made_m_, made_vals_);
    }
  }

  AccuResult check(const graph::ComputeGraph& g) override {
    const std::vector<int64_t> ms = mask_sizes();
    const AttentionRefShape s{batches(),
                              tq(),
                              tk(),
                              shape_.heads,
                              head_dim(),
                              ms.size() == 4 ? ms[0] : 1,
                              ms.size() == 4 ? ms[2] : 1,
                              params_.causal};
    if (float_io_) return check_float(g, s);
    const float qk = params_.query.scale * params_.key.scale * params_.scale;
    const testing::AttentionRef want = testing::ref_attention(
        q_vals_, k_vals_, v_vals_, is_made(mask_) ? made_vals_ : mask_vals_, s,
        {params_.query.zero_point, params_.key.zero_point, params_.value.zero_point, qk,
         params_.value.scale});
    const ops::QuantParams& oq = params_.output;
    const std::vector<int8_t> got = g.read_int8(out_);
    AccuResult r;
    for (size_t i = 0; i < want.y.size(); ++i) {
      const int lo = quantize(want.y[i] - want.tol[i], oq);
      const int hi = quantize(want.y[i] + want.tol[i], oq);
      const int err = std::abs(got[i] - quantize(want.y[i], oq));
      r.max_abs_error = std::max(r.max_abs_error, static_cast<double>(err));
      r.mismatches += got[i] < lo || got[i] > hi;
      ++r.checked;
    }
    compare_words(g.read_words(out_),
                  testing::ref_pack(MemoryLayout::PackedInt8_4H4W,
                                    testing::ref_shape_of(shape_.q_sizes), got, oq.zero_point),
                  r);
    if (plain_out_ >= 0) compare_words(g.read_words(out_), g.read_words(plain_out_), r);
    return r;
  }

  // Each float output within the reference's bound of its exact value.
  AccuResult check_float(const graph::ComputeGraph& g, const AttentionRefShape& s) const {
    const testing::AttentionRef want =
        testing::ref_attention_float(qf_, kf_, vf_, mask_vals_, s, params_.scale);
    const std::vector<float> got = g.read_float(out_);
    AccuResult r;
    for (size_t i = 0; i < want.y.size(); ++i) {
      const double err = std::fabs(static_cast<double>(got[i]) - want.y[i]);
      r.max_abs_error = std::max(r.max_abs_error, std::isnan(err) ? INFINITY : err);
      r.mismatches += !(err <= want.tol[i]);
      ++r.checked;
    }
    return r;
  }

  PerfWork work() const override {
    const double b = static_cast<double>(batches()),
                 width = static_cast<double>(shape_.q_sizes.back()) * (float_io_ ? 4 : 1);
    const double bytes = b * width * (2.0 * tq() + 2.0 * tk()) + 4.0 * mask_vals_.size();
    // Q.K^T and P.V: 2 * Tq * Tk * D multiply-adds per head.
    return {bytes, 4.0 * b * tq() * tk() * static_cast<double>(shape_.q_sizes.back())};
  }

 private:
  AttentionShape shape_;
  MaskKind mask_;
  bool float_io_;
  bool packed_;
  float amplitude_;
  ops::AttentionParams params_;
  graph::ValueRef q_ = -1, k_ = -1, v_ = -1, m_ = -1, out_ = -1, made_m_ = -1, plain_out_ = -1,
                  qkv_ = -1;
  std::vector<int8_t> q_vals_, k_vals_, v_vals_;
  std::vector<float> qf_, kf_, vf_;
  std::vector<float> mask_vals_, made_vals_;  // the mask as read; made (is_made)
};

void add_attention_case(Registry& registry, const std::string& prefix, const AttentionShape& shape,
                        MaskKind mask, float q_scale, bool float_io = false, bool packed = false) {
  const int64_t d = shape.q_sizes.back() / shape.heads;
  const std::string sizes = shape_string(shape.q_sizes) + "_kv" + shape_string(shape.k_sizes);
  const std::string heads = std::to_string(shape.heads) + "x" + std::to_string(d);
  const std::string op = float_io        ? "attention"
                         : is_made(mask) ? "q8ta_attention_mask_affine"
                         : packed        ? "q8ta_attention_qkv_columns"
                                         : "q8ta_attention";
  Case c{prefix + op + "/" + heads + "/" + mask_name(mask) + "/" + sizes,
         op,
         sizes,
         std::string(float_io ? "float32 " : "4H4W ") + heads + " " + mask_name(mask),
         prefix.empty(),
         !prefix.empty(),
         prefix.empty() && !float_io,
         Metric::GOPs,
         [=] { return std::make_unique<AttentionCase>(shape, mask, q_scale, float_io, packed); }};
  registry.add(std::move(c));
}

}  // namespace

void register_attention_cases(Registry& registry) {
  const float sharp = 0.1f, soft = 0.02f;  // query scales: peaked and flat softmaxes
  const struct {
    AttentionShape shape;
    MaskKind mask;
    float q_scale;
  } cases[] = {
      {{{1, 1, 32}, {1, 1, 32}, 1}, MaskKind::None, sharp},
      {{{7, 16}, {7, 16}, 2}, MaskKind::Keys, soft},                    // rank 2, heads of 8
      {{{2, 7, 16}, {2, 7, 16}, 2}, MaskKind::FullyMasked, soft},       // batches of 2
      {{{1, 16, 384}, {1, 16, 384}, 12}, MaskKind::Keys, sharp},        // MiniLM at T = 16
      {{{2, 7, 128}, {2, 40, 128}, 2}, MaskKind::Rows, soft},           // Tq != Tk, 2 key tiles
      {{{1, 1, 16, 128}, {1, 1, 16, 128}, 2}, MaskKind::Shared, soft},  // rank 4
      {{{1, 33, 128}, {1, 33, 128}, 1}, MaskKind::None, soft},          // the largest head (128)
      {{{1, 128, 384}, {1, 128, 384}, 12}, MaskKind::Keys, sharp},      // MiniLM at T = 128
      {{{1, 128, 128}, {1, 128, 128}, 2}, MaskKind::None, soft},        // heads of 64
      {{{1, 512, 128}, {1, 512, 128}, 2}, MaskKind::Keys, soft},        // 16 key tiles
      {{{2, 37, 64}, {2, 37, 64}, 2}, MaskKind::Causal, soft},          // is_causal
      {{{1, 5, 32}, {1, 40, 32}, 1}, MaskKind::Causal, soft},           // causal, Tq < Tk
      {{{1, 16, 384}, {1, 16, 384}, 12}, MaskKind::MadeBert, sharp},    // MiniLM's made mask
      {{{2, 7, 128}, {2, 40, 128}, 2}, MaskKind::MadeRandom, soft},     // 2 key tiles, batches
      // Heads of at most 32 (one tile of 128 keys): three tiles, the last partial; batches with
      // a mask per query row over two tiles.
      {{{1, 300, 64}, {1, 300, 64}, 2}, MaskKind::Keys, sharp},
      {{{2, 130, 96}, {2, 130, 96}, 3}, MaskKind::Rows, soft},
      // A grid of more than 256 workgroups of 8 query rows (the others take 4 rows each):
      // 33 blocks x 16 heads of 4 x 2 batches.
      {{{2, 264, 64}, {2, 264, 64}, 16}, MaskKind::Keys, soft},
  };
  for (const auto& c : cases) add_attention_case(registry, "", c.shape, c.mask, c.q_scale);
  // Q, K, V as column ranges of one tensor: MiniLM's at 16 tokens, batches and a partial block.
  add_attention_case(registry, "", {{1, 16, 384}, {1, 16, 384}, 12}, MaskKind::Keys, sharp, false,
                     true);
  add_attention_case(registry, "", {{2, 7, 128}, {2, 7, 128}, 2}, MaskKind::Rows, soft, false,
                     true);
  add_attention_case(registry, "perf/", {{1, 128, 384}, {1, 128, 384}, 12}, MaskKind::Keys, sharp);
  add_attention_case(registry, "perf/", {{1, 512, 384}, {1, 512, 384}, 12}, MaskKind::Keys, sharp);
  add_attention_case(registry, "perf/", {{1, 197, 192}, {1, 197, 192}, 3}, MaskKind::None, sharp);
  // The float op: heads of 8 to 64 (its largest), one to several key tiles of 16.
  const struct {
    AttentionShape shape;
    MaskKind mask;
  } float_cases[] = {
      {{{1, 1, 32}, {1, 1, 32}, 1}, MaskKind::None},
      {{{2, 7, 16}, {2, 7, 16}, 2}, MaskKind::FullyMasked},
      {{{1, 16, 384}, {1, 16, 384}, 12}, MaskKind::Keys},
      {{{2, 7, 128}, {2, 40, 128}, 2}, MaskKind::Rows},
      {{{1, 1, 33, 64}, {1, 1, 33, 64}, 1}, MaskKind::Shared},
      {{{1, 128, 384}, {1, 128, 384}, 12}, MaskKind::Keys},
      {{{2, 37, 64}, {2, 37, 64}, 2}, MaskKind::Causal},
  };
  for (const auto& c : float_cases) add_attention_case(registry, "", c.shape, c.mask, soft, true);
  add_attention_case(registry, "perf/", {{1, 128, 384}, {1, 128, 384}, 12}, MaskKind::Keys, soft,
                     true);
}

}  // namespace vkd::custom_ops

// The interpreter side of the torch oracle test (torch_oracle.py writes DIR/manifest.txt and the
// tensors): every case is one node run by compiler::interpret on torch's inputs (several
// `output` lines: a node with that many outputs, compared in order), and each output element
// must satisfy |got - want| <= 1e-5 * max(|want|, 1) (relative, with values below 1
// compared absolutely, since sums of products of numbers in [-1, 1) can land near zero, where a
// different but equally correct summation order gives a large relative difference). A case with
// a `tol ABS` line (an op whose reference is stated to differ from PyTorch by a bound:
// upsample_bilinear2d's fixed-point weights) must satisfy |got - want| <= ABS instead.
// Usage: vkd_interpreter_oracle_check DIR. Exit status 0 only when every case passes.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/Interpreter.h"
#include "core/Error.h"

namespace {

using vkd::compiler::Graph;
using vkd::compiler::HostTensor;

std::vector<int64_t> parse_ints(const std::string& s) {
  std::vector<int64_t> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(std::stoll(item));
  return out;
}

HostTensor read_tensor(const std::string& dir, const std::string& file,
                       const std::vector<int64_t>& shape, vkd::DType dtype = vkd::DType::Float32) {
  std::ifstream in(dir + "/" + file, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + dir + "/" + file);
  HostTensor t;
  t.dtype = dtype;
  t.shape = shape;
  t.bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (t.bytes.size() != static_cast<size_t>(t.numel()) * 4) {
    throw std::runtime_error(file + ": wrong byte count");
  }
  return t;
}

struct Case {
  std::string name;
  Graph graph;
  std::map<std::string, HostTensor> inputs;
  std::vector<HostTensor> expected;  // one per output: out, out1, out2, ... (the splits)
  double abs_tol = -1;               // < 0: the default relative rule
};

std::vector<Case> read_manifest(const std::string& dir) {
  std::ifstream in(dir + "/manifest.txt");
  if (!in) throw std::runtime_error("cannot open " + dir + "/manifest.txt");
  std::vector<Case> cases;
  Case cur;
  vkd::compiler::Node node;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string kind;
    ls >> kind;
    if (kind == "case") {
      cur = Case{};
      node = vkd::compiler::Node{};
      ls >> cur.name >> node.op;
      node.origin = cur.name + " (" + node.op + ")";
    } else if (kind == "input") {
      std::string name, shape, file, marker;
      ls >> name >> shape >> file >> marker;  // marker "int32": token ids
      if (name == "-") {
        node.inputs.push_back("");
        continue;
      }
      vkd::compiler::Value v;
      v.name = name;
      v.dtype = marker == "int32" ? vkd::DType::Int32 : vkd::DType::Float32;
      v.shape = parse_ints(shape);
      cur.graph.add_value(v);
      cur.graph.inputs.push_back(name);
      cur.inputs[name] = read_tensor(dir, file, v.shape, v.dtype);
      node.inputs.push_back(name);
    } else if (kind == "arg") {
      std::string name, type, value;
      ls >> name >> type >> value;
      if (type == "int") {
        node.args[name] = static_cast<int64_t>(std::stoll(value));
      } else if (type == "ints") {
        node.args[name] = parse_ints(value);
      } else if (type == "float") {
        node.args[name] = std::stod(value);
      } else if (type == "floats") {
        std::vector<double> list;
        std::stringstream items(value);
        std::string item;
        while (std::getline(items, item, ',')) list.push_back(std::stod(item));
        node.args[name] = list;
      } else if (type == "bool") {
        node.args[name] = value == "1";
      } else if (type == "str") {
        node.args[name] = value;
      } else if (type == "none") {
        node.args[name] = vkd::compiler::NoneArg{};
      } else {
        throw std::runtime_error("unknown arg type '" + type + "'");
      }
    } else if (kind == "output") {
      std::string shape, file;
      ls >> shape >> file;
      vkd::compiler::Value v;
      const size_t k = cur.expected.size();
      v.name = k == 0 ? "out" : "out" + std::to_string(k);
      v.dtype = vkd::DType::Float32;
      v.shape = parse_ints(shape);
      cur.graph.add_value(v);
      cur.graph.outputs.push_back(v.name);
      node.outputs.push_back(v.name);
      cur.expected.push_back(read_tensor(dir, file, v.shape));
    } else if (kind == "tol") {
      ls >> cur.abs_tol;
    } else if (kind == "end") {
      cur.graph.nodes.push_back(node);
      cases.push_back(std::move(cur));
    } else if (!kind.empty()) {
      throw std::runtime_error("bad manifest line: " + line);
    }
  }
  return cases;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR (written by torch_oracle.py)\n", argv[0]);
    return 2;
  }
  std::vector<Case> cases;
  try {
    cases = read_manifest(argv[1]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "torch oracle: %s\n", e.what());
    return 2;
  }
  if (cases.empty()) {
    std::fprintf(stderr, "torch oracle: no cases in the manifest\n");
    return 2;
  }
  int passed = 0, failed = 0;
  for (const Case& c : cases) {
    try {
      const auto values = vkd::compiler::interpret(c.graph, c.inputs);
      std::vector<float> got, want;  // every output's values, in output order
      for (size_t k = 0; k < c.expected.size(); ++k) {
        const std::vector<float> g = values.at(c.graph.outputs[k]).to_floats();
        const std::vector<float> e = c.expected[k].to_floats();
        got.insert(got.end(), g.begin(), g.end());
        want.insert(want.end(), e.begin(), e.end());
      }
      double worst = 0.0;
      size_t worst_at = 0, bad = 0;
      for (size_t i = 0; i < want.size(); ++i) {
        const double diff = std::fabs(static_cast<double>(got[i]) - want[i]);
        const double err =
            c.abs_tol >= 0 ? diff : diff / std::max(1.0, std::fabs(static_cast<double>(want[i])));
        if (!(err <= (c.abs_tol >= 0 ? c.abs_tol : 1e-5))) ++bad;
        if (!(err <= worst)) {
          worst = err;
          worst_at = i;
        }
      }
      if (bad == 0) {
        ++passed;
        if (c.abs_tol >= 0) {
          std::printf("PASS %-28s %zu values, max abs err %.3g (bound %.3g)\n", c.name.c_str(),
                      want.size(), worst, c.abs_tol);
        } else {
          std::printf("PASS %-28s %zu values, max rel err %.3g\n", c.name.c_str(), want.size(),
                      worst);
        }
      } else {
        ++failed;
        std::printf("FAIL %-28s %zu of %zu values off; worst at %zu: got %.9g, torch %.9g\n",
                    c.name.c_str(), bad, want.size(), worst_at, got[worst_at], want[worst_at]);
      }
    } catch (const std::exception& e) {
      ++failed;
      std::printf("FAIL %-28s %s\n", c.name.c_str(), e.what());
    }
  }
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}

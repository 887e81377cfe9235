"""vkdelegate.per_layer: the per-layer comparison with PyTorch's reference-quantized model.

The "device" tensors here are PyTorch's own reference tensors, changed on purpose: the
comparison must find nothing in the untouched ones, blame a changed element on the layer that
holds it only (the next layer is fed the changed tensor, so it agrees), and tell a 1-LSB change
at a rounding tie from one elsewhere. The tensors are keyed by their graph IR names, as `vkd
run --intermediates` writes them (`conv2d_q`), found through the names the export's walk
records on the reference graph.
"""
import unittest

import numpy as np
import torch
from torch import nn

from vkdelegate import per_layer
from vkdelegate.export import quantize, to_graph_ir
from vkdelegate.export.walk import ir_value_names

QUANTIZE = torch.ops.quantized_decomposed.quantize_per_tensor.default


def reference_model():
    """A conv -> relu -> conv model as PyTorch's reference-quantized graph (convert_pt2e), an
    input, and the graph IR name of each quantize node (to_graph_ir records them): the names
    `vkd run --intermediates` writes the device's tensors under."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(),
                          nn.Conv2d(8, 4, 1)).eval()
    x = torch.randn(1, 3, 8, 8)
    calibration = [torch.randn(1, 3, 8, 8) for _ in range(4)]
    reference = quantize(model, (x,), calibration, observer="minmax").converted
    to_graph_ir(reference, (x,), "m")
    names = ir_value_names(reference)
    return reference, x, {n.name: names[n.name] for n in reference.graph.nodes
                          if n.target == QUANTIZE}


def own_tensors(reference, x, ir_names, override=None):
    """Every quantize output of the reference graph as an int8 array under its graph IR name,
    with the value each one rounded (in LSB). `override`: {IR name: int8 array} used instead of
    the graph's own result for that quantize (a device tensor's later layers)."""
    tensors, rounded = {}, {}
    override = override or {}

    class Record(torch.fx.Interpreter):
        def run_node(self, n):
            out = super().run_node(n)
            if n.target == QUANTIZE:
                name = ir_names[n.name]
                if name in override:
                    out = torch.from_numpy(override[name].astype(np.int8))
                tensors[name] = out.numpy().astype(np.int32)
                scale, zero_point = n.args[1], n.args[2]
                rounded[name] = self.env[n.args[0]].double().numpy() / scale + zero_point
            return out

    with torch.no_grad():
        Record(reference).run(x)
    return tensors, rounded


class PerLayerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.reference, cls.x, cls.ir_names = reference_model()
        cls.tensors, cls.rounded = own_tensors(cls.reference, cls.x, cls.ir_names)
        cls.names = list(cls.tensors)  # graph order: input, conv+relu, conv
        cls.node_of = {v: k for k, v in cls.ir_names.items()}  # what the report names

    def compare(self, tensors):
        device = {k: v.astype(np.int8) for k, v in tensors.items()}
        return per_layer.compare(self.reference, (self.x,), device)

    def test_identical_tensors_agree(self):
        report = self.compare(self.tensors)
        self.assertEqual(len(report.layers), len(self.names))
        self.assertEqual(report.ties, 0)
        self.assertIsNone(report.first_real)

    def test_a_changed_element_is_blamed_on_its_layer_only(self):
        name = self.names[1]
        changed = {k: v.copy() for k, v in self.tensors.items()}
        flat = changed[name].reshape(-1)
        i = int(np.argmax(np.abs(flat) < 100))
        flat[i] += 2
        # What the layers after it compute from the changed tensor (a device that went wrong
        # at this layer only).
        later, _ = own_tensors(self.reference, self.x, self.ir_names, {name: changed[name]})
        changed[self.names[2]] = later[self.names[2]]
        self.assertFalse(np.array_equal(later[self.names[2]], self.tensors[self.names[2]]))
        report = self.compare(changed)
        by_name = {r.name: r for r in report.layers}
        self.assertEqual(by_name[self.node_of[name]].real, 1)
        self.assertEqual(by_name[self.node_of[name]].max_abs_diff, 2)
        self.assertEqual(report.first_real.name, self.node_of[name])
        # The next layer is judged on the changed tensor it was fed, so it agrees.
        self.assertEqual(by_name[self.node_of[self.names[2]]].real, 0)

    def test_one_off_counts_as_tie_only_at_a_tie(self):
        name = self.names[2]
        distance = np.abs(np.abs(self.rounded[name] - np.floor(self.rounded[name])) - 0.5)
        far = int(np.argmax(distance.reshape(-1)))  # the value farthest from a tie
        self.assertGreater(distance.reshape(-1)[far], 0.1)
        changed = {k: v.copy() for k, v in self.tensors.items()}
        flat = changed[name].reshape(-1)
        flat[far] += -1 if flat[far] > -128 else 1
        report = self.compare(changed)
        self.assertEqual(report.first_real.name, self.node_of[name])
        self.assertEqual(report.ties, 0)
        # The same change accepted as a tie when the tolerance covers any distance.
        loose = per_layer.compare(self.reference, (self.x,),
                                  {k: v.astype(np.int8) for k, v in changed.items()}, tol=0.5)
        self.assertEqual(loose.ties, 1)
        self.assertIsNone(loose.first_real)


if __name__ == "__main__":
    unittest.main()
